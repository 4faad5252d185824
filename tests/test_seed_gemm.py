"""The chapter-22 experiment end to end: the seed GEMM on sm_80, lowered for real.

Expected values are the compiler's, as measured and recorded in the project notes: the
stage/order arrays PipelinePlanning writes, the version dimension InjectSoftwarePipeline
adds, the merged allocation and the cp.async waits in the CUDA.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from sphinx_tlstages.core.results.stamps import tilelang_version

from .conftest import Built, build_once
from .kernels import GEMM, GEMM_PARAMS, myst, rst

PAGE = "Seed GEMM\n=========\n\n" + rst(
    GEMM, "GEMM with a deeper pipeline", num_stages="1 2 3 4", target="sm_80",
    params=GEMM_PARAMS, name="gemm-stages",
) + "\nSee :ref:`gemm-stages`.\n"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, shared_cache: Path) -> Built:
    return build_once(tmp_path_factory.mktemp("seed") / "src", {"index.rst": PAGE})


def test_builds_without_warnings(built: Built) -> None:
    assert built.warnings == ""


def test_sphinx_process_never_imports_tilelang_or_torch(built: Built) -> None:
    assert "tilelang" not in sys.modules
    assert "torch" not in sys.modules
    assert "tvm" not in sys.modules


def test_root_and_parts_carry_their_classes(built: Built) -> None:
    html = built.html()
    for cls in ("tl-pipeline", "tl-summary", "tl-annotations", "tl-shared", "tl-sync",
                "tl-diff"):
        assert f'class="{cls}' in html or f" {cls}" in html, cls
    assert 'id="tl-gemm-stages"' in html


def test_caption_names_kernel_target_and_version(built: Built) -> None:
    caption = built.part("tl-caption").astext()
    assert "GEMM with a deeper pipeline" in caption
    assert "matmul" in caption and "sm_80" in caption
    assert f"TileLang {tilelang_version()}" in caption
    assert "M=1024 N=1024 K=1024" in caption


def test_summary_rows(built: Built) -> None:
    rows = built.table("tl-summary")
    assert rows[0][:4] == ["num_stages", "schedule", "threads",
                           "shared memory / block (of 166,912 B)"]
    by_stage = {row[0]: row for row in rows[1:]}
    assert by_stage["1"][1] == "pipelined, depth 1"
    assert by_stage["3"][1] == "pipelined, depth 3"
    assert by_stage["3"][3] == "98,304 B (59 %)"
    assert by_stage["4"][3] == "131,072 B (79 %)"
    assert by_stage["3"][6] == "<2> <1> <0>"
    assert by_stage["1"][6] == "<0> <0>"
    assert all(int(row[7]) > 50 for row in rows[1:])


def test_annotation_table_has_stage_and_order_per_statement(built: Built) -> None:
    rows = built.table("tl-annotations")
    assert rows[0] == ["statement", "line", "num_stages=1", "num_stages=2", "num_stages=3",
                       "num_stages=4"]
    statements = [row[0] for row in rows[1:]]
    assert statements == ["T.copy(A[by * block_M, ko * block_K], A_shared)",
                          "T.copy(B[bx * block_N, ko * block_K], B_shared)",
                          "T.gemm(A_shared, B_shared, C_local, transpose_B=True)"]
    cells = [row[2:] for row in rows[1:]]
    # stage [0,0,1] order [1,2,0] at ns1; [0,0,1] [0,1,2] at ns2; [0,0,2], [0,0,3] after.
    assert [c[0] for c in cells] == ["stage 0, order 1", "stage 0, order 2", "stage 1, order 0"]
    assert [c[1] for c in cells] == ["stage 0, order 0", "stage 0, order 1", "stage 1, order 2"]
    assert cells[2][2:] == ["stage 2, order 2", "stage 3, order 2"]


def test_annotation_lines_are_document_lines(built: Built) -> None:
    rows = built.table("tl-annotations")
    page_lines = PAGE.splitlines()
    for row in rows[1:]:
        line = int(row[1])
        assert row[0] in page_lines[line - 1], (line, row[0])


def test_shared_buffers_show_the_version_dimension(built: Built) -> None:
    rows = {row[0]: row[1:] for row in built.table("tl-shared")}
    assert rows["A_shared"] == ["(128, 64) float16, 16,384 B", "(2, 128, 64) float16, 32,768 B",
                                "(3, 128, 64) float16, 49,152 B",
                                "(4, 128, 64) float16, 65,536 B"]
    assert rows["merged dynamic allocation"][2] == "98,304 B"
    assert rows["total of the buffers"] == ["32,768 B", "65,536 B", "98,304 B", "131,072 B"]


def test_sync_table_spells_what_tilelang_emits(built: Built) -> None:
    rows = {row[0]: row[1:] for row in built.table("tl-sync")}
    assert rows["tl::cp_async_wait<N>()"] == ["<0> <0>", "<1> <0>", "<2> <1> <0>",
                                             "<3> <2> <1> <0>"]
    assert rows["tl::cp_async_commit()"] == ["2", "2", "3", "4"]
    assert "tl::mma_sync" in rows
    assert "tl::tma_load" not in rows  # no TMA on sm_80: listed as absent instead
    assert "tl::tma_load" in built.part("tl-sync").astext()


def test_diffs_are_collapsible_with_summaries(built: Built) -> None:
    html = built.html()
    summaries = re.findall(r'<details class="tl-collapsible tl-diff-item"><summary>([^<]*)',
                           html)
    assert [s.split(":")[0] for s in summaries] == [
        "num_stages 1 → 2", "num_stages 2 → 3", "num_stages 3 → 4"]
    assert all(re.search(r"\+\d+ -\d+ lines$", s) for s in summaries)
    assert html.count('class="tl-collapsible tl-cuda-item"') == 4
    assert 'class="highlight-diff' in html and 'class="highlight-text' in html


def test_cuda_downloads_are_normalised(built: Built) -> None:
    """Each variant's code twice: numbered as the listing (no #line directives), and with
    the directives that map it to the kernel."""
    html = built.html()
    listed = re.findall(r'href="(_tlstages/[0-9a-f]{12}/gemm-stages-ns\d\.cu)"', html)
    links = re.findall(r'href="(_tlstages/[0-9a-f]{12}/gemm-stages-ns\d-lines\.cu)"', html)
    assert len(listed) == len(links) == 4
    for link in listed:
        assert "#line" not in (built.outdir / link).read_text(encoding="utf-8")
    for link in links:
        text = (built.outdir / link).read_text(encoding="utf-8")
        assert '#line' in text and '"kernel.py"' in text
        assert not re.search(r'#line \d+ "/', text), "absolute path left in the CUDA"
        assert "tl::cp_async_gs<16>" in text
    assert str(Path.home()) not in html and str(built.outdir) not in html


def test_ref_target_resolves_to_the_directive(built: Built) -> None:
    assert 'href="#tl-gemm-stages"' in built.html()


MYST_PAGE = "# Seed GEMM in MyST\n\nSome prose.\n\n" + myst(
    GEMM, "GEMM (MyST)", num_stages="2 3", target="sm_80", params=GEMM_PARAMS, name="gemm-md",
)


def test_myst_page_gives_the_same_facts(build) -> None:
    result = build({"index.md": MYST_PAGE})
    assert result.warnings == ""
    rows = {row[0]: row[1:] for row in result.table("tl-shared")}
    assert rows["A_shared"] == ["(2, 128, 64) float16, 32,768 B",
                                "(3, 128, 64) float16, 49,152 B"]
    lines = MYST_PAGE.splitlines()
    for row in result.table("tl-annotations")[1:]:
        assert row[0] in lines[int(row[1]) - 1]
