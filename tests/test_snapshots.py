"""Golden snapshots: a chapter that drifts fails the build, loudly and readably."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from sphinx_tlstages import cli
from sphinx_tlstages.core.plan import toolkit
from sphinx_tlstages.core.results.stamps import tilelang_version

from .conftest import CONF, write_project
from .kernels import GEMM, GEMM_PARAMS, rst

SNAPSHOTS = Path("_tlstages/snapshots")


def chapter(block_k: int = 64, prose: str = "", stages: str = "2 3") -> str:
    params = GEMM_PARAMS.replace("block_K=64", f"block_K={block_k}")
    return ("Chapter\n=======\n\n" + prose + rst(GEMM, num_stages=stages, params=params,
                                                  name="gemm-chapter"))


def golden(src: Path) -> Path:
    return src / SNAPSHOTS / "gemm-chapter.json"


def test_record_then_pass_then_drift_then_accept(build, tmp_path) -> None:
    src = tmp_path / "src"
    first = build({"index.rst": chapter()}, srcdir=src)
    assert first.app.statuscode == 0 and first.warnings == ""
    recorded = json.loads(golden(src).read_text())
    assert recorded["tilelang"] == tilelang_version() and recorded["target"] == {"kind": "cuda",
                                                                         "arch": "sm_80"}
    ns3 = recorded["variants"]["3"]
    assert ns3["shared"][0]["shape"] == [3, 128, 64]
    assert ns3["sync"]["cp_async_wait"] == [2, 1, 0]
    assert isinstance(ns3["cuda"], list) and any("cp_async_gs" in line for line in ns3["cuda"])
    assert "seconds" not in ns3

    again = build({"index.rst": chapter()}, srcdir=src)
    assert again.app.statuscode == 0 and again.warnings == ""

    drifted = build({"index.rst": chapter(block_k=32)}, srcdir=src)
    assert drifted.app.statuscode == 1
    line = chapter().splitlines().index(".. tl-pipeline::") + 1
    assert f"index.rst:{line}: ERROR: gemm-chapter: the lowering no longer matches" \
        in drifted.warnings
    assert "params block_K=64 -> block_K=32" in drifted.warnings
    assert "num_stages=3: A_shared (3, 128, 64) -> (3, 128, 32) float16; B_shared" \
        in drifted.warnings
    assert "shared memory 98,304 -> 49,152 B" in drifted.warnings
    assert "CUDA +" in drifted.warnings
    assert f"accept it with: tlstages snapshots accept {src}" in drifted.warnings
    assert "1 check(s) failed: 1 snapshot check" in drifted.warnings
    pending = src / SNAPSHOTS / "gemm-chapter.pending.json"
    assert json.loads(pending.read_text())["variants"]["3"]["shared"][0]["shape"] == [3, 128, 32]
    assert json.loads(golden(src).read_text()) == recorded  # the golden is untouched
    # The same drift again leaves the files alone: a live-preview server watching the
    # source tree would take each rewrite for an edit and rebuild for ever.
    before = {p.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in pending.parent.iterdir()}
    assert build({"index.rst": chapter(block_k=32)}, srcdir=src).app.statuscode == 1
    assert {p.name: (p.stat().st_ino, p.stat().st_mtime_ns)
            for p in pending.parent.iterdir()} == before

    assert cli.main(["snapshots", "status", str(src)]) == 1
    assert cli.main(["snapshots", "accept", str(src)]) == 0
    assert not pending.exists()
    accepted = build({"index.rst": chapter(block_k=32)}, srcdir=src)
    assert accepted.app.statuscode == 0 and accepted.warnings == ""
    assert cli.main(["snapshots", "status", str(src)]) == 0


def _as_if_recorded_elsewhere(path: Path) -> None:
    """Rewrite a snapshot as another TileLang release would have left it with nothing a
    reader sees changed: another version, another result schema, moved ``#line`` numbers
    into TileLang's own files, and a counter that release did not record yet."""
    data = json.loads(path.read_text())
    data["tilelang"], data["schema"] = "0.1.0", 1
    for variant in data["variants"].values():
        variant["cuda"] = [re.sub(r'^#line \d+ "tilelang/', '#line 7 "tilelang/', line)
                           for line in variant["cuda"]]
        del variant["sync"]["cp_async_commit"]
        # Its IR printed differently: another digest, the same variants alike or not.
        variant["planned_ir"] = "0.1.0-" + variant["planned_ir"]
    path.write_text(json.dumps(data))


def test_provenance_is_reported_not_failed(build, tmp_path) -> None:
    src = tmp_path / "src"
    two = chapter() + "\n" + rst(GEMM, num_stages="2", params=GEMM_PARAMS, name="second",
                                 target="sm_90a")
    build({"index.rst": two}, srcdir=src)
    for name in ("gemm-chapter", "second"):
        _as_if_recorded_elsewhere(src / SNAPSHOTS / f"{name}.json")
    result = build({"index.rst": two}, srcdir=src, freshenv=True)
    assert result.app.statuscode == 0 and result.warnings == ""
    version = tilelang_version()
    for name in ("gemm-chapter", "second"):
        assert (f"{name}: recorded with TileLang 0.1.0 (result schema 1), verified with "
                f"TileLang {version}: same facts and code") in result.status
    assert cli.main(["snapshots", "status", str(src)]) == 0


def test_a_real_change_names_both_versions_and_every_drift(build, tmp_path) -> None:
    src = tmp_path / "src"
    two = chapter() + "\n" + rst(GEMM, num_stages="2", params=GEMM_PARAMS, name="second")
    build({"index.rst": two}, srcdir=src)
    for name in ("gemm-chapter", "second"):
        _as_if_recorded_elsewhere(src / SNAPSHOTS / f"{name}.json")
    changed = chapter(block_k=32) + "\n" + rst(GEMM, num_stages="2", params=GEMM_PARAMS,
                                                name="second")
    result = build({"index.rst": changed}, srcdir=src, freshenv=True)
    assert result.app.statuscode == 1
    assert result.warnings.count("gemm-chapter: the lowering no longer matches") == 1
    assert f"recorded with TileLang 0.1.0, built with {tilelang_version()}" in result.warnings
    assert "A_shared (3, 128, 64) -> (3, 128, 32) float16" in result.warnings
    assert "second: the lowering" not in result.warnings  # only provenance differs there
    assert "1 check(s) failed: 1 snapshot check" in result.warnings


def test_prose_and_position_change_no_snapshot(build, tmp_path) -> None:
    src = tmp_path / "src"
    build({"index.rst": chapter()}, srcdir=src)
    before = golden(src).read_bytes()
    moved = chapter(prose="A new paragraph\nof two lines.\n\n" * 3)
    result = build({"index.rst": moved}, srcdir=src)
    assert result.app.statuscode == 0 and result.warnings == ""
    assert golden(src).read_bytes() == before


def test_ci_fails_on_a_missing_snapshot_and_writes_nothing(build, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("CI", "true")
    result = build({"index.rst": chapter()}, srcdir=tmp_path / "src")
    assert result.app.statuscode == 1
    assert "gemm-chapter: no snapshot at" in result.warnings
    assert not (tmp_path / "src" / SNAPSHOTS).exists()


def test_readthedocs_counts_as_ci(build, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("READTHEDOCS", "True")
    result = build({"index.rst": chapter()}, srcdir=tmp_path / "src")
    assert result.app.statuscode == 1


def test_update_rewrites_and_removes_unused(build, tmp_path, monkeypatch) -> None:
    src = tmp_path / "src"
    build({"index.rst": chapter() + "\n" + rst(GEMM, num_stages="2", params=GEMM_PARAMS,
                                                name="gone")}, srcdir=src)
    assert (src / SNAPSHOTS / "gone.json").exists()
    kept = build({"index.rst": chapter()}, srcdir=src)
    assert "belongs to no tl-pipeline directive" in kept.warnings  # reported, not removed
    assert (src / SNAPSHOTS / "gone.json").exists()
    monkeypatch.setenv("TLSTAGES_SNAPSHOTS", "update")
    updated = build({"index.rst": chapter(block_k=32)}, srcdir=src)
    assert updated.app.statuscode == 0
    assert not (src / SNAPSHOTS / "gone.json").exists()
    assert json.loads(golden(src).read_text())["params"]["block_K"] == "32"


def test_two_folders_and_parallel_builds_record_identical_snapshots(build, tmp_path) -> None:
    docs = {"index.rst": "Index\n=====\n\n.. toctree::\n\n   a\n   b\n",
            "a.rst": chapter(), "b.rst": chapter(stages="1 4").replace("gemm-chapter", "b")}
    serial = build(docs, srcdir=tmp_path / "one" / "src")
    parallel = build(docs, srcdir=tmp_path / "two" / "elsewhere", parallel=2)
    assert serial.app.statuscode == parallel.app.statuscode == 0
    for name in ("gemm-chapter.json", "b.json"):
        assert (serial.app.srcdir / SNAPSHOTS / name).read_bytes() == \
            (parallel.app.srcdir / SNAPSHOTS / name).read_bytes()


def test_sphinx_build_exits_non_zero_on_drift_without_w(tmp_path: Path) -> None:
    src = tmp_path / "src"
    write_project(src, {"index.rst": chapter()}, CONF)
    command = [sys.executable, "-m", "sphinx", "-q", "-b", "html", str(src), str(src / "_b")]
    assert subprocess.run(command, env=os.environ).returncode == 0
    write_project(src, {"index.rst": chapter(block_k=32)}, CONF)
    for jobs in ([], ["-j", "2"]):
        done = subprocess.run(command + jobs, env=os.environ, capture_output=True, text=True)
        assert done.returncode == 1, done.stderr
        assert "the lowering no longer matches" in done.stderr


@pytest.mark.parametrize("mode", ["off"])
def test_off_writes_nothing(build, tmp_path, monkeypatch, mode: str) -> None:
    monkeypatch.setenv("TLSTAGES_SNAPSHOTS", mode)
    build({"index.rst": chapter()}, srcdir=tmp_path / "src")
    assert not (tmp_path / "src" / SNAPSHOTS).exists()


def test_a_run_number_that_moved_is_a_note_at_its_line(build, tmp_path) -> None:
    """Recorded where the pipeline ran one Simplify fewer before the third: ``Simplify#3``
    now names what was the second run. A note at each line that names it, no failure."""
    src = tmp_path / "src"
    page = ("Chapter\n=======\n\n"
            + rst(GEMM, num_stages="2 3", params=GEMM_PARAMS, name="runs",
                  passes="InjectSoftwarePipeline tl.Simplify#3",
                  assert_='passes["tl.Simplify#3"] >= 0'))
    first = build({"index.rst": page}, srcdir=src)
    assert first.app.statuscode == 0 and first.warnings == ""
    path = src / SNAPSHOTS / "runs.json"
    data = json.loads(path.read_text())
    pipeline = data["pass_pipeline"]
    simplify = [i for i, name in enumerate(pipeline) if name == "tl.Simplify"]
    assert len(simplify) >= 3
    # Unchanged pipeline: nothing to say.
    same = build({"index.rst": page}, srcdir=src, freshenv=True)
    assert "Simplify#3 now" not in same.status
    data["tilelang"] = "0.1.0"
    del pipeline[simplify[1]]
    path.write_text(json.dumps(data))
    result = build({"index.rst": page}, srcdir=src, freshenv=True)
    assert result.app.statuscode == 0 and result.warnings == ""
    lines = [line for line in result.status.splitlines() if "Simplify#3 now names" in line]
    assert len(lines) == 2, result.status
    # The directive starts at line 4: :passes: is its fourth option line, :assert: the fifth.
    assert "index.rst:8:" in lines[0], lines
    assert "index.rst:9:" in lines[1], lines
    assert ("tl.Simplify#3 now names the run that was tl.Simplify#2; the run it named then "
            "is now tl.Simplify#4 when the snapshot was recorded (TileLang 0.1.0)") in lines[0]


def test_variants_that_lowered_alike_and_no_longer_do_are_drift(build, tmp_path) -> None:
    """What the IR digests decide is visible (variants shown as one); the digests are not."""
    src = tmp_path / "src"
    build({"index.rst": chapter()}, srcdir=src)
    data = json.loads(golden(src).read_text())
    first = data["variants"]["2"]
    for variant in data["variants"].values():
        variant["planned_ir"], variant["cuda"] = first["planned_ir"], first["cuda"]
    golden(src).write_text(json.dumps(data))
    result = build({"index.rst": chapter()}, srcdir=src, freshenv=True)
    assert result.app.statuscode == 1
    assert "variants shown as one (lowered alike) 2,3 -> none" in result.warnings


BOOK = Path(__file__).resolve().parent.parent / "book"


@pytest.mark.slow
def test_a_fresh_recording_of_the_book_equals_its_committed_snapshots(tmp_path: Path) -> None:
    """Whoever adds a fact, or changes what a page shows, re-records the book in the same
    change: a recording from nothing must give the committed files, byte for byte. (With
    the TileLang they were recorded with: another one records its own version, and that
    the book stays green under it is what the docs build at that end checks.)"""
    committed = BOOK / "_tlstages" / "snapshots"
    recorded = {json.loads(p.read_text(encoding="utf-8"))["tilelang"]
                for p in committed.glob("*.json")}
    if recorded != {tilelang_version()}:
        pytest.skip(f"the book's snapshots were recorded with TileLang {sorted(recorded)}, "
                    f"this is {tilelang_version()}")
    toolkits = {json.loads(p.read_text(encoding="utf-8")).get("toolkit")
                for p in committed.glob("*.json")} - {None}
    if toolkits and toolkit.find("auto") is None and not os.environ.get("CI"):
        # Under CI the extra is installed (nox), and a missing compiler fails the build.
        pytest.skip(f"the book's resources part was recorded with nvcc {sorted(toolkits)}; "
                    "no NVIDIA compiler here (pip install 'sphinx-tlstages[resources]')")
    fresh = tmp_path / "snapshots"
    command = [sys.executable, "-m", "sphinx", "-q", "-b", "dummy", "-d",
               str(tmp_path / "doctrees"), "-D", f"tlstages_snapshot_dir={fresh}",
               str(BOOK), str(tmp_path / "out")]
    done = subprocess.run(command, env={**os.environ, "TLSTAGES_SNAPSHOTS": "update"},
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in fresh.iterdir()) == sorted(p.name for p in
                                                            committed.glob("*.json"))
    stale = [p.name for p in sorted(fresh.iterdir())
             if p.read_bytes() != (committed / p.name).read_bytes()]
    assert not stale, (f"re-record the book (TLSTAGES_SNAPSHOTS=update sphinx-build book "
                       f"...): these differ from a fresh recording: {stale}")


def _without_gemm(src: Path, name: str) -> None:
    path = src / SNAPSHOTS / f"{name}.json"
    data = json.loads(path.read_text())
    for variant in data["variants"].values():
        del variant["gemm"]
    path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")


def test_a_snapshot_without_a_shown_fact_fails_under_ci(build, tmp_path, monkeypatch,
                                                          capsys) -> None:
    """The gemm part is shown; its snapshot lost ``gemm``: nothing guards that part."""
    src = tmp_path / "src"
    two = chapter() + "\n" + rst(GEMM, num_stages="2", params=GEMM_PARAMS, name="second")
    assert build({"index.rst": two}, srcdir=src).app.statuscode == 0
    committed = (src / SNAPSHOTS / "gemm-chapter.json").read_bytes()
    assert b'"gemm": [' in committed and b'"instruction": "mma_sync"' in committed
    _without_gemm(src, "gemm-chapter")

    capsys.readouterr()
    assert cli.main(["snapshots", "status", str(src)]) == 1
    said = capsys.readouterr().out
    assert "lacks    gemm-chapter: gemm (the page reads them" in said
    assert "current  second" in said

    monkeypatch.setenv("CI", "true")
    failed = build({"index.rst": two}, srcdir=src, freshenv=True)
    assert failed.app.statuscode == 1
    line = two.splitlines().index(".. tl-pipeline::") + 1
    golden_file = src / SNAPSHOTS / "gemm-chapter.json"
    assert (f"index.rst:{line}: ERROR: gemm-chapter: {golden_file} does not keep gemm "
            "(read by the gemm part)") in failed.warnings
    assert "second" not in failed.warnings
    assert not list((src / SNAPSHOTS).glob("*.pending.json"))  # CI writes nothing

    # Where the docs are written, the build leaves a pending snapshot that accept fills in.
    monkeypatch.delenv("CI")
    local = build({"index.rst": two}, srcdir=src, freshenv=True)
    assert local.app.statuscode == 0
    assert "gemm-chapter: " in local.status and "fill it in with: tlstages snapshots accept" \
        in local.status
    assert cli.main(["snapshots", "accept", str(src)]) == 0
    assert (src / SNAPSHOTS / "gemm-chapter.json").read_bytes() == committed
    assert cli.main(["snapshots", "status", str(src)]) == 0

    # And TLSTAGES_SNAPSHOTS=update records it.
    _without_gemm(src, "gemm-chapter")
    monkeypatch.setenv("TLSTAGES_SNAPSHOTS", "update")
    assert build({"index.rst": two}, srcdir=src, freshenv=True).app.statuscode == 0
    assert (src / SNAPSHOTS / "gemm-chapter.json").read_bytes() == committed
    monkeypatch.setenv("CI", "true")
    monkeypatch.delenv("TLSTAGES_SNAPSHOTS")
    again = build({"index.rst": two}, srcdir=src, freshenv=True)
    assert again.app.statuscode == 0 and again.warnings == ""


# --- a typo costs no snapshot (issue 52) -------------------------------------------------

def _status(src: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    capsys.readouterr()
    code = cli.main(["snapshots", "status", str(src)])
    return code, capsys.readouterr().out


def test_an_option_in_error_never_costs_its_snapshot(build, tmp_path, monkeypatch,
                                                     capsys) -> None:
    """A recorded directive loses a depth to a typo, then its kernel file: every mode
    fails naming why, and no mode, command or message rewrites or removes the snapshot."""
    src = tmp_path / "src"
    assert build({"index.rst": chapter()}, srcdir=src).app.statuscode == 0
    recorded = golden(src).read_bytes()
    typo = chapter(stages="2 tree")
    line = typo.splitlines().index(".. tl-pipeline::") + 1
    for mode in ("auto", "check", "update"):
        monkeypatch.setenv("TLSTAGES_SNAPSHOTS", mode)
        result = build({"index.rst": typo}, srcdir=src)
        assert result.app.statuscode == 1, mode
        assert (f"index.rst:{line}: ERROR: gemm-chapter: {golden(src)} records 1 variant(s) "
                "this build cannot show; its records are kept: fix the option (line "
                f"{line + 1}: :num-stages: 'tree' is not a whole number (kept: num_stages "
                "2)), then build again\n  num_stages=3: not among what its options allow "
                "while one is in error") in result.warnings, mode
        assert "belongs to no tl-pipeline directive" not in result.warnings
        assert golden(src).read_bytes() == recorded, mode
        assert not list((src / SNAPSHOTS).glob("*.pending.json"))
    code, said = _status(src, capsys)
    assert code == 1 and f"held     gemm-chapter: an option is in error at index.rst:" \
        f"{line + 1}" in said
    assert "unused" not in said
    # A pending file left from before is not accepted over it either.
    pending = src / SNAPSHOTS / "gemm-chapter.pending.json"
    pending.write_text(golden(src).read_text().replace('"3"', '"4"'))
    assert cli.main(["snapshots", "accept", str(src)]) == 1
    assert "not accepted gemm-chapter: an option is in error" in capsys.readouterr().err
    assert golden(src).read_bytes() == recorded
    pending.unlink()
    # The kernel's file goes missing: the directive cannot be read at all.
    (src / "kernel.py").write_text(GEMM)
    gone = chapter().replace(".. tl-pipeline::", ".. tl-pipeline::\n   :file: kernl.py")
    gone = gone[:gone.index("\n\n   @tilelang.jit")] + "\n"
    for strict in ("", "true"):
        monkeypatch.setenv("CI", strict)
        result = build({"index.rst": gone}, srcdir=src)
        assert result.app.statuscode == 1
        assert "records 2 variant(s) this build cannot show; the directive could not be read" \
            in result.warnings
        assert golden(src).read_bytes() == recorded
    monkeypatch.setenv("TLSTAGES_SNAPSHOTS", "auto")
    monkeypatch.delenv("CI")
    code, said = _status(src, capsys)
    assert "held     gemm-chapter: the directive at index.rst:" in said and "unused" not in said
    # Fixed, it is green again, and a deliberate change is a drift update accepts.
    assert build({"index.rst": chapter()}, srcdir=src).app.statuscode == 0
    monkeypatch.setenv("TLSTAGES_SNAPSHOTS", "update")
    assert build({"index.rst": chapter(stages="2")}, srcdir=src).app.statuscode == 0
    assert list(json.loads(golden(src).read_text())["variants"]) == ["2"]


def test_an_unused_snapshot_names_the_sources_read(build, tmp_path) -> None:
    src = tmp_path / "src"
    build({"index.rst": chapter()}, srcdir=src)
    moved = chapter().replace("gemm-chapter", "renamed")
    result = build({"index.rst": moved}, srcdir=src)
    assert (f"snapshot {golden(src)} belongs to no tl-pipeline directive (no tl-pipeline "
            "directive of that name in the 1 source read (index.rst)); "
            "TLSTAGES_SNAPSHOTS=update removes it") in result.warnings
    # A :name: in error may be any snapshot's: none is called unused, none removed.
    bad_name = chapter().replace(":name: gemm-chapter", ":name: gemm chapter")
    result = build({"index.rst": bad_name}, srcdir=src,
                   confoverrides={"tlstages_snapshots": "update"})
    assert "it is kept, since the directive at index.rst:" in result.warnings
    assert golden(src).exists()


def test_a_recorded_variant_that_fails_to_lower_keeps_its_record(build, tmp_path,
                                                                 monkeypatch) -> None:
    """A build's accident never costs a record: update keeps it and fails, naming why."""
    src = tmp_path / "src"
    build({"index.rst": chapter()}, srcdir=src)
    unlucky = chapter().replace('       dtype = "float16"\n', '       dtype = "float16"\n'
                                '       if num_stages == 3:\n'
                                '           raise ValueError("three is unlucky")\n')
    assert unlucky != chapter()
    monkeypatch.setenv("TLSTAGES_SNAPSHOTS", "update")
    result = build({"index.rst": unlucky}, srcdir=src)
    assert result.app.statuscode == 1
    assert ("num_stages=3: failed to lower (exception): ValueError: three is unlucky"
            in result.warnings)
    assert sorted(json.loads(golden(src).read_text())["variants"]) == ["2", "3"]


def test_from_no_snapshots_each_mode_ends_as_documented(build, tmp_path, monkeypatch) -> None:
    for mode, code in (("check", 1), ("update", 0), ("auto", 0)):
        src = tmp_path / mode
        monkeypatch.setenv("TLSTAGES_SNAPSHOTS", mode)
        result = build({"index.rst": chapter()}, srcdir=src)
        assert result.app.statuscode == code, (mode, result.warnings)
        assert "Traceback" not in result.warnings
        assert golden(src).exists() == (code == 0)
        if code:
            assert f"gemm-chapter: no snapshot at {golden(src)}; record it with " \
                   "TLSTAGES_SNAPSHOTS=update" in result.warnings


# --- the compiler's facts, not this extension's sentences (issue 51) --------------------

def test_a_reworded_verdict_is_a_note_and_a_moved_one_says_the_check_changed(
        build, tmp_path, monkeypatch) -> None:
    src = tmp_path / "src"
    build({"index.rst": chapter()}, srcdir=src)
    recorded = golden(src).read_text()
    data = json.loads(recorded)
    data["variants"]["3"]["hazards"]["text"] = "none found, in older words"
    golden(src).write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    monkeypatch.setenv("CI", "true")
    ci = build({"index.rst": chapter()}, srcdir=src, freshenv=True)
    assert ci.app.statuscode == 0 and ci.warnings == ""
    assert "gemm-chapter: num_stages=3: the hazard check words its findings differently" \
        in ci.status
    monkeypatch.delenv("CI")
    monkeypatch.setenv("TLSTAGES_SNAPSHOTS", "update")
    assert build({"index.rst": chapter()}, srcdir=src, freshenv=True).app.statuscode == 0
    assert golden(src).read_text() == recorded
    # The verdict itself moves while TileLang's output is the same: the check's change.
    data = json.loads(recorded)
    data["variants"]["3"]["hazards"]["verdict"] = "hazard"
    golden(src).write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    monkeypatch.setenv("TLSTAGES_SNAPSHOTS", "check")
    moved = build({"index.rst": chapter()}, srcdir=src, freshenv=True)
    assert moved.app.statuscode == 1
    assert "num_stages=3: hazards 'hazard' -> 'none'" in moved.warnings
    assert "why: the check changed; the code did not (the same CUDA and pass fingerprints " \
           "as recorded)" in moved.warnings
