"""Kernel source lines linked to the CUDA lines they produced (HTML)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sphinx_tlstages.core.results.cuda import source_map
from sphinx_tlstages.core.results.line_links import attribute

from .conftest import Built, build_once
from .html_tree import Element
from .kernels import GEMM, GEMM_PARAMS, rst

# The kernel's first line is document line 6: kernel line k is document line k + 5.
PAGE = "Links\n=====\n\n" + rst(GEMM, "Linked", num_stages="2 3", params=GEMM_PARAMS,
                                name="linked", show="source cuda")
FIRST = PAGE.splitlines().index("   @tilelang.jit") + 1


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, shared_cache: Path) -> Built:
    return build_once(tmp_path_factory.mktemp("links") / "src", {"index.rst": PAGE})


def _listing(built: Built, index: int) -> Element:
    return built.part("tl-linked", index=index)


def test_builds_clean_with_the_script(built: Built) -> None:
    assert built.warnings == ""
    assert (built.outdir / "_static" / "tlstages.js").is_file()
    assert re.search(r'<script defer="defer" src="_static/tlstages\.js', built.html())


def test_each_cuda_line_names_its_kernel_line_in_a_gutter(built: Built) -> None:
    lines = _listing(built, 0).iter(cls="tl-cu")
    copies = [el for el in lines if el.attrs.get("data-tl-line") == "18"]
    assert copies, "no CUDA line came from kernel line 18 (T.copy of A)"
    assert all(el.iter(cls="tl-gutter")[0].astext() == str(18 + FIRST - 1) for el in copies)
    assert any("tl::cp_async_gs<16>" in el.astext() for el in copies)
    # The pipeliner's own commits belong to no kernel line.
    commits = [el for el in lines if "tl::cp_async_commit();" in el.astext()]
    assert commits and all("data-tl-line" not in el.attrs or el.attrs["data-tl-line"] == "17"
                           for el in commits)
    assert any("data-tl-line" not in el.attrs for el in commits)


def test_gemm_template_lines_go_to_the_one_gemm_call_marked_inferred(built: Built) -> None:
    lines = _listing(built, 1).iter(cls="tl-cu")
    mma = [el for el in lines if "tl::mma_sync<" in el.astext()]
    assert mma and all(el.attrs.get("data-tl-line") == "20" for el in mma)
    assert all("tl-inferred" in el.classes for el in mma)
    assert "through TileLang's tilelang/" in mma[0].iter(cls="tl-gutter")[0].attrs["title"]


def test_source_lines_carry_their_counts_per_variant(built: Built) -> None:
    source = built.part("tl-linked-source")
    line = next(el for el in source.iter(cls="tl-src-line") if el.attrs["data-tl-line"] == "18")
    assert "tl-has-cuda" in line.classes and line.attrs["tabindex"] == "0"
    counts = [sum(1 for el in _listing(built, i).iter(cls="tl-cu")
                  if el.attrs.get("data-tl-line") == "18") for i in (0, 1)]
    assert line.attrs["title"] == (f"line {18 + FIRST - 1}: num_stages=2: {counts[0]} CUDA "
                                   f"lines; num_stages=3: {counts[1]} CUDA lines")
    assert counts[1] > counts[0]  # a deeper prologue issues more copies
    blank = next(el for el in source.iter(cls="tl-src-line") if el.attrs["data-tl-line"] == "5")
    assert "tl-has-cuda" not in blank.classes and "tabindex" not in blank.attrs


def test_listing_text_is_the_cuda_without_line_directives(built: Built) -> None:
    text = _listing(built, 0).astext()
    assert "#line" not in text and 'extern "C" __global__' in text


def test_other_builders_show_plain_listings(tmp_path: Path, shared_cache: Path) -> None:
    text = build_once(tmp_path / "src", {"index.rst": PAGE}, buildername="text")
    assert "tl-gutter" not in (text.outdir / "index.txt").read_text()


MAPPED = """\
void k() {
#line 7 "kernel.py"
  extern __shared__ uchar buf[];
  float C[4];
#line 16 "kernel.py"
  #pragma unroll
  for (int i = 0; i < 4; ++i) {
#line 16 "kernel.py"
    C[i] = 0;
  }
  tl::cp_async_commit();
#line 17 "kernel.py"
  for (int ko = 0; ko < 15; ++ko) {
    __syncthreads();
#line 122 "tilelang/cuda/op/gemm/gemm_mma.py"
    for (int ki = 0; ki < 4; ++ki) {
      tl::mma_sync<16>(C);
    }
  }
}
"""


def test_source_map_follows_line_directive_regions() -> None:
    found = [(m.text.strip(), m.line, m.within, bool(m.template))
             for m in source_map(MAPPED, "kernel.py")]
    assert found == [
        ("void k() {", None, None, False),
        ("extern __shared__ uchar buf[];", 7, 7, False),
        ("float C[4];", None, None, False),  # a directive covers the next line only
        ("#pragma unroll", 16, 16, False),
        ("for (int i = 0; i < 4; ++i) {", 16, 16, False),
        ("C[i] = 0;", 16, 16, False),
        ("}", 16, 16, False),
        ("tl::cp_async_commit();", None, None, False),
        ("for (int ko = 0; ko < 15; ++ko) {", 17, 17, False),
        ("__syncthreads();", 17, 17, False),
        ("for (int ki = 0; ki < 4; ++ki) {", None, 17, True),
        ("tl::mma_sync<16>(C);", None, 17, True),
        ("}", None, 17, True),
        ("}", 17, 17, False),
        ("}", None, None, False),
    ]


def test_template_lines_need_exactly_one_caller() -> None:
    source = "\n" * 16 + "for ko in T.Pipelined(4):\n    T.gemm(A, B, C)\n    T.gemm(D, E, F)\n"
    links = attribute(source_map(MAPPED, "kernel.py"), source)
    assert {link.line for link in links if link.template} == {None}  # two gemms: ambiguous
    one = "\n" * 16 + "for ko in T.Pipelined(4):\n    T.copy(A, B)\n    T.gemm(A, B, C)\n"
    links = attribute(source_map(MAPPED, "kernel.py"), one)
    assert [(link.line, link.inferred) for link in links if link.template] == [(19, True)] * 3
