"""The listing options (literalinclude's) on :file: kernels written as users write them.

``tests/kernels/listing`` holds our own kernels in the styles found outside this project: a
cookbook example with a ``main()`` that times and checks against torch and comments in
Chinese, and a module of several kernels with a macro and a launch class. Each directive
lists a part of its file; the file is lowered whole, and every line number stays the
file's own.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from sphinx.config import Config

from sphinx_tlstages.ext.listing import ListingError, read_listing

from .conftest import CONF, Built, build_once
from .html_tree import parse
from .kernels import myst

KERNELS = Path(__file__).parent / "kernels" / "listing"
COMMON = "   :num-stages: 2\n   :params: M=256 N=256 K=256\n"
GEMM = "   :file: kernels/cookbook_gemm.py\n"
FUSED = "   :file: kernels/fused_kernels.py\n   :factory: gemm_bias\n"

PAGE = f"""Listings
========

.. tl-pipeline:: The factory alone
{GEMM}   :pyobject:
   :caption: 分块 GEMM
   :emphasize-lines: 15-18
{COMMON}   :show: source cuda

.. tl-pipeline:: Between markers
{GEMM}   :start-after: # --- kernel ---
   :end-before: # --- end kernel ---
{COMMON}   :show: source

.. tl-pipeline:: From a marker to a line
{GEMM}   :start-at: @tilelang.jit
   :end-at: return main
{COMMON}   :show: source

.. tl-pipeline:: The bias GEMM of a module
{FUSED}   :pyobject: gemm_bias
{COMMON}   :show: source annotations cuda

.. tl-pipeline:: A method, at the margin
{FUSED}   :pyobject: FusedMLP.forward
   :dedent: 4
{COMMON}   :show: source

.. tl-pipeline:: Some lines
{FUSED}   :lines: 16-20
{COMMON}   :show: source annotations
"""
XELATEX = CONF + 'latex_engine = "xelatex"\n'


def _copy_kernels(srcdir: Path) -> None:
    shutil.copytree(KERNELS, srcdir / "kernels", dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("__pycache__"))


def _build(tmp: Path, files: dict[str, str], builder: str = "html", conf: str = XELATEX
           ) -> Built:
    _copy_kernels(tmp)
    return build_once(tmp, files, builder, conf=conf, warningiserror=False)


@pytest.fixture(scope="module")
def html(tmp_path_factory: pytest.TempPathFactory, shared_cache: Path) -> Built:
    return _build(tmp_path_factory.mktemp("listing") / "src", {"index.rst": PAGE})


def _listed(built: Built, index: int) -> list[tuple[int, str]]:
    """(number shown, text) of each line of the index-th kernel listing."""
    pre = built.part("tl-source", index=index).iter(tag="pre")[0]
    lines = []
    for line in pre._text().splitlines():
        match = re.fullmatch(r"\s*(\d+)(.*)", line)
        assert match, line
        lines.append((int(match[1]), match[2]))
    return lines


def _file_line(name: str, number: int) -> str:
    return (KERNELS / name).read_text(encoding="utf-8").splitlines()[number - 1]


def test_each_listing_is_its_part_numbered_as_in_the_file(html: Built) -> None:
    assert html.warnings == ""
    cases = [("cookbook_gemm.py", 10, 30), ("cookbook_gemm.py", 10, 30),
             ("cookbook_gemm.py", 10, 30), ("fused_kernels.py", 15, 32),
             ("fused_kernels.py", 62, 68), ("fused_kernels.py", 16, 20)]
    for index, (name, first, last) in enumerate(cases):
        lines = _listed(html, index)
        assert [n for n, _ in lines] == list(range(first, last + 1)), index
        dedent = 4 if index == 4 else 0
        for number, text in lines:
            assert text.rstrip("\n") == _file_line(name, number)[dedent:], (index, number)
    # The whole file was lowered all the same: main() and the macro are not listed.
    assert "def main():" not in html.part("tl-source", index=0).astext()
    assert "load_tiles(X, W" in html.part("tl-source", index=3).astext()
    assert "def load_tiles" not in html.part("tl-source", index=3).astext()


def test_caption_and_emphasis_as_literalinclude_gives_them(html: Built) -> None:
    page = html.html()
    assert re.search(r'class="code-block-caption"><span class="caption-text">分块 GEMM<', page)
    first = page.split('class="tl-pipeline')[1]  # the first directive's parts
    emphasised = [int(n) for n in re.findall(
        r'<span class="hll"><span class="linenos">\s*(\d+)</span>', first)]
    # Lines 15-18 of the listing, which starts at the file's line 10: file lines 24-27.
    assert emphasised == [24, 25, 26, 27]


def test_cuda_lines_point_at_the_listed_file_lines(html: Built) -> None:
    listing = html.part("tl-linked", index=1)  # the bias GEMM's CUDA
    lines = listing.iter(cls="tl-cu")
    gemm = [el for el in lines if "tl::mma_sync<" in el.astext()]
    assert gemm and all(el.attrs.get("data-tl-line") == "27" for el in gemm)
    assert all(el.iter(cls="tl-gutter")[0].astext() == "27" for el in gemm)
    assert "T.gemm(xs, ws, acc" in _file_line("fused_kernels.py", 27)
    shown = {str(n) for n, _ in _listed(html, 3)}
    source = html.part("tl-linked-source", index=1)
    clickable = {el.attrs["data-tl-line"] for el in source.iter(cls="tl-has-cuda")}
    assert "27" in clickable and clickable <= shown


def test_a_cuda_line_from_an_unlisted_line_says_so(html: Built) -> None:
    lines = html.part("tl-linked", index=1).iter(cls="tl-cu")
    # The macro's copies (file lines 11-12) are above the listed gemm_bias (15-32).
    outside = [el for el in lines if "tl-unshown" in el.classes]
    assert outside, "no CUDA line from the unlisted macro"
    for el in outside:
        number = int(el.attrs["data-tl-line"])
        assert not 15 <= number <= 32
        gutter = el.iter(cls="tl-gutter")[0]
        assert gutter.astext() == str(number)
        assert gutter.attrs["title"].endswith(f"line {number} of fused_kernels.py, not shown")
    assert {el.attrs["data-tl-line"] for el in outside} <= {"11", "12"}
    assert not any("tl-unshown" in el.classes
                   for el in html.part("tl-linked", index=0).iter(cls="tl-cu"))


def test_the_schedule_table_marks_an_unlisted_line(html: Built) -> None:
    listed = [row[1] for row in html.table("tl-annotations", index=0)[1:]]
    # The macro call on line 26 stands for the macro's copies, each on its own line (11
    # and 12, above the listed factory); the gemm is on the listed line 27.
    assert listed[:3] == ["fused_kernels.py:11 (not shown)", "fused_kernels.py:12 (not shown)",
                          "fused_kernels.py:27"]
    # Listing lines 16-20 only: the loop's statements are in the file, not on the page.
    cut = [row[1] for row in html.table("tl-annotations", index=1)[1:]]
    assert cut[:3] == ["fused_kernels.py:11 (not shown)", "fused_kernels.py:12 (not shown)",
                       "fused_kernels.py:27 (not shown)"]


BAD = f"""Bad
===

.. tl-pipeline:: No such object
{GEMM}   :pyobject: matmul_v2
{COMMON}   :show: source

.. tl-pipeline:: Out of range
{FUSED}   :lines: 60-200
{COMMON}   :show: source

.. tl-pipeline:: Marker not found
{GEMM}   :start-after: # --- kernels ---
   :caption: still captioned
{COMMON}   :show: source
"""


@pytest.fixture(scope="module")
def bad(tmp_path_factory: pytest.TempPathFactory, shared_cache: Path) -> Built:
    return _build(tmp_path_factory.mktemp("listing-bad") / "src", {"index.rst": BAD})


def test_bad_values_warn_at_their_line_and_list_the_whole_file(bad: Built) -> None:
    warnings = bad.warnings.splitlines()
    page = BAD.splitlines()
    expected = [(":pyobject: matmul_v2", "defines no 'matmul_v2'"),
                (":lines: 60-200", "out of range"),
                (":start-after: # --- kernels ---", "pattern not found")]
    assert len(warnings) == len(expected), bad.warnings
    for warning, (option, says) in zip(warnings, expected, strict=True):
        line = page.index(f"   {option}") + 1
        assert f"index.rst:{line}: WARNING:" in warning, warning
        assert says in warning and "the whole kernel is listed" in warning
        assert warning.endswith("[tlstages.option]")
    for index, name in enumerate(["cookbook_gemm.py", "fused_kernels.py",
                                  "cookbook_gemm.py"]):
        lines = _listed(bad, index)
        count = len((KERNELS / name).read_text(encoding="utf-8").splitlines())
        assert [n for n, _ in lines] == list(range(1, count + 1))
    assert "still captioned" in bad.html()


def test_an_inline_kernel_cannot_be_cut(tmp_path: Path, shared_cache: Path) -> None:
    source = (KERNELS / "fused_kernels.py").read_text(encoding="utf-8")
    body = "\n".join("   " + line if line else "" for line in source.splitlines())
    page = (f"T\n=\n\n.. tl-pipeline::\n   :factory: gemm_bias\n   :pyobject: gemm_bias\n"
            f"{COMMON}   :show: source\n\n{body}\n")
    built = _build(tmp_path / "src", {"index.rst": page})
    assert "index.rst:6: WARNING: :pyobject: lists part of a :file: kernel" in built.warnings
    assert "def row_softmax" in built.part("tl-source").astext()


def test_myst_fences_take_the_same_options(tmp_path: Path, shared_cache: Path) -> None:
    fence = myst("", "In MyST", file="kernels/fused_kernels.py", factory="gemm_bias",
                 pyobject="gemm_bias", num_stages="2", params="M=256 N=256 K=256",
                 show="source")
    bad_fence = myst("", "Bad", file="kernels/fused_kernels.py", factory="gemm_bias",
                     pyobject="nope", num_stages="2", params="M=256 N=256 K=256",
                     show="source")
    page = f"# MyST\n\n{fence}\n{bad_fence}"
    built = _build(tmp_path / "src", {"index.md": page})
    assert [n for n, _ in _listed(built, 0)] == list(range(15, 33))
    line = page.splitlines().index(":pyobject: nope") + 1
    assert re.search(rf"index\.md:{line}: WARNING: :pyobject: the kernel defines no 'nope'",
                     built.warnings), built.warnings


def test_latex_lists_the_part_with_the_files_numbers(tmp_path: Path,
                                                     shared_cache: Path) -> None:
    built = _build(tmp_path / "src", {"index.rst": PAGE}, "latex")
    assert built.warnings == ""
    tex = (built.outdir / "tests.tex").read_text(encoding="utf-8")
    firsts = re.findall(r"\\begin\{sphinxVerbatim\}\[[^]]*firstnumber=(\d+)", tex)
    assert firsts[:6] == ["10", "10", "10", "15", "62", "16"]
    assert r"\sphinxSetupCaptionForVerbatim{分块 GEMM}" in tex
    assert r"\fvset{hllines={, 15, 16, 17, 18,}}" in tex
    assert "共享内存中的" in tex  # xelatex prints it
    assert "编译耗时" not in tex  # main() is not listed


def test_pdflatex_gets_one_warning_naming_the_line(tmp_path: Path,
                                                   shared_cache: Path) -> None:
    page = PAGE.split(".. tl-pipeline:: Between markers")[0]
    built = _build(tmp_path / "src", {"index.rst": page}, "latex", conf=CONF)
    warnings = built.warnings.splitlines()
    assert len(warnings) == 1, built.warnings
    assert re.search(r"kernels/cookbook_gemm\.py:18: WARNING: tl-pipeline index-1: lines "
                     r"18, 23, 27 of the kernel have characters pdflatex cannot print "
                     r"\(共享内存", warnings[0])
    assert warnings[0].endswith("[tlstages.latex]")
    tex = (built.outdir / "tests.tex").read_text(encoding="utf-8")
    assert "共" not in tex and "分" not in tex
    assert r"\PYGZsh{} ?????? A?B ??" in tex


def test_text_builder_lists_the_part(tmp_path: Path, shared_cache: Path) -> None:
    page = PAGE.split(".. tl-pipeline:: Between markers")[0]
    built = _build(tmp_path / "src", {"index.rst": page}, "text")
    text = (built.outdir / "index.txt").read_text(encoding="utf-8")
    assert "def matmul(M, N, K" in text and "def main():" not in text
    assert "分块 GEMM" in text


def test_no_listing_option_lists_the_whole_file_as_before(tmp_path: Path,
                                                          shared_cache: Path) -> None:
    page = f"T\n=\n\n.. tl-pipeline::\n{FUSED}{COMMON}   :show: source\n"
    built = _build(tmp_path / "src", {"index.rst": page})
    count = len((KERNELS / "fused_kernels.py").read_text(encoding="utf-8").splitlines())
    assert [n for n, _ in _listed(built, 0)] == list(range(1, count + 1))
    assert parse(built.html()).iter(cls="code-block-caption") == []


@pytest.mark.parametrize(("given", "option", "says"), [
    ({"lines": "16,18"}, "lines", "not one run of lines"),
    ({"pyobject": "FusedMLP.forward", "dedent": "8"}, "dedent", "would strip text"),
    ({"start-after": "@T.macro", "start-at": "@T.macro"}, "start-at", "Cannot use both"),
    ({"end-at": "never written"}, "end-at", "pattern not found"),
    ({"pyobject": "", "emphasize-lines": "30"}, "emphasize-lines", "lines 1-18"),
])
def test_each_bad_value_names_its_option(given: dict[str, str], option: str,
                                         says: str) -> None:
    source = (KERNELS / "fused_kernels.py").read_text(encoding="utf-8")
    with pytest.raises(ListingError) as caught:
        read_listing(source, "fused_kernels.py", given, "gemm_bias", Config())
    assert caught.value.option == option
    assert says in str(caught.value)


def test_the_factory_is_the_default_object_and_numbers_follow_the_file() -> None:
    source = (KERNELS / "fused_kernels.py").read_text(encoding="utf-8")
    listing = read_listing(source, "fused_kernels.py", {"pyobject": "", "lines": "3-4"},
                           "row_softmax", Config())
    assert listing is not None and listing.cut
    assert listing.start == 37
    assert listing.text.splitlines() == source.splitlines()[36:38]
    assert listing.shows(38) and not listing.shows(39) and not listing.shows(36)


def tlstages(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "sphinx_tlstages", *args],
                          capture_output=True, text=True, timeout=300)


def test_tlstages_lower_prints_the_listed_part(tmp_path: Path) -> None:
    kernel = tmp_path / "fused_kernels.py"
    shutil.copy(KERNELS / "fused_kernels.py", kernel)
    common = ["lower", str(kernel), "--factory", "gemm_bias", "--params", "M=256", "N=256",
              "K=256", "--num-stages", "2"]
    done = tlstages(*common, "--pyobject", "--lines", "1-5")
    assert done.returncode == 0, done.stderr
    listed = done.stdout.split("\n\n")[0].splitlines()
    assert listed[0] == "Kernel, lines 15-19 of fused_kernels.py"
    assert listed[1:] == [f"{n:>5}  {_file_line('fused_kernels.py', n)}".rstrip()
                          for n in range(15, 20)]
    assert "fused_kernels.py:27 (not shown)" in done.stdout
    bad = tlstages(*common, "--pyobject", "nope")
    assert bad.returncode == 2
    assert "tlstages lower: --pyobject: the kernel defines no 'nope'" in bad.stderr
