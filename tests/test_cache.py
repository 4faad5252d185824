"""The lowering cache: exact invalidation, warm builds without workers, safe files."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from sphinx_tlstages.core import files
from sphinx_tlstages.runner import launch

from .conftest import CONF, Built, write_project
from .kernels import GEMM, GEMM_PARAMS, rst


def counts(built: Built) -> tuple[int, int]:
    """(lowered, cached) from the build's summary line."""
    match = re.search(r"(\d+) lowered, (\d+) cached", built.status)
    assert match, built.status
    return int(match.group(1)), int(match.group(2))


def page(block_k: int = 64, stages: str = "2 3", **extra: str) -> str:
    """Directives "one" and "two"; with the defaults they lower the same two variants."""
    params = GEMM_PARAMS.replace("block_K=64", f"block_K={block_k}")
    first = rst(GEMM, num_stages=stages, params=params, name="one", **extra)
    second = rst(GEMM, num_stages="2 3" if stages != "2" else "2", params=GEMM_PARAMS,
                 name="two")
    return "Cache\n=====\n\n" + first + "\n" + second


def test_invalidation_is_exact(build, tmp_path, own_cache) -> None:
    src = tmp_path / "src"
    # "two" repeats "one" at first: equal inputs are lowered once.
    assert counts(build({"index.rst": page()}, srcdir=src)) == (2, 0)
    # Display-only options re-render without lowering.
    shown = page(show="shared sync", diff="baseline").replace(".. tl-pipeline::",
                                                              ".. tl-pipeline:: Retitled", 1)
    assert counts(build({"index.rst": shown}, srcdir=src)) == (0, 2)
    # A param of one directive: only its two variants.
    assert counts(build({"index.rst": page(block_k=32)}, srcdir=src)) == (2, 2)
    # One more num_stages value: only the new variant.
    assert counts(build({"index.rst": page(block_k=32, stages="2 3 4")}, srcdir=src)) == (1, 4)


def test_tilelang_upgrade_relowers_and_rewrites_unread_documents(build, tmp_path, own_cache,
                                                                   monkeypatch) -> None:
    src = tmp_path / "src"
    docs = {"index.rst": "Index\n=====\n\n.. toctree::\n\n   other\n",
            "other.rst": page(stages="2")}
    assert counts(build(docs, srcdir=src)) == (1, 0)
    unchanged = build(docs, srcdir=src)
    assert counts(unchanged) == (0, 1)
    assert "no targets are out of date" in unchanged.status
    monkeypatch.setattr("sphinx_tlstages.ext.lowering.batch.tilelang_stamp",
                        lambda: "0.1.16+rebuilt")
    upgraded = build(docs, srcdir=src)
    assert counts(upgraded) == (1, 0)
    status = upgraded.status
    assert "0 added, 0 changed, 0 removed" in status  # Sphinx itself re-read nothing
    assert re.search(r"writing output\.\.\. \[\s*\d+%\] other", status), status


def test_warm_build_starts_no_worker(build, tmp_path, own_cache, monkeypatch) -> None:
    src = tmp_path / "src"
    build({"index.rst": page()}, srcdir=src)

    def no_workers(*args: object, **kwargs: object) -> None:
        raise AssertionError("a warm build started a worker")

    monkeypatch.setattr(launch.subprocess, "Popen", no_workers)
    warm = build({"index.rst": page()}, srcdir=src, freshenv=True)
    assert counts(warm) == (0, 2)
    assert warm.warnings == ""
    assert "tilelang" not in sys.modules and "torch" not in sys.modules


def test_default_cache_survives_a_fresh_environment(build, tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("TLSTAGES_CACHE_DIR")
    src = tmp_path / "src"
    first = build({"index.rst": page(stages="2")}, srcdir=src)
    assert counts(first) == (1, 0)
    assert list(Path(first.app.doctreedir, "tlstages-cache").rglob("*.json"))
    assert counts(build({"index.rst": page(stages="2")}, srcdir=src, freshenv=True)) == (0, 1)


def test_corrupt_entry_is_a_miss_and_is_rewritten(build, tmp_path, own_cache) -> None:
    src = tmp_path / "src"
    build({"index.rst": page(stages="2")}, srcdir=src)
    (entry,) = own_cache.glob("??/*.json")  # the one result entry
    good = entry.read_text(encoding="utf-8")
    entry.write_text(good[: len(good) // 2], encoding="utf-8")  # truncated mid-write
    corrupt = build({"index.rst": page(stages="2")}, srcdir=src, freshenv=True)
    assert counts(corrupt) == (1, 0)
    # This machine's disk: said (a warning of its own subtype), and the build goes on.
    assert f"local cache {own_cache}: {entry}: not JSON (corrupt); lowered again " \
           "[tlstages.cache]" in corrupt.warnings
    assert json.loads(entry.read_text(encoding="utf-8"))["ok"] is True
    entry.write_text(json.dumps({"schema": 1, "ok": True}), encoding="utf-8")  # wrong shape
    outdated = build({"index.rst": page(stages="2")}, srcdir=src, freshenv=True)
    assert counts(outdated) == (1, 0)
    assert outdated.warnings == ""  # an entry of another schema is no disk problem


def test_an_unwritable_cache_folder_is_a_warning_and_the_build_goes_on(build, tmp_path,
                                                                      monkeypatch) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder", encoding="utf-8")
    monkeypatch.setenv("TLSTAGES_CACHE_DIR", str(blocker / "cache"))
    built = build({"index.rst": page(stages="2")}, srcdir=tmp_path / "src")
    assert counts(built) == (1, 0)
    assert built.part("tl-pipeline") is not None
    assert re.search(rf"local cache {re.escape(str(blocker))}/cache: \S+: cannot be "
                     r"written: .*\[tlstages\.cache\]", built.warnings), built.warnings


def test_atomic_write_leaves_the_old_file_on_failure(tmp_path, monkeypatch) -> None:
    target = tmp_path / "golden.json"
    files.write_atomic(target, "old")

    def crash(*args: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(files.os, "replace", crash)
    with pytest.raises(OSError, match="disk full"):
        files.write_atomic(target, "new")
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["golden.json"]


def test_parallel_build_equals_serial(build, tmp_path, own_cache) -> None:
    docs = {"index.rst": "Index\n=====\n\n.. toctree::\n\n   a\n   b\n   c\n",
            "a.rst": page(stages="2"), "b.rst": page(stages="3").replace("one", "b1").replace(
                "two", "b2"), "c.rst": page(stages="1 2").replace("one", "c1").replace("two", "c2")}
    serial = build(docs, srcdir=tmp_path / "serial")
    parallel = build(docs, srcdir=tmp_path / "parallel", parallel=2)
    assert serial.warnings == parallel.warnings == ""
    for doc in ("a", "b", "c"):
        assert _pipelines(serial.html(doc)) == _pipelines(parallel.html(doc))


def _pipelines(html: str) -> str:
    """The page from its first tl-pipeline to the footer (which names nothing of ours)."""
    return html[html.index('<div class="tl-pipeline'):html.rindex('<div class="footer"')]


def test_two_builds_sharing_a_cache_at_once(tmp_path, own_cache) -> None:
    procs = []
    for name in ("first", "second"):
        src = tmp_path / name
        write_project(src, {"index.rst": page(stages="1 2 3")}, CONF)
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "sphinx", "-q", "-b", "html", str(src), str(src / "_build")],
            env={**os.environ, "TLSTAGES_JOBS": "1"}, stderr=subprocess.PIPE, text=True))
    for proc in procs:
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0 and err == "", err
    entries = list(own_cache.glob("??/*.json"))
    assert len(entries) == 3
    assert all(json.loads(e.read_text(encoding="utf-8"))["ok"] for e in entries)
    assert not list(own_cache.rglob("*.tmp"))
    assert _pipelines((tmp_path / "first/_build/index.html").read_text()) == \
        _pipelines((tmp_path / "second/_build/index.html").read_text())


def test_written_files_get_the_usual_mode(tmp_path: Path) -> None:
    """Downloads served by a web server must be readable by others, as a plain write is."""
    target = tmp_path / "a.cu"
    files.write_atomic(target, "x")
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~umask
