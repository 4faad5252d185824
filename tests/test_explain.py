"""``tlstages explain NAME``: why a variant was lowered again."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from sphinx_tlstages.cli import main

from .kernels import GEMM, rst

BASE = "M=1024 N=1024 K=1024 block_M=128 block_N=128 threads=128"


def page(block_k: int = 64, stages: str = "2 3", kernel: str = GEMM) -> str:
    return "T\n=\n\n" + rst(kernel, num_stages=stages, params=f"{BASE} block_K={block_k}",
                            name="why")


@pytest.fixture
def explain(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> Callable[[], str]:
    def run() -> str:
        assert main(["explain", "why", str(tmp_path)]) == 0
        return capsys.readouterr().out
    return run


# Records must come from this test's builds alone.
pytestmark = pytest.mark.usefixtures("own_cache")


def test_first_build_then_a_param_then_a_no_op(build, tmp_path, explain) -> None:
    src = tmp_path / "src"
    build({"index.rst": page()}, srcdir=src)
    first = explain()
    assert "num_stages=2, 3: lowered, because\n      no earlier build " \
           "of this variant is recorded" in first
    build({"index.rst": page(block_k=32)}, srcdir=src)
    changed = explain()
    assert "num_stages=2, 3: lowered, because\n" \
           "      params: block_K=64 -> block_K=32\n" in changed + "\n"
    assert "kernel source" not in changed and "num_stages:" not in changed
    # A no-op rebuild neither reads nor rewrites the record.
    (record,) = (src / "_build").rglob("tlstages-explain/why.json")
    written = record.stat().st_mtime_ns
    build({"index.rst": page(block_k=32)}, srcdir=src)
    assert record.stat().st_mtime_ns == written and explain() == changed
    # -E changes nothing either: the record still tells the last change.
    build({"index.rst": page(block_k=32)}, srcdir=src, freshenv=True)
    assert record.stat().st_mtime_ns == written and explain() == changed
    # One variant more: the others are taken from the cache and keep their reason.
    build({"index.rst": page(block_k=32, stages="2 3 4")}, srcdir=src)
    kept = explain()
    assert "num_stages=2, 3: taken from the cache; last lowered because\n" \
           "      params: block_K=64 -> block_K=32" in kept
    assert "num_stages=4: lowered, because\n      no earlier build" in kept
    # Back to a value an earlier build lowered: from the cache, and said so.
    build({"index.rst": page()}, srcdir=src)
    assert "num_stages=2, 3: taken from the cache: an earlier build had lowered these " \
           "same inputs" in explain()


def test_a_kernel_edit_is_shown_by_document_line(build, tmp_path, explain) -> None:
    src = tmp_path / "src"
    build({"index.rst": page(stages="2")}, srcdir=src)
    edited = GEMM.replace("T.clear(C_local)", "T.clear(C_local)  # zero the accumulator")
    build({"index.rst": page(stages="2", kernel=edited)}, srcdir=src)
    out = explain()
    line = page(stages="2", kernel=edited).splitlines().index(
        "               T.clear(C_local)  # zero the accumulator") + 1
    assert f"index line {line} changed (first: - T.clear(C_local) / + T.clear(C_local)  # " \
           "zero the accumulator)" in out


def test_a_cleared_cache_is_named_as_the_reason(build, tmp_path, explain, own_cache) -> None:
    src = tmp_path / "src"
    build({"index.rst": page(stages="2")}, srcdir=src)
    for entry in own_cache.glob("??/*.json"):
        entry.unlink()
    build({"index.rst": page(stages="2")}, srcdir=src, freshenv=True)
    assert "its key is unchanged but the cache had no readable entry" in explain()


def test_unknown_name_exits_1(tmp_path, capsys) -> None:
    assert main(["explain", "nothing", str(tmp_path)]) == 1
    assert "no record of a tl-pipeline directive named 'nothing'" in capsys.readouterr().err


def test_tuple_params_are_compared_as_recorded_not_reparsed() -> None:
    from sphinx_tlstages.core.records.explain import _reasons

    before = {"parts": {"params": "M=1 tile=(64, 64)"}, "params": {"M": "1", "tile": "(64, 64)"}}
    assert _reasons(before, {"params": "M=1 tile=(32, 32)"}, {"M": "1", "tile": "(32, 32)"},
                    (None, ""), ("index line", 1)) == ["params: tile=(64, 64) -> tile=(32, 32)"]
