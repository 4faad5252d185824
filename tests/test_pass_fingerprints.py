"""Pass fingerprints on real lowerings: a drift names the first pass whose output changed.

The first changed pass is known here without trusting the report: the kernel's own
``tl.disable_warp_specialized`` config makes TileLang's CUDA pipeline skip its warp
specialisation passes on sm_90a (``tilelang/cuda/pipeline.py``: ``allow_warp_specialized``
guards ``AutoWarpSpecialization`` and ``ProducerConsumerWarpSpecialized``), and a changed
tile size changes the IR as traced, before any pass."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from sphinx_tlstages import cli
from sphinx_tlstages.core.records.first_pass import first_change
from sphinx_tlstages.core.results.fingerprints import parse

from .kernels import GEMM, GEMM_PARAMS, rst

SNAPSHOT = Path("_tlstages/snapshots/fp-chapter.json")
NO_WS = GEMM.replace("@tilelang.jit\n",
                     '@tilelang.jit(pass_configs={"tl.disable_warp_specialized": True})\n')


def chapter(kernel: str = GEMM, block_k: int = 64, **options: str) -> str:
    params = GEMM_PARAMS.replace("block_K=64", f"block_K={block_k}")
    return "Chapter\n=======\n\n" + rst(kernel, num_stages="2 3", target="sm_90a",
                                         params=params, name="fp-chapter", **options)


def test_every_run_is_fingerprinted_and_a_changed_print_alone_is_no_drift(build,
                                                                           tmp_path) -> None:
    src = tmp_path / "src"
    first = build({"index.rst": chapter()}, srcdir=src)
    assert first.app.statuscode == 0 and first.warnings == ""
    recorded = json.loads((src / SNAPSHOT).read_text())
    lines = recorded["variants"]["3"]["pass_fingerprints"]
    runs = parse(lines)
    assert runs is not None and runs[0][0] == "(input)" and len(runs) > 70
    names = [name for name, _, _ in runs]
    assert "tl.ProducerConsumerWarpSpecialized" in names and "tl.LowerTileOp" in names
    # Small: one short line per run.
    assert max(len(line) for line in lines) < 60
    # A fingerprint that moved while every shown fact stayed is provenance, not drift.
    lines[len(lines) // 2] = lines[len(lines) // 2].rsplit(" ", 1)[0] + " 0123456789ab"
    (src / SNAPSHOT).write_text(json.dumps(recorded, indent=1, sort_keys=True) + "\n")
    again = build({"index.rst": chapter()}, srcdir=src)
    assert again.app.statuscode == 0 and again.warnings == ""


def test_a_pass_config_drift_names_the_warp_specialisation_pass(build, tmp_path) -> None:
    src = tmp_path / "src"
    assert build({"index.rst": chapter()}, srcdir=src).app.statuscode == 0
    drifted = build({"index.rst": chapter(NO_WS)}, srcdir=src)
    assert drifted.app.statuscode == 1
    assert "threads 256 -> 128" in drifted.warnings
    assert ("    why: first changed by tl.ProducerConsumerWarpSpecialized#1 (a pass the "
            "recorded pipeline ran and this one does not), after ") in drifted.warnings
    assert "the pass list changed: removed " in drifted.warnings
    old = json.loads((src / SNAPSHOT).read_text())["variants"]["3"]["pass_fingerprints"]
    new = json.loads((src / "_tlstages/snapshots/fp-chapter.pending.json").read_text())
    found = first_change(old, new["variants"]["3"]["pass_fingerprints"])
    assert found is not None and found.changed == "tl.ProducerConsumerWarpSpecialized#1"
    assert "tl.ProducerConsumerWarpSpecialized" in found.removed
    # The report says the same, in Markdown and JSON, and so does tlstages report.
    report = json.loads(next(Path(drifted.app.doctreedir).parent.rglob(
        "tlstages-report.json")).read_text())
    causes = [f for d in report["directives"] for f in d["findings"] if f["kind"] == "cause"]
    assert {f["variant"] for f in causes} == {"num_stages=2", "num_stages=3"}
    assert all(f["words"].startswith("first changed by tl.ProducerConsumerWarpSpecialized#1")
               for f in causes)
    markdown = next(Path(drifted.app.doctreedir).parent.rglob("tlstages-report.gfm"))
    assert "Why: the first pass whose output changed" in markdown.read_text()


def test_report_pass_prints_the_passs_ir_diff_and_the_recorded_side_from_the_cache(
        build, tmp_path, capsys) -> None:
    # Shown with :passes:, the recorded lowering kept the pass's IR diff in the cache.
    src = tmp_path / "src"
    shown = {"show": "passes", "passes": "ProducerConsumerWarpSpecialized"}
    assert build({"index.rst": chapter(**shown)}, srcdir=src).app.statuscode == 0
    drifted = build({"index.rst": chapter(NO_WS, **shown)}, srcdir=src)
    assert drifted.app.statuscode == 1
    capsys.readouterr()
    assert cli.main(["report", str(Path(drifted.app.outdir).parent), "--format", "text",
                     "--pass", str(src)]) == 0
    said = capsys.readouterr().out
    assert "## fp-chapter, num_stages=3: tl.ProducerConsumerWarpSpecialized#1" in said
    recorded = said.split("## fp-chapter, num_stages=3")[1].split("This build's side:")
    assert "--- IR before tl.ProducerConsumerWarpSpecialized#1" in recorded[0]
    assert "+++ IR after tl.ProducerConsumerWarpSpecialized#1" in recorded[0]
    assert "does not change the IR here (or no longer runs)" in recorded[1]


def test_an_edited_kernel_differs_before_the_first_pass(build, tmp_path, capsys) -> None:
    src = tmp_path / "src"
    assert build({"index.rst": chapter()}, srcdir=src).app.statuscode == 0
    drifted = build({"index.rst": chapter(block_k=32)}, srcdir=src)
    assert drifted.app.statuscode == 1
    assert ("    why: the IR differs before the first pass (the kernel as traced: its source, "
            "parameters or TileLang's front end)") in drifted.warnings
    capsys.readouterr()
    assert cli.main(["snapshots", "diff", str(src), "--format", "text"]) == 1
    said = capsys.readouterr().out
    assert "Why: the first pass whose output changed:" in said
    assert "num_stages=3: the IR differs before the first pass" in said


def _cached(cache: Path) -> list[dict[str, object]]:
    return [json.loads(path.read_text()) for path in sorted(cache.glob("??/*.json"))]


def test_fingerprints_are_taken_only_where_a_snapshot_may_be_written(build, tmp_path,
                                                                     own_cache) -> None:
    # Recorded: every variant's fingerprints, in the snapshot and in the cache.
    src = tmp_path / "src"
    assert build({"index.rst": chapter()}, srcdir=src).app.statuscode == 0
    assert all("pass_fingerprints" in entry for entry in _cached(own_cache))
    recorded = (src / SNAPSHOT).read_text()
    # Checked against that snapshot, as CI does (a fresh cache and environment): nothing
    # is written from the results, so none is taken, and the snapshot stays as it was.
    checking = {"tlstages_snapshots": "check"}
    shutil.rmtree(own_cache)
    checked = build({"index.rst": chapter()}, srcdir=src, freshenv=True,
                    confoverrides=checking)
    assert checked.app.statuscode == 0 and checked.warnings == ""
    entries = _cached(own_cache)
    assert len(entries) == 2 and not any("pass_fingerprints" in e for e in entries)
    assert (src / SNAPSHOT).read_text() == recorded
    # A drift is explained all the same: its variants are lowered again, taking them.
    drifted = build({"index.rst": chapter(NO_WS)}, srcdir=src, confoverrides=checking)
    assert drifted.app.statuscode == 1
    assert "fp-chapter: 2 variants lowered again for the pass fingerprints" in drifted.status
    assert "    why: first changed by tl.ProducerConsumerWarpSpecialized#1" in drifted.warnings
    pending = json.loads((src / "_tlstages/snapshots/fp-chapter.pending.json").read_text())
    assert all(parse(v["pass_fingerprints"]) for v in pending["variants"].values())
    # Where the docs are written (auto, not CI), a drift needs no second lowering.
    (src / "_tlstages/snapshots/fp-chapter.pending.json").unlink()
    authored = build({"index.rst": chapter(NO_WS, block_k=32)}, srcdir=src)
    assert authored.app.statuscode == 1 and "lowered again" not in authored.status
    assert "    why: " in authored.warnings
    # Snapshots off: none is taken.
    shutil.rmtree(own_cache)
    off = build({"index.rst": chapter()}, srcdir=tmp_path / "off",
                confoverrides={"tlstages_snapshots": "off"})
    assert off.app.statuscode == 0
    assert _cached(own_cache) and not any("pass_fingerprints" in e for e in _cached(own_cache))
