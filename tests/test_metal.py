"""Apple's GPUs (Metal), and the targets TileLang has where this extension does not lower
(WebGPU, TileLang's CPU target): kernels of our own lowered for real on the CPU."""

from __future__ import annotations

import io
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sphinx_tlstages.cli.lower import lower_file

from .conftest import Built, build_once
from .html_tree import Element, parse, table_rows
from .kernels import GEMM, GEMM_PARAMS, HERE, rst

KERNELS = HERE / "metal"
TILED = "M=1024 N=1024 K=1024"

METAL = (".. tl-pipeline:: Tiled GEMM on Apple's GPUs\n"
         "   :file: kernels/tiled_gemm.py\n"
         "   :name: metal\n"
         "   :target: metal\n"
         "   :num-stages: 1 2 3\n"
         f"   :params: {TILED}\n"
         "   :show: source figure annotations shared sync gemm diff cuda passes\n"
         "   :passes: InjectSoftwarePipeline\n"
         "   :assert: gemm == [\"simdgroup_multiply_accumulate\"]\n"
         "      sync[\"cp_async\"] == 0 and sync[\"threadgroup_barrier\"] >= 2\n")
# The book's tiles (128x128x64): 32 KiB at one stage fits Apple's 32 KiB, two stages do not.
BOOK_TILES = rst(GEMM, "The book's tiles on Apple's GPUs", num_stages="1 2", target="metal",
                 params=GEMM_PARAMS, name="metal-book-tiles", show="shared",
                 expect_error="metal:2: threadgroup memory per threadgroup")
METAL4 = (".. tl-pipeline:: A gemm from device memory on metal4\n"
          "   :file: kernels/direct_gemm.py\n"
          "   :name: metal4\n"
          "   :target: metal4\n"
          "   :num-stages: 2\n"
          f"   :params: {TILED}\n"
          "   :show: gemm sync\n"
          "   :assert: gemm == [\"matmul2d\"]\n")
WEBGPU = (".. tl-pipeline:: Column sums on WebGPU\n"
          "   :file: kernels/column_sums.py\n"
          "   :name: webgpu\n"
          "   :target: webgpu\n"
          "   :params: rows=1024 cols=512\n")
CPU = (".. tl-pipeline:: Column sums on the CPU\n"
       "   :file: kernels/column_sums.py\n"
       "   :name: cpu\n"
       "   :num-stages: 1 2\n"
       "   :target: c\n"
       "   :params: rows=1024 cols=512\n")
PAGE = "Apple\n=====\n\n" + "\n".join((METAL, BOOK_TILES, METAL4, WEBGPU, CPU))


def _project(srcdir: Path, page: str) -> dict[str, str]:
    shutil.copytree(KERNELS, srcdir / "kernels", dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("__pycache__"))
    return {"index.rst": page}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, shared_cache: Path) -> Built:
    src = tmp_path_factory.mktemp("metal") / "src"
    return build_once(src, _project(src, PAGE), confoverrides={"tlstages_snapshots": "off"})


def _line(page: str, text: str, after: str) -> int:
    """The document line of the first line holding ``text`` after the one holding
    ``after``."""
    lines = page.splitlines()
    start = next(i for i, line in enumerate(lines) if after in line)
    return next(i for i, line in enumerate(lines) if i > start and text in line) + 1


def test_webgpu_and_the_cpu_are_refused_at_their_target_lines_in_words(built: Built) -> None:
    warnings = built.warnings
    webgpu = _line(PAGE, ":target: webgpu", "Column sums on WebGPU")
    cpu = _line(PAGE, ":target: c", "Column sums on the CPU")
    assert re.search(rf"index.rst:{webgpu}: WARNING: :target: target 'webgpu': TileLang runs "
                     r"the same pipeline passes for WebGPU as for CUDA, but it has no T.gemm "
                     r"implementation there", warnings), warnings
    assert re.search(rf"index.rst:{cpu}: WARNING: :target: target 'c': TileLang's CPU target "
                     r"\(c, llvm\) runs no pipeline pass", warnings), warnings
    assert "Traceback" not in warnings
    # Nothing else: the Metal pages build clean, and the over-limit variant is expected.
    assert len([line for line in warnings.splitlines() if "WARNING" in line]) == 2, warnings
    boxes = [e.astext() for e in parse(built.html()).iter(cls="tl-error")]
    assert len(boxes) == 2 and "does not lower for WebGPU" in boxes[0]
    assert "num_stages changes nothing there" in boxes[1]


def test_the_summary_speaks_of_threadgroup_memory_and_its_barriers(built: Built) -> None:
    summary = built.table("tl-summary")
    assert summary[0][3:] == ["threadgroup memory / threadgroup (of 32,768 B)",
                              "threadgroup_barrier", "async copies (calls in the code)",
                              "waits", "Metal lines"]
    rows = {row[0]: row[1:] for row in summary[1:]}
    # 64x32 fp16 tiles of A and B: 8 KiB a stage.
    assert rows["1"][2] == "8,192 B (25 %)"
    assert rows["2"][:6] == ["pipelined, depth 2", "128", "16,384 B (50 %)", "2",
                             "none: loads and stores", "none"]
    assert rows["3"][2] == "24,576 B (75 %)"
    note = built.part("tl-synchronous").astext()
    assert "pipelined loop is synchronous" in note and "threadgroup_barrier" in note


def test_the_hazard_check_says_why_it_does_not_check_metal(built: Built) -> None:
    table = next(t for t in built.part("tl-summary").iter("table")
                 if "tl-hazards" in t.attrs.get("class", ""))
    hazards = table_rows(Element("div", {}, [table]))
    assert hazards[1][0] == "1, 2 and 3"
    assert hazards[1][1].startswith(
        "not checked: no asynchronous pipeline on Metal: its copies are synchronous loads "
        "and stores into threadgroup memory, ordered by threadgroup_barrier")


def test_the_shared_buffers_against_apples_limit(built: Built) -> None:
    shared = {row[0]: row[1:] for row in built.table("tl-shared")}
    assert shared["A_tile"] == ["(64, 32) float16, 4,096 B", "(2, 64, 32) float16, 8,192 B",
                                "(3, 64, 32) float16, 12,288 B"]
    assert shared["B_tile"][2] == "(3, 32, 64) float16, 12,288 B"
    assert shared["merged allocation (one threadgroup array)"] == [
        "8,192 B", "16,384 B", "24,576 B"]
    assert shared["of the threadgroup memory a threadgroup may use"] == [
        "25 % of 32,768 B", "50 % of 32,768 B", "75 % of 32,768 B"]
    # The book's 128x128x64 tiles: exactly the limit at one stage, twice it at two.
    book = {row[0]: row[1:] for row in built.table("tl-shared", index=1)}
    assert book["of the threadgroup memory a threadgroup may use"] == [
        "100 % of 32,768 B", "200 % of 32,768 B: over the limit"]
    summary = built.table("tl-summary", index=1)
    assert summary[2][3] == "65,536 B (200 %): over the limit"


def test_the_synchronisation_as_metal_spells_it(built: Built) -> None:
    sync = {row[0]: row[1:] for row in built.table("tl-sync")}
    assert sync.pop("in the Metal code") == ["num_stages=1", "num_stages=2", "num_stages=3"]
    assert set(sync) == {"threadgroup_barrier(mem_flags::mem_threadgroup)",
                         "simdgroup_multiply_accumulate()"}
    part = built.part("tl-sync").astext()
    # What Metal lacks is not listed as absent: only what it could have had.
    assert "cp_async" not in part and "__syncthreads" not in part
    assert "simdgroup_barrier" in part and "matmul2d" in part  # absent, said once
    assert "Metal has no asynchronous copies in TileLang's code" in part


def test_each_gemm_became_simdgroup_multiply_accumulate_or_matmul2d(built: Built) -> None:
    rows = built.table("tl-gemm")
    (text, line, *cells), = rows[1:]
    assert text == "T.gemm(A_tile, B_tile, C_acc)" and line == "tiled_gemm.py:24"
    assert cells == ["simdgroup_multiply_accumulate 8x8 1"] * 3
    rule = built.part("tl-gemm").iter(cls="tl-rule")[0].astext()
    assert "only for a target with the metal4 key" in rule
    # metal4, operands from device memory: Metal 4's cooperative tensors.
    direct = built.table("tl-gemm", index=1)
    assert direct[1][2] == "matmul2d 16x32x16"
    sync = {row[0]: row[1:] for row in built.table("tl-sync", index=1)}
    assert sync["__pct_op.run() (mpp::tensor_ops::matmul2d)"] == ["4"]


def test_the_figure_draws_a_synchronous_pipeline(built: Built) -> None:
    html = built.html()
    desc = re.findall(r"<desc[^>]*>([^<]*)</desc>", html)
    # The Metal directive's three (the WebGPU and CPU directives, whose targets are said
    # and ignored, render for the default target: their figures are no pipeline of Metal).
    metal = [d for d in desc if d.startswith("Synchronous software pipeline")]
    assert len(metal) == 3 and desc[:3] == metal, desc
    assert "No commits or waits: each copy is plain loads and stores into threadgroup memory" \
        in desc[1]
    assert "tl::cp_async_commit" not in built.part("tl-figures").astext()


def test_the_metal_listing_links_its_lines_to_the_kernel(built: Built) -> None:
    html = built.html()
    kernel = (KERNELS / "tiled_gemm.py").read_text().splitlines()
    copy_a = next(n for n, line in enumerate(kernel, 1) if "T.copy(A[" in line)
    gemm = next(n for n, line in enumerate(kernel, 1) if "T.gemm(" in line)
    lines = re.findall(r'<span class="tl-cu( tl-inferred)?" data-tl-line="(\d+)">'
                       r'<span class="tl-gutter"[^>]*>\d+</span>([^\n]*)', html)
    stores = [int(n) for _, n, text in lines if "A_tile + " in text and "= A[" in text]
    assert stores and set(stores) == {copy_a}
    # The gemm's simdgroup loops come from TileLang's Metal gemm: traced to its call.
    loops = [int(n) for inferred, n, text in lines if inferred and "for (int ki" in text]
    assert loops and set(loops) == {gemm}
    assert re.search(r'class="tl-gutter"[^>]*>[^<]*</span>\s*#line', html) is None
    assert "(for Metal, which TileLang prints without them" in html
    downloads = sorted(p.name for p in Path(built.outdir, "_tlstages").rglob("metal-ns*"))
    # Each listing as shown (numbered as the page), and with the #line directives.
    assert downloads == sorted(f"metal-ns{n}{lines}.metal" for n in (1, 2, 3)
                               for lines in ("", "-lines"))
    saved = next(Path(built.outdir, "_tlstages").rglob("metal-ns2-lines.metal")).read_text()
    assert f'#line {copy_a} "tiled_gemm.py"' in saved
    assert "written from the IR's source lines" in built.part("tl-diff").astext()


def test_the_passes_part_shows_the_pipeliner_on_metal(built: Built) -> None:
    passes = built.part("tl-passes").astext()
    assert "tl.InjectSoftwarePipeline#1" in passes
    # The code printed again for its line directives is no pass of the lowering.
    assert "PointerValueTypeRewrite#2" not in passes


def test_the_text_builder_writes_a_metal_page(tmp_path: Path) -> None:
    src = tmp_path / "src"
    page = "Apple\n=====\n\n" + METAL.replace(":num-stages: 1 2 3", ":num-stages: 2")
    built = build_once(src, _project(src, page), buildername="text",
                       confoverrides={"tlstages_snapshots": "off"})
    assert built.warnings == ""
    text = (built.outdir / "index.txt").read_text(encoding="utf-8")
    flat = re.sub(r"\s+", " ", text)
    assert "loop is synchronous" in flat and "no commits or waits" in flat.lower()
    assert "The full Metal listings are in the HTML output." in flat


@pytest.mark.smoke
def test_metal_lowers_at_both_ends_of_the_tilelang_range(tmp_path: Path) -> None:
    """The smallest Metal page: one depth, the facts every supported TileLang gives."""
    src = tmp_path / "src"
    page = ("Apple\n=====\n\n.. tl-pipeline::\n   :file: kernels/tiled_gemm.py\n"
            f"   :target: metal\n   :num-stages: 2\n   :params: {TILED}\n"
            "   :show: shared sync gemm\n")
    built = build_once(src, _project(src, page), confoverrides={"tlstages_snapshots": "off"})
    assert built.warnings == ""
    summary = built.table("tl-summary")
    assert summary[1][3:6] == ["16,384 B (50 %)", "2", "none: loads and stores"]
    assert built.table("tl-gemm")[1][2] == "simdgroup_multiply_accumulate 8x8 1"
    assert built.table("tl-shared")[1][1] == "(2, 64, 32) float16, 8,192 B"


def test_tlstages_lower_on_metal(tmp_path: Path) -> None:
    kernel = tmp_path / "gemm.py"
    kernel.write_text(GEMM, encoding="utf-8")
    out = io.StringIO()
    params = [*TILED.split(), "block_M=64", "block_N=64", "block_K=32", "threads=128"]
    code = lower_file(kernel, None, params, [2, 3], ["metal"], tmp_path / "out", False,
                      out=out)
    text = out.getvalue()
    assert code == 0, text
    assert "threadgroup memory / threadgroup (of 32,768 B)" in text
    assert "24,576 B (75 %)" in text and "simdgroup_multiply_accumulate 8x8" in text
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "gemm-ns2.metal", "gemm-ns3.metal"]


# What the words at the directive say of WebGPU and the CPU target, checked against
# TileLang itself; in a process of its own (the test process never imports TileLang).
_PROBE = """
import json, sys
import tilelang
from tilelang import tvm
sys.path.insert(0, sys.argv[1])
from column_sums import column_sums
from tiled_gemm import matmul

def lower(func, kind):
    runs = []
    @tvm.instrument.pass_instrument
    class Names:
        def run_after_pass(self, mod, info):
            runs.append(str(info.name))
    target = tvm.target.Target({"kind": kind})
    try:
        with tilelang.transform.PassContext(opt_level=3, instruments=[Names()]), target:
            code = tilelang.lower(func, target=target, enable_device_compile=False).kernel_source
    except Exception as exc:
        return {"error": str(exc).strip().splitlines()[-1], "passes": runs}
    return {"code": str(code), "passes": runs}

sums = {n: column_sums.get_tir(rows=1024, cols=512, num_stages=n) for n in (1, 3)}
print(json.dumps({
    "c": {n: lower(f, "c") for n, f in sums.items()},
    "webgpu": {n: lower(f, "webgpu") for n, f in sums.items()},
    "webgpu_gemm": lower(matmul.get_tir(M=256, N=256, K=256), "webgpu"),
}))
"""


def test_the_words_about_webgpu_and_the_cpu_hold_for_this_tilelang() -> None:
    found = json.loads(subprocess.run(
        [sys.executable, "-c", _PROBE, str(KERNELS)], capture_output=True, text=True,
        check=True, timeout=600).stdout)
    # The CPU target: no pipeline pass, the same code at every depth.
    cpu = found["c"]
    assert "code" in cpu["1"] and cpu["1"]["code"] == cpu["3"]["code"]
    assert not any("Pipelin" in name for name in cpu["1"]["passes"])
    # WebGPU: the pipeline passes run (and version the buffer), but there is no T.gemm.
    webgpu = found["webgpu"]
    assert {"tl.PipelinePlanning", "tl.InjectSoftwarePipeline"} <= set(webgpu["3"]["passes"])
    assert webgpu["1"]["code"] != webgpu["3"]["code"]
    assert "tl.gemm requires a target-specific implementation" in found["webgpu_gemm"]["error"]


# The written #line directives change nothing else: TileLang's own code comes back when
# they are taken out, and a printing that is not TileLang's code is not used.
_LINES_PROBE = """
import json, sys
import tilelang
from tilelang import tvm
sys.path.insert(0, sys.argv[1])
from tiled_gemm import matmul
from sphinx_tlstages.worker.ir import source_lines
from sphinx_tlstages.worker.lowering import lower_kept

func = matmul.get_tir(M=256, N=256, K=256, num_stages=3)
kept, lined = lower_kept(func, {}, {"kind": "metal"})
target = tvm.target.Target({"kind": "metal"})
with tilelang.transform.PassContext(opt_level=3), target:
    own = tilelang.lower(func, target=target, enable_device_compile=False).kernel_source
    other = source_lines.with_line_directives(kept["final"], target, "// not this code\\n")
print(json.dumps({"lined": lined, "own": str(own), "other": other}))
"""


def test_the_written_line_directives_are_all_that_differs_from_tilelangs_metal() -> None:
    found = json.loads(subprocess.run(
        [sys.executable, "-c", _LINES_PROBE, str(KERNELS)], capture_output=True, text=True,
        check=True, timeout=600).stdout)
    lined, own = found["lined"], found["own"]
    assert "#line" not in own and lined.count("#line") > 50
    assert "".join(line for line in lined.splitlines(True)
                   if not line.lstrip().startswith("#line")) == own
    assert found["other"] == "// not this code\n"
