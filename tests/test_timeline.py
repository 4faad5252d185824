"""Measured timelines: probes in real lowered CUDA, and a real recording on the page.

The recording comes from ``tlstages timeline`` on a GPU machine: the fixture
(``tests/fixtures/timeline-h100.json``) is a cut of the book's (the seed GEMM on sm_80
code compiled for an H100, num_stages 1 and 3, block 0's first two warps), kept as it
was recorded; here the pages that draw it are built on the CPU.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sphinx_tlstages.core.plan.toolkit import find
from sphinx_tlstages.core.records.bench_data import BenchFileError, load
from sphinx_tlstages.core.records.timeline_data import order_problems, validate
from sphinx_tlstages.core.results.probes import instrument
from sphinx_tlstages.ext.collector import all_directives
from sphinx_tlstages.ext.state import build_state
from sphinx_tlstages.worker.resources import nvcc_command

from .kernels import GEMM, GEMM_PARAMS, rst

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "fixtures" / "timeline-h100.json"
BOOK = ROOT / "book" / "_tlstages" / "timeline" / "nvidia-h100-80gb-hbm3.json"
TOOLKIT = find("auto")
PAGE = "Timeline\n========\n\n" + rst(GEMM, num_stages="1 3", params=GEMM_PARAMS,
                                     name="timed", timeline="", show="figure")


def _sites(probed: object) -> list[str]:
    return [f"{s.part}:{s.kind}{s.n if s.n is not None else ''}{'<' if s.at == 'before' else '>'}"
            for s in probed.sites[2:]]  # type: ignore[attr-defined]


def _lowered(build, page: str) -> dict[str, str]:  # type: ignore[no-untyped-def]
    result = build({"index.rst": page})
    state = build_state(result.app)
    (spec,) = all_directives(result.app.env)
    return {f"{v.target.label}:{v.num_stages}": str(state.result(v)["cuda"])
            for v in spec.variants}


def _nvcc(code: str, folder: Path) -> subprocess.CompletedProcess[str]:
    # TileLang's template headers, where TileLang's own compile finds them (found, not
    # imported: no test imports TileLang into its own process).
    spec = importlib.util.find_spec("tilelang")
    assert spec is not None and spec.submodule_search_locations
    package = Path(spec.submodule_search_locations[0])
    source = folder / "probed.cu"
    source.write_text(code)
    assert TOOLKIT is not None
    # The host compiler named as the product names it: a build machine may have g++ only.
    options = ["--cubin", "-O3", "-arch=sm_90a", "-std=c++20", f"-I{package / 'src'}",
               f"-I{package / '3rdparty/cutlass/include'}", "-w"]
    return subprocess.run(nvcc_command(TOOLKIT.nvcc, options, folder / "probed.cubin", source),
                          capture_output=True, text=True, check=False)


def test_probes_in_the_seed_gemms_sm80_code(build, tmp_path: Path) -> None:
    cuda = _lowered(build, "P\n=\n\n" + rst(GEMM, num_stages="1 3", params=GEMM_PARAMS,
                                             target="sm_80"))
    one = instrument(cuda["sm_80:1"], 0x7F0000000000, 2, 4, 64)
    # depth 1: copy, commit; in the loop the wait, the barriers around the T.gemm, the
    # next copy's commit; the last tile after the loop
    assert _sites(one) == [
        "prologue:commit>", "loop:wait0<", "loop:wait0>", "loop:sync<", "loop:sync>",
        "loop:mma<", "loop:mma>", "loop:sync<", "loop:sync>", "loop:commit>",
        "epilogue:wait0<", "epilogue:wait0>", "epilogue:sync<", "epilogue:sync>",
        "epilogue:mma<", "epilogue:mma>"]
    three = instrument(cuda["sm_80:3"], 0x7F0000000000, 2, 4, 64)
    assert _sites(three)[:12] == [
        "prologue:commit>", "prologue:commit>", "loop:sync<", "loop:sync>", "loop:commit>",
        "loop:wait2<", "loop:wait2>", "loop:sync<", "loop:sync>", "loop:mma<", "loop:mma>",
        "epilogue:wait1<"]
    assert {s.loop_var for s in three.sites if s.part == "loop"} == {"ko"}
    assert next(s for s in three.sites if s.kind == "mma").text.startswith("tl::mma_sync<")
    # Every line of the code is still there, in order, and every probe names a site.
    lines = three.code.splitlines()
    kept = iter(lines)
    assert all(any(line == other for other in kept) for line in cuda["sm_80:3"].splitlines())
    assert "#define TLP_BUFFER ((unsigned long long*)0x7f0000000000ull)" in three.code
    assert three.code.count("TLP_REC(") == len(three.sites) + 1  # and the macro itself
    if TOOLKIT is None:
        pytest.skip("no NVIDIA compiler to compile the probed code with")
    compiled = _nvcc(three.code, tmp_path)
    assert compiled.returncode == 0, compiled.stderr[-2000:]


def test_probes_in_the_seed_gemms_warp_specialised_code(build, tmp_path: Path) -> None:
    cuda = _lowered(build, "P\n=\n\n" + rst(GEMM, num_stages="0 2", params=GEMM_PARAMS,
                                             target="sm_90a"))
    two = instrument(cuda["sm_90a:2"], 0x7F0000000000, 2, 8, 64)
    assert [(s.role, s.kind, s.at) for s in two.sites[2:]] == [
        (None, "sync", "before"), (None, "sync", "after"),
        ("producer", "mbarrier_wait", "before"), ("producer", "mbarrier_wait", "after"),
        ("producer", "tma", "before"), ("producer", "tma", "after"),
        ("consumer", "mbarrier_wait", "before"), ("consumer", "mbarrier_wait", "after"),
        ("consumer", "mma", "before"), ("consumer", "mma", "after"),
        ("consumer", "arrive", "after")]
    # The elected thread's TMA issue is one site, probed around, never inside: a probe
    # there would record only where lane 0 is the elected one.
    tma = next(s for s in two.sites if s.kind == "tma")
    assert "tl::tma_load(" in tma.text
    block = two.code[two.code.index("tl_shuffle_elect<128>"):]
    assert "TLP_REC" not in block[:block.index("}")]
    assert {s.loop_var for s in two.sites if s.part == "loop"} == {"ko", "ko_1"}
    unpipelined = instrument(cuda["sm_90a:0"], 0x7F0000000000, 2, 4, 64)
    assert {s.kind for s in unpipelined.sites[2:]} == {"sync", "mma"}
    if TOOLKIT is None:
        pytest.skip("no NVIDIA compiler to compile the probed code with")
    compiled = _nvcc(two.code, tmp_path)
    assert compiled.returncode == 0, compiled.stderr[-2000:]


def _write(src: Path, content: str | None = None) -> None:
    folder = src / "_tlstages" / "timeline"
    folder.mkdir(parents=True, exist_ok=True)
    if content is None:
        shutil.copy(FIXTURE, folder / "nvidia-h100-80gb-hbm3.json")
    else:
        (folder / "broken.json").write_text(content)


def test_a_recording_is_drawn_under_the_schedule_figures(build, tmp_path: Path) -> None:
    src = tmp_path / "src"
    _write(src)
    result = build({"index.rst": PAGE}, srcdir=src)
    assert result.warnings == ""
    box = result.part("tl-timeline")
    figure = box.iter("svg")[0]
    assert figure.attrs["role"] == "img"
    desc = figure.iter("desc")[0].astext()
    assert desc.startswith("Measured timeline of timed on NVIDIA H100 80GB HBM3, one block")
    assert "num_stages=1: 26.0 µs a launch (probed: 28.6 µs, +10 %); the warp waits 37 %" \
        in desc
    assert "num_stages=3: 18.4 µs a launch (probed: 20.4 µs, +11 %); the warp waits 6 %" \
        in desc
    caption = result.part("tl-timeline-caption").astext()
    assert caption.startswith("Recorded on NVIDIA H100 80GB HBM3 (sm_80 code compiled for "
                              "sm_90a), driver 580.159.04, CUDA 13.0")
    assert "Every recorded warp ran its commits, waits, barrier operations and tensor-core " \
           "work in the order the schedule plans" in caption
    rows = result.table("tl-timeline")
    assert rows[0] == ["variant", "time a launch (probed: cost)", "recorded", "waiting",
                       "at __syncthreads", "on tensor cores", "issuing copies",
                       "cycles per iteration"]
    assert rows[1][:4] == ["num_stages=1", "26.0 µs a launch (probed: 28.6 µs, +10 %)",
                           "2 warps", "37 %"]
    assert rows[1][4:] == ["2 %", "35 %", "6 %", "2293"]
    assert rows[2][:4] == ["num_stages=3", "18.4 µs a launch (probed: 20.4 µs, +11 %)",
                           "2 warps", "6 %"]
    # Under the schedule figures, in the figure part.
    figures = result.part("tl-figures")
    assert figures.iter("svg")[-1].attrs["class"].startswith("tlt-")


def test_a_recording_in_latex_and_text(build, tmp_path: Path) -> None:
    src = tmp_path / "src"
    _write(src)
    latex = build({"index.rst": PAGE}, "latex", srcdir=src)
    assert latex.warnings == ""
    tex = next(latex.outdir.glob("*.tex")).read_text()
    assert "\\begin{tikzpicture}" in tex
    assert "Measured on NVIDIA H100 80GB HBM3: timed, one block" in tex
    assert "waiting (cp.async wait, mbarrier wait)" in tex
    text = build({"index.rst": PAGE}, "text", srcdir=src)
    written = (text.outdir / "index.txt").read_text()
    assert "Measured timeline on NVIDIA H100 80GB HBM3: num_stages=1: the warp waits 37 %" \
        in " ".join(written.split())
    assert "Recorded on NVIDIA H100 80GB HBM3" in written


def test_a_recording_goes_stale_when_the_code_changes(build, tmp_path: Path) -> None:
    src = tmp_path / "src"
    _write(src)
    edited = PAGE.replace("block_K=64", "block_K=32")
    marked = build({"index.rst": edited}, srcdir=src)
    assert "timed: the timeline recorded on NVIDIA H100 80GB HBM3 for num_stages 1 3 is " \
           "of other code than the page lists; run tlstages timeline again " \
           "[tlstages.timeline]" in marked.warnings
    assert marked.table("tl-timeline")[1][0] == "stale: num_stages=1"
    assert "num_stages=1 (stale)" in marked.part("tl-timeline").iter("desc")[0].astext()
    hidden = build({"index.rst": edited}, srcdir=src,
                   confoverrides={"tlstages_bench_stale": "hide"})
    assert "tl-timeline" not in hidden.html()


def test_a_bad_timeline_file_is_one_warning(build, tmp_path: Path) -> None:
    src = tmp_path / "src"
    _write(src, json.dumps({"schema": 1, "gpu": {"name": "X"}, "directives": {
        "timed": {"variants": {"1": {"fingerprint": "f", "plain": {"median_ms": 1,
                                                                    "p20_ms": 1, "p80_ms": 1},
                                     "probed": {"median_ms": 1, "p20_ms": 1, "p80_ms": 1},
                                     "sites": [], "warps": [{"block": 0, "warp": 0,
                                                             "events": [[3, 0, 5]]}]}}}}}))
    result = build({"index.rst": PAGE}, srcdir=src)
    assert result.warnings.count("[tlstages.timeline]") == 1
    assert "timeline file ignored: broken.json: timed 1: an event must be [site, " \
           "iteration, cycle] of a listed site" in result.warnings


def test_the_books_recording_is_valid_and_as_planned() -> None:
    data = load(BOOK, validate)
    assert set(data["directives"]) == {"gemm-sm80", "gemm-sm90a"}
    for entry in data["directives"].values():
        for recording in entry["variants"].values():
            assert recording["same_code"] and recording["same_output"]
            assert order_problems(recording) == []
    with pytest.raises(BenchFileError, match="not a tl-pipeline timeline file"):
        validate({"schema": 99}, "x.json")


def test_the_commands_helpers_on_the_cpu() -> None:
    from sphinx_tlstages.cli.timeline import dumps, relative, runs_on
    from sphinx_tlstages.core.plan.targets import parse_target
    from sphinx_tlstages.core.results.probes import WarpRecord

    assert runs_on(parse_target("sm_80"), "sm_90a")
    assert runs_on(parse_target("sm_90a"), "sm_90a")
    assert not runs_on(parse_target("sm_90a"), "sm_100a")  # arch-specific code
    assert not runs_on(parse_target("sm_100a"), "sm_90a")
    assert not runs_on(parse_target("gfx942"), "sm_90a")
    records = [WarpRecord(0, 0, [(0, -1, 1000), (5, 0, 1100)], 64, 0),
               WarpRecord(0, 1, [(0, -1, 990), (5, 0, 1200)], 70, 0),
               WarpRecord(1, 0, [(0, -1, 7), (5, 0, 9)], 1, 0)]
    assert [w["events"] for w in relative(records)] == [
        [[0, -1, 10], [5, 0, 110]], [[0, -1, 0], [5, 0, 210]], [[0, -1, 0], [5, 0, 2]]]
    data = json.loads(FIXTURE.read_text())
    text = dumps(data)
    assert json.loads(text) == data and text == FIXTURE.read_text()
    assert max(map(len, text.splitlines())) > 1000  # a warp's events on one line


COMPILE_TWICE = """
import sys
from sphinx_tlstages.core.protocol.messages import Task
from sphinx_tlstages.core.results.cuda import visible_cuda
from sphinx_tlstages.core.results.probes import instrument
from sphinx_tlstages.worker import lowering
from sphinx_tlstages.worker import timeline
task = Task(sys.argv[1], "kernel.py", "matmul",
            (("M", "256"), ("N", "256"), ("K", "256"), ("block_M", "128"), ("block_N", "128"),
             ("block_K", "64"), ("threads", "128")), 2, {"kind": "cuda", "arch": "sm_80"})
page = lowering.lower_variant(task, compile_now=False)
plain = timeline.compile_kernel(task, "sm_90a")
probed = timeline.compile_kernel(task, "sm_90a",
                                 lambda code: instrument(code, 0x7f0000000000, 1, 4, 64))
assert visible_cuda(plain.cuda.splitlines()) == visible_cuda(page["cuda"].splitlines())
assert probed.cuda == plain.cuda and probed.probed is not None
source = probed.kernel.get_kernel_source()
assert "TLP_REC(" in source and "TLP_REC(" not in plain.kernel.get_kernel_source()
print("ok")
"""


@pytest.mark.skipif(TOOLKIT is None, reason="no NVIDIA compiler")
def test_the_code_the_page_lists_is_compiled_twice_for_the_gpus_arch() -> None:
    # Through TileLang's own JIT, with its callbacks taken over: in a child process, which
    # imports TileLang (this one must not). nvcc runs; only loading the cubin needs a GPU.
    done = subprocess.run([sys.executable, "-c", COMPILE_TWICE, GEMM], capture_output=True,
                          text=True, env={**os.environ, "PATH": f"{Path(TOOLKIT.nvcc).parent}:"
                                          f"{os.environ.get('PATH', '')}"})
    assert done.stdout.strip().endswith("ok"), done.stderr[-3000:]
