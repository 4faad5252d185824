"""Benchmark numbers attached to pages: schema, attachment, staleness, bad files.

The numbers themselves come from ``tlstages bench`` on a GPU machine (the book's file was
measured on an H200); here the files are written by the tests, since CI has no GPU.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from sphinx_tlstages.core.records.bench_data import (
    BenchFileError,
    benched,
    code_fingerprint,
    fingerprint,
    legacy_fingerprint,
    load,
    validate,
)
from sphinx_tlstages.core.results.stamps import tilelang_version
from sphinx_tlstages.ext.collector import all_directives
from sphinx_tlstages.ext.state import build_state

from .kernels import GEMM, GEMM_PARAMS, rst

ROOT = Path(__file__).resolve().parent.parent
PAGE = "Bench\n=====\n\n" + rst(GEMM, num_stages="2 3", params=GEMM_PARAMS, name="timed",
                                flops="2 * M * N * K", reference="A @ B.T")


def bench_file(app, medians: dict[int, float], gpu: str = "Test GPU") -> dict:  # type: ignore[no-untyped-def]
    (spec,) = all_directives(app.env)
    return {
        "schema": 1, "date": "2026-12-02", "command": "tlstages bench src",
        "method": "CUDA events", "gpu": {"name": gpu, "sm": "sm_90a", "driver": "1",
                                         "cuda": "13.0", "torch": "2.11", "tilelang": "0.1.15"},
        "directives": {"timed": {
            "reference": {"expression": "A @ B.T", "median_ms": 0.1, "p20_ms": 0.09,
                          "p80_ms": 0.11, "tflops": 21.47},
            "variants": {str(v.num_stages): {
                "fingerprint": fingerprint(v), "code": "not lowered for sm_90a here",
                "median_ms": medians[v.num_stages],
                "p20_ms": medians[v.num_stages] * 0.9, "p80_ms": medians[v.num_stages] * 1.1,
                "tflops": round(2 * 1024**3 / (medians[v.num_stages] * 1e-3) / 1e12, 2),
                "correct": True, "error": 0.0, "tolerance": 0.01}
                for v in spec.variants}}},
    }


def write(src: Path, data: object, name: str = "test-gpu.json") -> None:
    folder = src / "_tlstages" / "bench"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(data if isinstance(data, str) else json.dumps(data))


def test_no_bench_file_no_numbers(build) -> None:
    result = build({"index.rst": PAGE})
    assert result.warnings == ""
    assert "tl-bench" not in result.html()


def test_numbers_are_attached_and_a_new_file_rewrites_the_page(build, tmp_path) -> None:
    src = tmp_path / "src"
    first = build({"index.rst": PAGE}, srcdir=src)
    write(src, bench_file(first.app, {2: 0.2, 3: 0.125}))
    result = build({"index.rst": PAGE}, srcdir=src)
    assert result.warnings == ""
    assert "0 added, 0 changed" in result.status  # rewritten because the numbers changed
    bench = result.part("tl-bench")
    assert result.part("tl-bench-caption").astext().startswith(
        "Measured on Test GPU (sm_90a build), driver 1, CUDA 13.0, torch 2.11, TileLang "
        "0.1.15, on 2026-12-02")
    # The chart first, the line saying where it was measured under it, then the table.
    first, second = [c for c in bench.children if not isinstance(c, str)][:2]
    assert "tl-chart-figure" in first.classes and "tl-figure" in first.classes
    assert "tl-bench-caption" in second.classes
    chart = first.iter("svg")[0]
    assert chart.attrs["role"] == "img"
    assert chart.iter("desc")[0].astext() == (
        "Bar chart of timed measured on Test GPU: TFLOP/s per num_stages (median of the "
        "timed launches, whisker from the 20th to the 80th percentile). Variants: num_stages "
        "2: 10.7; num_stages 3: 17.2. reference A @ B.T: 21.5 TFLOP/s. Best: num_stages=3.")
    rows = result.table("tl-bench")
    assert rows[0][:5] == ["num_stages", "latency (median, 20–80th pct.)", "TFLOP/s",
                           "vs best variant", "vs reference"]
    assert rows[1][:5] == ["2", "0.2000 ms (0.1800–0.2200)", "10.74", "62 %", "50 %"]
    assert rows[2][:5] == ["3", "0.1250 ms (0.1125–0.1375)", "17.18", "100 %", "80 %"]
    assert rows[3][:5] == ["reference A @ B.T", "0.1000 ms (0.0900–0.1100)", "21.47", "—",
                           "100 %"]
    html = result.html()
    assert '<span class="tl-bar" style="width: 50%"></span>' in html
    assert '<span class="tl-bar" style="width: 100%"></span>' in html


def test_numbers_go_stale_when_a_param_changes(build, tmp_path) -> None:
    src = tmp_path / "src"
    first = build({"index.rst": PAGE}, srcdir=src)
    write(src, bench_file(first.app, {2: 0.2, 3: 0.125}))
    edited = PAGE.replace("block_K=64", "block_K=32")
    marked = build({"index.rst": edited}, srcdir=src)
    assert "timed: the numbers measured on Test GPU for num_stages 2 3 are for another " \
           "kernel or code; run tlstages bench again [tlstages.bench]" in marked.warnings
    rows = marked.table("tl-bench")
    assert rows[1][1].startswith("stale: 0.2000 ms")
    chart = marked.part("tl-chart-figure")
    assert chart.iter("desc")[0].astext().count("(stale)") == 2
    assert ">stale</text>" in marked.html() and 'fill="url(#' in marked.html()
    hidden = build({"index.rst": edited}, srcdir=src,
                   confoverrides={"tlstages_bench_stale": "hide"})
    assert hidden.table("tl-bench")[1][1] == "stale, hidden"
    assert "tl-chart-figure" not in hidden.html()  # nothing fresh is left to draw


@pytest.mark.parametrize(("content", "message"), [
    ("{not json", "cannot be read as JSON"),
    (json.dumps({"schema": 99}), "not a tl-pipeline bench file of schema 1"),
    (json.dumps({"schema": 1, "gpu": {"name": "X"}, "directives": {
        "timed": {"variants": {"2": {"median_ms": -1}}}}}),
     "timed num_stages=2: needs positive median_ms"),
])
def test_a_bad_bench_file_is_one_warning_naming_it(build, tmp_path, content: str,
                                                   message: str) -> None:
    src = tmp_path / "src"
    write(src, content, "broken.json")
    result = build({"index.rst": PAGE}, srcdir=src)
    assert result.warnings.count("[tlstages.bench]") == 1
    assert f"bench file ignored: broken.json: {message}" in result.warnings
    assert "tl-summary" in result.html()


def test_an_oversized_bench_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "huge.json"
    path.write_text(" " * (9 << 20) + "{}")
    with pytest.raises(BenchFileError, match="larger than 8 MiB"):
        load(path)


def test_the_books_measured_file_is_valid() -> None:
    data = load(ROOT / "book" / "_tlstages" / "bench" / "nvidia-h200.json")
    assert data["gpu"]["name"] == "NVIDIA H200" and data["gpu"]["sm"] == "sm_90a"
    assert set(data["directives"]["gemm-sm90a"]["variants"]) == {"0", "1", "2", "3", "4"}
    broken = json.loads(json.dumps(data))
    del broken["directives"]["gemm-sm90a"]["variants"]["3"]["fingerprint"]
    with pytest.raises(BenchFileError, match="no fingerprint"):
        validate(broken, "x")


GPU_HELPERS = """
import sys
from sphinx_tlstages.cli import bench
from sphinx_tlstages.worker import gpu as lowering
from sphinx_tlstages.core.protocol.messages import Task
task = Task(sys.argv[1], "kernel.py", "matmul",
            (("M", "64"), ("N", "48"), ("K", "32"), ("block_M", "64"), ("block_N", "48"),
             ("block_K", "32"), ("threads", "128")), 2, {"kind": "cuda", "arch": "sm_90a"})
tensors = lowering.tensor_params(task)
assert tensors == [{"name": "A", "dtype": "float16", "shape": [64, 32]},
                   {"name": "B", "dtype": "float16", "shape": [48, 32]},
                   {"name": "C", "dtype": "float16", "shape": [64, 48]}], tensors
one, two = bench.make_inputs(tensors, 0, "cpu"), bench.make_inputs(tensors, 0, "cpu")
assert all((a == b).all() for a, b in zip(one, two)), "inputs must repeat"
assert [tuple(x.shape) for x in one] == [(64, 32), (48, 32), (64, 48)]
assert bench.output_names(tensors, "A @ B.T") == ["C"]
A, B, C = (x.float() for x in one)
assert bench.relative_error(A @ B.T, A @ B.T) == 0.0
assert bench.relative_error(A @ B.T + 1, A @ B.T) > 0.01
assert bench.evaluate("2 * M * N * K", {"M": 2, "N": 3, "K": 4}) == 48
p = bench.percentiles([float(x) for x in range(1, 101)])
assert p == {"median_ms": 50.5, "p20_ms": 20.8, "p80_ms": 80.2}, p
print("ok")
"""


def test_gpu_path_helpers_on_the_cpu() -> None:
    # In a child process: the helpers import torch, which this process must not.
    done = subprocess.run([sys.executable, "-c", GPU_HELPERS, GEMM], capture_output=True,
                          text=True)
    assert done.stdout.strip() == "ok", done.stderr


def test_a_matrix_is_timed_per_cell_on_the_first_target(build, tmp_path) -> None:
    src = tmp_path / "src"
    params = "M=1024 N=1024 K=1024 block_M=128 block_N=128 threads=128"
    page = "Bench\n=====\n\n" + rst(GEMM, num_stages="2", sweep="block_K=32,64",
                                    target="sm_90a sm_80", params=params, name="timed",
                                    flops="2 * M * N * K")
    first = build({"index.rst": page}, srcdir=src)
    (spec,) = all_directives(first.app.env)
    timed = benched(spec)
    assert [v.id for v in timed] == ["target=sm_90a,block_K=32,num_stages=2",
                                     "target=sm_90a,block_K=64,num_stages=2"]
    data = {
        "schema": 1, "date": "2026-12-02", "command": "tlstages bench src", "method": "m",
        "gpu": {"name": "Test GPU", "sm": "sm_90a", "driver": "1", "cuda": "13.0",
                "torch": "2.11", "tilelang": "0.1.15"},
        "directives": {"timed": {"variants": {v.id: {
            "fingerprint": fingerprint(v), "code": code_fingerprint(build_state(
                first.app).result(v)), "median_ms": ms, "p20_ms": ms,
            "p80_ms": ms, "tflops": 1.0} for v, ms in zip(timed, (0.2, 0.1), strict=True)}}},
    }
    write(src, data)
    result = build({"index.rst": page}, srcdir=src)
    assert result.warnings == ""
    rows = result.table("tl-bench")
    assert rows[0][0] == "variant"
    assert [r[0] for r in rows[1:]] == ["sm_90a, block_K=32, num_stages=2",
                                        "sm_90a, block_K=64, num_stages=2"]
    assert [r[3] for r in rows[1:]] == ["50 %", "100 %"]


SM90 = "Bench\n=====\n\n" + rst(GEMM, num_stages="2 3", params=GEMM_PARAMS, name="timed",
                                target="sm_90a", flops="2 * M * N * K")


def _timed_on(app, tilelang: str, code: object, legacy: bool = False) -> dict:  # type: ignore[no-untyped-def]
    """A bench file measured on an sm_90a GPU under ``tilelang``; ``code`` maps a variant
    to its code fingerprint."""
    (spec,) = all_directives(app.env)
    return {"schema": 1, "date": "2026-12-02", "command": "c", "method": "m",
            "gpu": {"name": "Test GPU", "sm": "sm_90a", "driver": "1", "cuda": "13.0",
                    "torch": "2.11", "tilelang": tilelang},
            "directives": {"timed": {"variants": {v.id: (
                {"fingerprint": legacy_fingerprint(v, tilelang)} if legacy else
                {"fingerprint": fingerprint(v), "code": code(v)})
                | {"median_ms": 0.1, "p20_ms": 0.1, "p80_ms": 0.1} for v in spec.variants}}}}


def test_an_upgrade_that_changes_no_code_keeps_the_numbers(build, tmp_path) -> None:
    """Measured under another TileLang: the page lowered the same code for the GPU's arch
    (same normalised CUDA, same template headers), so the numbers still describe it; the
    other version is provenance, on the page and in the log, and no warning."""
    src = tmp_path / "src"
    first = build({"index.rst": SM90}, srcdir=src)
    state = build_state(first.app)
    assert state is not None
    write(src, _timed_on(first.app, "0.0.1", lambda v: code_fingerprint(state.result(v))))
    kept = build({"index.rst": SM90}, srcdir=src)
    assert kept.warnings == ""
    assert "stale" not in kept.part("tl-bench").astext()
    said = (f"This build uses TileLang {tilelang_version()}, the numbers were measured with "
            "TileLang 0.0.1: the sm_90a code this build lowered is compared with the code "
            "that was timed (TileLang's template headers it includes are said where they "
            "differ, not compared)")
    assert kept.part("tl-bench-caption").astext().endswith(f"m. {said}.")
    assert f"timed: numbers from Test GPU: {said}" in kept.status


def test_numbers_go_stale_when_the_code_that_ran_changed(build, tmp_path) -> None:
    src = tmp_path / "src"
    first = build({"index.rst": SM90}, srcdir=src)
    write(src, _timed_on(first.app, str(tilelang_version()), lambda v: "other code"))
    result = build({"index.rst": SM90}, srcdir=src)
    assert "are for another kernel or code" in result.warnings
    assert result.table("tl-bench")[1][1].startswith("stale: ")


def test_files_without_code_fingerprints_follow_the_inputs(build, tmp_path) -> None:
    """A file written before code fingerprints can tell only a change of the kernel's
    inputs: another TileLang version alone leaves its numbers standing, said so."""
    src = tmp_path / "src"
    first = build({"index.rst": SM90}, srcdir=src)
    write(src, _timed_on(first.app, str(tilelang_version()), None, legacy=True))
    assert build({"index.rst": SM90}, srcdir=src).warnings == ""
    write(src, _timed_on(first.app, "0.0.1", None, legacy=True))
    upgraded = build({"index.rst": SM90}, srcdir=src)
    assert upgraded.warnings == ""
    assert "measured with TileLang 0.0.1" in upgraded.part("tl-bench-caption").astext()
    edited = SM90.replace("block_K=64", "block_K=32")
    assert "are for another kernel" in build({"index.rst": edited}, srcdir=src).warnings


def test_numbers_for_an_arch_the_page_does_not_lower_follow_the_inputs(build,
                                                                        tmp_path) -> None:
    """The page lowers for sm_80, the numbers were timed on sm_90a with another TileLang:
    its code cannot be compared, so the version is provenance (said, not warned), and only
    a change of the kernel's inputs makes the numbers stale."""
    src = tmp_path / "src"
    first = build({"index.rst": PAGE}, srcdir=src)
    data = bench_file(first.app, {2: 0.2, 3: 0.125})
    data["gpu"]["tilelang"] = "0.0.1"
    write(src, data)
    kept = build({"index.rst": PAGE}, srcdir=src)
    assert kept.warnings == ""
    said = (f"This build uses TileLang {tilelang_version()}, the numbers were measured with "
            "TileLang 0.0.1: this page does not lower for sm_90a, so only the kernel's inputs "
            "(source, parameters, num_stages) are compared with those timed")
    assert kept.part("tl-bench-caption").astext().endswith(f"CUDA events. {said}.")
    assert f"timed: numbers from Test GPU: {said}" in kept.status
    assert "stale" not in kept.part("tl-bench").astext()
    edited = build({"index.rst": PAGE.replace("block_K=64", "block_K=32")}, srcdir=src)
    assert "for num_stages 2 3 are for another kernel or code" in edited.warnings
    assert edited.table("tl-bench")[1][1].startswith("stale: 0.2000 ms")
