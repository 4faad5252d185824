"""Naming the first pass whose output changed, from two variants' pass fingerprints, and
saying it in a drift: the rules, on pipelines written by hand. The same report on real
lowerings (an edit and a pass configuration whose first changed pass is known, and the
pipelines of two TileLang releases) is in ``test_pass_fingerprints``."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from sphinx_tlstages.core.records import drift
from sphinx_tlstages.core.records.first_pass import first_change
from sphinx_tlstages.core.results.fact_table import BY_NAME, COMPARED, KEPT, PROVENANCE
from sphinx_tlstages.core.results.fingerprints import Fingerprints, from_hash, from_text, parse

SNAPSHOTS = Path(__file__).resolve().parent.parent / "book" / "_tlstages" / "snapshots"


def pipeline(*steps: tuple[str, str]) -> list[str]:
    """Fingerprint lines as the worker writes them: (pass name, fingerprint) per run."""
    prints = Fingerprints()
    prints.start("000000000000")
    for name, fingerprint in steps:
        prints.after(name, fingerprint)
    return prints.lines


A, B, C, D = "aaaaaaaaaaaa", "bbbbbbbbbbbb", "cccccccccccc", "dddddddddddd"
Z = "000000000000"
RECORDED = pipeline(("tl.Simplify", A), ("tl.PipelinePlanning", B), ("tl.Simplify", B),
                    ("tl.InjectSoftwarePipeline", C), ("tl.LowerTileOp", D))


def test_lines_number_each_run_and_parse_back() -> None:
    assert RECORDED[0] == f"(input) {Z}"
    assert RECORDED[3] == f"tl.Simplify#2 {B}"
    assert parse(RECORDED) == [("(input)", 0, Z), ("tl.Simplify", 1, A),
                               ("tl.PipelinePlanning", 1, B), ("tl.Simplify", 2, B),
                               ("tl.InjectSoftwarePipeline", 1, C), ("tl.LowerTileOp", 1, D)]
    assert parse([]) is None and parse(None) is None and parse(["no fingerprint"]) is None
    assert from_hash(-1) == "ffffffffffff" and from_hash(5) == "000000000005"


def test_the_same_pipeline_names_no_pass() -> None:
    found = first_change(RECORDED, list(RECORDED))
    assert found is not None and found.changed is None
    assert found.words() == "every pass's output still matches the recorded one"


def test_the_first_differing_run_and_the_one_before_it_are_named() -> None:
    new = pipeline(("tl.Simplify", A), ("tl.PipelinePlanning", B), ("tl.Simplify", B),
                   ("tl.InjectSoftwarePipeline", "eeeeeeeeeeee"), ("tl.LowerTileOp", D))
    found = first_change(RECORDED, new)
    assert found is not None
    assert (found.changed, found.matched, found.side) == (
        "tl.InjectSoftwarePipeline#1", "tl.Simplify#2", "both")
    assert found.words() == ("first changed by tl.InjectSoftwarePipeline#1, after "
                             "tl.Simplify#2, which still matched")


def test_a_changed_input_is_said_as_the_kernel() -> None:
    new = [f"(input) {A}", *RECORDED[1:]]
    found = first_change(RECORDED, new)
    assert found is not None and found.changed == "(input)" and found.matched is None
    assert "before the first pass" in found.words()


def test_an_added_pass_that_changed_the_ir_is_the_culprit() -> None:
    new = pipeline(("tl.Simplify", A), ("tl.AutoWarpSpecialization", "eeeeeeeeeeee"),
                   ("tl.PipelinePlanning", B), ("tl.Simplify", B),
                   ("tl.InjectSoftwarePipeline", C), ("tl.LowerTileOp", D))
    found = first_change(RECORDED, new)
    assert found is not None
    assert (found.changed, found.matched, found.side) == (
        "tl.AutoWarpSpecialization#1", "tl.Simplify#1", "new")
    assert found.added == ("tl.AutoWarpSpecialization",) and found.removed == ()
    assert found.words().endswith(
        "(a pass the recorded pipeline did not run), after tl.Simplify#1, which still "
        "matched; the pass list changed: added tl.AutoWarpSpecialization")


def test_an_added_run_that_changed_nothing_does_not_shift_the_comparison() -> None:
    # A release adds a Simplify run early: every later Simplify#k is renumbered, and the
    # runs still line up by name and place, not by number.
    new = pipeline(("tl.Simplify", A), ("tl.Simplify", A), ("tl.PipelinePlanning", B),
                   ("tl.Simplify", B), ("tl.InjectSoftwarePipeline", C),
                   ("tl.LowerTileOp", "eeeeeeeeeeee"))
    found = first_change(RECORDED, new)
    assert found is not None
    assert (found.changed, found.matched) == ("tl.LowerTileOp#1", "tl.InjectSoftwarePipeline#1")
    assert found.added == found.removed == ()


def test_a_removed_pass_that_had_changed_the_ir_is_named_as_the_recorded_pipelines() -> None:
    new = pipeline(("tl.Simplify", A), ("tl.Simplify", A), ("tl.InjectSoftwarePipeline", C),
                   ("tl.LowerTileOp", D))
    found = first_change(RECORDED, new)
    assert found is not None
    assert (found.changed, found.side) == ("tl.PipelinePlanning#1", "recorded")
    assert found.removed == ("tl.PipelinePlanning",)
    assert "the recorded pipeline ran and this one does not" in found.words()
    assert "removed tl.PipelinePlanning" in found.words()


def test_a_renamed_pass_is_said_as_added_and_removed() -> None:
    new = pipeline(("tl.Simplify", A), ("tl.PlanPipeline", B), ("tl.Simplify", B),
                   ("tl.InjectSoftwarePipeline", C), ("tl.LowerTileOp", D))
    found = first_change(RECORDED, new)
    # It did the same work under its new name: not where the IR parts ways.
    assert found is not None and found.changed is None
    assert (found.added, found.removed) == (("tl.PlanPipeline",), ("tl.PipelinePlanning",))
    assert found.words() == ("every pass's output still matches the recorded one; the pass "
                             "list changed: added tl.PlanPipeline; removed tl.PipelinePlanning")
    # Where it does other work, it is the culprit.
    new[2] = "tl.PlanPipeline#1 eeeeeeeeeeee"
    found = first_change(RECORDED, new)
    assert found is not None and (found.changed, found.side) == ("tl.PlanPipeline#1", "new")


def test_no_fingerprints_on_either_side_is_no_answer() -> None:
    assert first_change(None, RECORDED) is None and first_change(RECORDED, []) is None


def test_the_fact_is_kept_as_provenance_never_compared() -> None:
    fact = BY_NAME["pass_fingerprints"]
    assert "pass_fingerprints" in KEPT and "pass_fingerprints" not in COMPARED
    assert {"pass_fingerprints"} == PROVENANCE and fact.since == 7


def _with_prints(snapshot: dict[str, Any], lines: list[str]) -> dict[str, Any]:
    snapshot = copy.deepcopy(snapshot)
    for variant in snapshot["variants"].values():
        variant["pass_fingerprints"] = list(lines)
    return snapshot


def test_a_drift_names_the_pass_and_a_changed_fingerprint_alone_is_no_drift() -> None:
    old = json.loads((SNAPSHOTS / "gemm-sm80.json").read_text("utf-8"))
    old = _with_prints(old, RECORDED)
    moved = pipeline(("tl.Simplify", A), ("tl.PipelinePlanning", "eeeeeeeeeeee"),
                     ("tl.Simplify", B), ("tl.InjectSoftwarePipeline", C), ("tl.LowerTileOp", D))
    # Fingerprints alone: provenance, nothing to report.
    assert drift.drift_findings(old, _with_prints(old, moved)) == []
    new = _with_prints(old, moved)
    new["variants"]["2"]["threads"] = 256
    found = drift.drift_findings(old, new)
    assert [(f.kind, f.variant) for f in found] == [("changed", "num_stages=2"),
                                                   ("cause", "num_stages=2")]
    assert found[1].words == ("first changed by tl.PipelinePlanning#1, after tl.Simplify#1, "
                              "which still matched")
    # A snapshot recorded before fingerprints: said, not guessed.
    del old["variants"]["2"]["pass_fingerprints"]
    said = drift.drift_findings(old, new)[1].words
    assert said.startswith("which pass changed it is not known: the snapshot has no pass")


def test_text_fingerprints_mask_machine_paths_and_addresses() -> None:
    one = 'T.attr("/home/a/venv/lib/python3.11/site-packages/tilelang/x.py") 0x7f12ab34cd'
    two = 'T.attr("/opt/env/lib/python3.10/site-packages/tilelang/x.py") 0x55aa00bb11'
    assert from_text(one) == from_text(two) != from_text(one.replace("x.py", "y.py"))
