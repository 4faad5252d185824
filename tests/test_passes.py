"""Which compiler passes respond to num_stages, and ``:passes:`` IR diffs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sphinx_tlstages.core.claims import reads_passes
from sphinx_tlstages.core.results import pass_compare, passes
from sphinx_tlstages.ext.collector import project_directives
from sphinx_tlstages.ext.state import build_state

from .conftest import CONF, Built, build_once
from .kernels import GEMM, GEMM_PARAMS, rst

PAGE = "Passes\n======\n\n" + rst(
    GEMM, "Passes", num_stages="1 2 3", params=GEMM_PARAMS, name="passes",
    passes="InjectSoftwarePipeline PipelinePlanning#1",
    assert_='passes["tl.PipelinePlanning#1"] == 2',
) + "\n" + rst(GEMM, "Hopper", num_stages="2 3", target="sm_90a", params=GEMM_PARAMS,
               name="hopper", show="passes")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, shared_cache: Path) -> Built:
    return build_once(tmp_path_factory.mktemp("passes") / "src", {"index.rst": PAGE})


def test_builds_clean(built: Built) -> None:
    assert built.warnings == ""


def test_the_table_lists_responding_runs_in_pipeline_order(built: Built) -> None:
    rows = built.table("tl-passes")
    assert rows[0] == ["pass run", "position", "num_stages=1", "num_stages=2", "num_stages=3"]
    names = [r[0].split(" ")[0] for r in rows[1:]]
    # num_stages first shows in PipelinePlanning's annotations, then the loop is rewritten.
    assert names[:2] == ["tl.PipelinePlanning#1", "tl.InjectSoftwarePipeline#1"]
    assert rows[1][0] == "tl.PipelinePlanning#1 (the variants part here)"
    positions = [int(r[1]) for r in rows[1:] if r[1].isdigit()]
    assert positions == sorted(positions)
    # Every listed run changes at least two variants differently.
    for row in rows[1:]:
        assert len(set(row[2:])) > 1 or row[2:].count("no change") == 0
    # A pass that only re-indents the loop (num_stages annotation and all) is folded.
    assert "tl.MaterializeKernelLaunch#1" not in names


def test_the_note_names_where_the_variants_part(built: Built) -> None:
    note = built.part("tl-passes").iter(cls="tl-note")[0].astext()
    assert note.startswith("The variants part ways at tl.PipelinePlanning#1: its input IR is "
                           "the same in every variant")
    total, responding = note.split("Of ")[1].split(" pass runs, ")
    assert int(total) > 70 and int(responding.split(" ")[0]) == len(
        built.table("tl-passes")) - 1


def test_chosen_passes_get_before_after_diffs(built: Built) -> None:
    part = built.part("tl-passes")
    summaries = [s.astext() for s in part.iter("summary")]
    assert [s.split(" (")[0] for s in summaries] == \
        ["tl.PipelinePlanning#1"] * 3 + ["tl.InjectSoftwarePipeline#1"] * 3
    assert summaries[0].endswith("num_stages=1: IR +1 −1 lines")
    ns3 = part.iter("details")[5].astext()
    assert "+ A_shared = T.Buffer((3, 128, 64), \"float16\", scope=\"shared.dyn\")" in ns3
    ns1 = part.iter("details")[3].astext()
    assert "(3, 128, 64)" not in ns1


def test_hopper_parts_ways_at_warp_specialisation(built: Built) -> None:
    note = built.part("tl-passes", index=1).iter(cls="tl-note")[0].astext()
    assert note.startswith("The variants part ways at tl.ProducerConsumerWarpSpecialized#1")
    rows = built.table("tl-passes", index=1)
    assert rows[1][0] == "tl.ProducerConsumerWarpSpecialized#1 (the variants part here)"
    assert "tl.PipelinePlanning#1" not in [r[0].split(" ")[0] for r in rows]


def test_unknown_pass_names_are_warned_with_a_suggestion(build) -> None:
    page = "T\n=\n\n" + rst(GEMM, num_stages="2", params=GEMM_PARAMS, name="typo",
                            passes="InjectSoftwarePipelin Simplify#99")
    result = build({"index.rst": page})
    assert "typo: :passes: InjectSoftwarePipelin matches no pass run of any variant; did " \
           "you mean tl.InjectSoftwarePipeline?" in result.warnings
    assert ":passes: Simplify#99 matches no pass run" in result.warnings
    assert "[tlstages.option]" in result.warnings


def test_one_variant_has_no_table_but_keeps_its_diffs(build) -> None:
    page = "T\n=\n\n" + rst(GEMM, num_stages="2", params=GEMM_PARAMS, name="single",
                            passes="InjectSoftwarePipeline")
    result = build({"index.rst": page})
    part = result.part("tl-passes")
    assert part.iter("table") == []
    assert [s.astext().split(" (")[0] for s in part.iter("summary")] == \
        ["tl.InjectSoftwarePipeline#1"]


def _run(name: str, run: int, digest: str = "", changed: int = 0) -> passes.Record:
    return {"name": name, "run": run, "position": 0, "added": changed, "removed": 0,
            "digest": digest, "input": "i"}


def test_align_lines_up_runs_when_a_variant_runs_extra_passes() -> None:
    # As on sm_80 at num_stages=3: one more LetInline + Simplify pair early on. Counting by
    # name alone would compare the first variant's Simplify#2 with the other's Simplify#2
    # (the extra one); lined up by position it meets Simplify#3.
    first = [_run("A", 1, "a", 1), _run("Simplify", 1), _run("B", 1, "b", 1),
             _run("Simplify", 2, "s", 2)]
    second = [_run("A", 1, "a2", 1), _run("Simplify", 1), _run("LetInline", 1, "l", 1),
              _run("Simplify", 2, "x", 3), _run("B", 1, "b", 1), _run("Simplify", 3, "s", 2)]
    third = [_run("A", 1, "a3", 1), _run("Simplify", 1), _run("B", 1, "b", 1),
             _run("Fence", 1, "f", 1), _run("Simplify", 2, "s", 2)]
    rows = pass_compare.align([first, second, third])
    assert [(r.id, r.position) for r in rows] == [
        ("A#1", "1"), ("Simplify#1", "2"), ("LetInline#1", "3"), ("Simplify#2", "4"),
        ("B#1", "5"), ("Fence#1", "after 5"), ("Simplify#3", "6")]
    last = rows[-1]
    assert [c["run"] for c in last.changes if c] == [2, 3, 2]
    assert rows[2].changes[0] is None and rows[5].changes[:2] == (None, None)
    found, idle, alike = pass_compare.responding(rows)
    assert [r.id for r in found] == ["A#1", "LetInline#1", "Simplify#2", "Fence#1"]
    assert idle == 1 and alike == 2


def test_selectors() -> None:
    assert passes.matches("InjectSoftwarePipeline", "tl.InjectSoftwarePipeline", 1)
    assert passes.matches("tl.Simplify#3", "tl.Simplify", 3)
    assert not passes.matches("Simplify#3", "tl.Simplify", 2)
    assert not passes.matches("Simplify", "tl.SimplifyMore", 1)


def _entries(cache: Path) -> list[dict[str, Any]]:
    return [json.loads(path.read_text(encoding="utf-8")) for path in sorted(cache.rglob("*.json"))]


def _recorded(cache: Path) -> list[bool]:
    """Per cached result: whether it recorded what each pass run changed."""
    return sorted(all("added" in record for record in entry["passes"])
                  for entry in _entries(cache) if entry.get("passes"))


def _facts(entry: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in entry.items() if k not in ("passes", "pass_diffs", "seconds")}


def test_pass_changes_are_recorded_only_where_a_page_reads_them(build, own_cache: Path
                                                                ) -> None:
    # The default parts: the runs are named (for :passes: checks and snapshots), but no
    # IR is printed per run, and there is no passes part.
    page = "T\n=\n\n" + rst(GEMM, num_stages="2 3", params=GEMM_PARAMS, name="plain")
    plain = build({"index.rst": page})
    assert plain.warnings == ""
    assert "tl-passes" not in plain.html()
    assert _recorded(own_cache) == [False, False]
    # A claim about passes needs their counts, and gets them without the part: a true
    # claim holds (a missing count would fail it), a false one fails.
    claims = "T\n=\n\n" + rst(GEMM, num_stages="2 3", params=GEMM_PARAMS, name="claims",
                              assert_='passes["tl.PipelinePlanning#1"] == 2\n'
                                      '      passes["tl.PipelinePlanning#1"] == 3')
    claimed = build({"index.rst": claims})
    assert "tl-passes" not in claimed.html()
    assert "passes[\"tl.PipelinePlanning#1\"] == 2" not in claimed.warnings
    assert "assertion 'passes[\"tl.PipelinePlanning#1\"] == 3' is false" in claimed.warnings
    assert _recorded(own_cache) == [False, False, True, True]
    # Recording changes nothing else: the same facts, the same CUDA.
    by_mode: dict[bool, dict[int, dict[str, Any]]] = {True: {}, False: {}}
    for entry in _entries(own_cache):
        recorded = all("added" in record for record in entry["passes"])
        by_mode[recorded][entry["num_stages"]] = _facts(entry)
    assert by_mode[True] == by_mode[False]
    assert sorted(by_mode[True]) == [2, 3]
    # Showing the part needs the recording results: the claims' are the same kernels
    # recorded, so they are taken, not lowered again.
    shown = build({"index.rst": page.replace(":name: plain", ":name: plain\n   :show: passes")})
    assert shown.table("tl-passes")
    assert "lowered in" not in shown.status
    assert _recorded(own_cache) == [False, False, True, True]


def test_a_variant_that_records_nothing_takes_its_recording_twin(build, own_cache: Path,
                                                                 tmp_path: Path) -> None:
    # The same kernel twice on one page, once with the passes part: lowered once each
    # num_stages, recording, and both directives render from those results.
    bare = rst(GEMM, num_stages="2 3", params=GEMM_PARAMS, name="bare")
    full = rst(GEMM, num_stages="2 3", params=GEMM_PARAMS, name="full", show="passes sync")
    both = build({"index.rst": "T\n=\n\n" + bare + "\n" + full})
    assert both.warnings == ""
    assert both.status.count("lowered in") == 2
    assert both.table("tl-passes") and both.table("tl-sync", index=1)
    # Each bare variant gets an entry of its own (a copy of its twin's: a warm rebuild
    # finds every key on disk and starts no worker), and counts as lowered in this build.
    state = build_state(both.app)
    assert state is not None
    assert _recorded(own_cache) == [True] * 4
    copies = []
    for plain, twin in zip(*(spec.variants for spec in project_directives(both.app.env)),
                           strict=True):
        assert not plain.record_passes and twin.record_passes
        copies.append(state.cache.path(plain.key(state.stamp)))
        assert copies[-1].is_file()
        assert state.cache.digests[plain.key(state.stamp)] == \
            state.cache.digests[twin.key(state.stamp)]
        assert plain.key(state.stamp) in state.lowered
    # Without its own entry, a bare variant takes its twin's from the cache (and keeps a
    # copy again), here in a project of its own.
    for copy in copies:
        copy.unlink()
    alone = build({"index.rst": "T\n=\n\n" + bare}, srcdir=tmp_path / "alone")
    assert alone.warnings == ""
    assert "lowered in" not in alone.status
    assert alone.status.count("]: cached") == 2
    assert all(copy.is_file() for copy in copies)


def test_tlstages_show_with_passes_records_them(build, own_cache: Path) -> None:
    conf = CONF + 'tlstages_show = "sync passes"\n'
    page = "T\n=\n\n" + rst(GEMM, num_stages="2 3", params=GEMM_PARAMS, name="configured")
    built = build({"index.rst": page}, conf=conf)
    assert built.warnings == ""
    assert built.table("tl-passes")
    assert _recorded(own_cache) == [True, True]


def test_only_expressions_naming_passes_need_their_records() -> None:
    assert reads_passes('passes["tl.Simplify#3"] > 0')
    assert reads_passes("sum(passes.values()) > 10")
    assert not reads_passes('shared["passes"].shape[0] == num_stages')
    assert not reads_passes("num_stages > 1 or 'passes' in target")
