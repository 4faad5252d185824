"""The upgrade rehearsal's report (:mod:`sphinx_tlstages.core.records.upgrade`), on the
book's committed snapshots: what would change, why, what would fail, what is unchanged."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from sphinx_tlstages.core.records.upgrade import Rehearsed, Upgrade, rehearse

SNAPSHOTS = Path(__file__).resolve().parent.parent / "book" / "_tlstages" / "snapshots"
PRINTS = ["(input) 000000000000", "tl.Simplify#1 aaaaaaaaaaaa",
          "tl.PipelinePlanning#1 bbbbbbbbbbbb", "tl.LowerTileOp#1 cccccccccccc"]


def _snapshot() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((SNAPSHOTS / "gemm-sm80.json").read_text("utf-8"))
    for variant in data["variants"].values():
        variant["pass_fingerprints"] = list(PRINTS)
    return data


def test_unchanged_changed_and_failing_directives() -> None:
    now = _snapshot()
    report = Upgrade("0.1.15", "0.1.16")
    same = Rehearsed("same", "index.rst", 3)
    rehearse(same, now, copy.deepcopy(now), {})
    moved = Rehearsed("moved", "index.rst", 20)
    then = copy.deepcopy(now)
    then["variants"]["2"]["threads"] = 256
    then["variants"]["2"]["pass_fingerprints"][2] = "tl.PipelinePlanning#1 dddddddddddd"
    rehearse(moved, now, then, {})
    broken = Rehearsed("broken", "other.md", 7)
    rehearse(broken, now, copy.deepcopy(now), {"3": "TileLang's pass tl.LowerTileOp#1 failed"})
    report.directives = [same, moved, broken]
    assert [d.status for d in report.directives] == ["unchanged", "changed", "fails"]
    assert [(f.kind, f.variant, f.words) for f in moved.findings] == [
        ("changed", "num_stages=2", "threads 128 -> 256"),
        ("cause", "num_stages=2", "first changed by tl.PipelinePlanning#1, after "
                                  "tl.Simplify#1, which still matched")]
    assert broken.findings[0].words == "TileLang's pass tl.LowerTileOp#1 failed"
    assert report.changes()
    assert report.verdict() == ("TileLang 0.1.15 -> 0.1.16: 1 of 3 directives unchanged, "
                                "1 would change, 1 would fail to lower.")
    markdown = report.markdown()
    assert "**Would no longer lower**" in markdown and "**Unchanged** (every shown fact " \
        "the same): `same`" in markdown
    assert json.loads(report.as_json())["directives"][1]["findings"][1]["kind"] == "cause"


def test_nothing_would_change() -> None:
    now = _snapshot()
    report = Upgrade("0.1.15", "0.1.15")
    entry = Rehearsed("same", "index.rst", 3)
    rehearse(entry, now, copy.deepcopy(now), {})
    report.directives = [entry]
    assert not report.changes() and report.verdict().endswith("1 of 1 directives unchanged.")
    unverified = Rehearsed("gone", "index.rst", 9)
    rehearse(unverified, now, None, {})
    assert unverified.status == "unverified"


def test_the_rehearsal_environment_pins_this_environments_torch(monkeypatch) -> None:
    """The other environment gets the torch release this one has (a CPU build's ``+cpu``
    left out), so pip never resolves an unpinned torch to a CUDA build of several GB."""
    import importlib.metadata

    from sphinx_tlstages.cli import upgrade

    def version(name: str) -> str:
        assert name == "torch"
        return "2.13.0+cpu"

    monkeypatch.setattr(importlib.metadata, "version", version)
    assert upgrade._torch_requirement() == "torch==2.13.0"

    def missing(name: str) -> str:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", missing)
    assert upgrade._torch_requirement() == "torch"
