"""The parts of a block agree, say what they are about, read at a glance, and every CUDA
line a sentence names can be followed: on kernels of our own, lowered for real.

- ``split``: each variant's code holds two kernels (a split GEMM of 128 threads and its
  combine of 64, with barriers of its own): a summary row each, the hazard row saying
  which one it checked, the sync part saying its counts are both kernels'.
- ``loops``: one kernel with two pipelined loops: their waits are given per loop.
- ``gfx950``: cp.async calls that TileLang's HIP templates make synchronous stores: the
  summary says so beside its count, in the words of the hazard check's verdict.
- ``rolling``: a sweep whose variants share a verdict (one row, read as one set) and differ
  in the CUDA lines of their unneeded ``__syncthreads`` (a row each, the repeated barrier
  one sentence with its lines, each linked to its line of the listing); the download
  numbered as the listing.
- ``trips``: one schedule figure for two trip counts, described without ``n = n``.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from .conftest import Built, build_once
from .html_tree import Element, parse
from .kernels import HERE, ROOT

SHAPES = HERE / "shapes"
BOOK_KERNELS = ROOT / "book" / "kernels"

PAGE = """\
Voice
=====

.. tl-pipeline:: Split, then combine
   :name: split
   :file: /kernels/split_then_combine.py
   :num-stages: 2 3
   :target: sm_80
   :params: M=256 N=256 K=256 block_M=64 block_N=64 block_K=32 splits=2
   :show: source sync cuda

.. tl-pipeline:: Two loops
   :name: loops
   :file: /kernels/two_loops.py
   :num-stages: 2
   :target: sm_80
   :params: M=256 N=256 K=256 block_M=64 block_N=64 block_K=32
   :show: figure

.. tl-pipeline:: Synchronous copies
   :name: gfx950
   :file: /kernels/gemm.py
   :num-stages: 2
   :target: gfx950
   :params: M=1024 N=1024 K=1024 block_M=128 block_N=128 block_K=32 threads=256
   :show: sync

.. tl-pipeline:: Rolling sums, swept
   :name: rolling
   :file: /kernels/rolling_sum.py
   :num-stages: 2
   :target: sm_80
   :params: K=16
   :sweep: N=256,512
   :show: cuda

.. tl-pipeline:: Rolling sums, two trip counts
   :name: trips
   :file: /kernels/rolling_sum.py
   :num-stages: 2
   :target: sm_80
   :params: N=256
   :sweep: K=16,32
   :show: figure
"""


def _project(srcdir: Path) -> None:
    kernels = srcdir / "kernels"
    kernels.mkdir(parents=True, exist_ok=True)
    for path in (SHAPES / "split_then_combine.py", SHAPES / "two_loops.py",
                 BOOK_KERNELS / "gemm.py", BOOK_KERNELS / "rolling_sum.py"):
        shutil.copy(path, kernels / path.name)


def _built(tmp_path_factory: pytest.TempPathFactory, buildername: str) -> Built:
    srcdir = tmp_path_factory.mktemp(f"voice-{buildername}")
    _project(srcdir)
    return build_once(srcdir, {"index.rst": PAGE}, buildername)


@pytest.fixture(scope="module")
def html(tmp_path_factory: pytest.TempPathFactory) -> Built:
    return _built(tmp_path_factory, "html")


def _block(built: Built, name: str) -> Element:
    return next(e for e in parse(built.html()).iter(cls="tl-pipeline")
                if e.attrs.get("id") == f"tl-{name}")


def _table(block: Element, cls: str, index: int = 0) -> list[list[str]]:
    """The ``index``-th table of class ``cls`` in ``block``, as rows of cell texts."""
    tables = [t for t in block.iter("table") if cls in t.classes]
    return [[cell.astext() for cell in row.children
             if isinstance(cell, Element) and cell.tag in ("td", "th")]
            for row in tables[index].iter("tr")]


def _summary(built: Built, name: str) -> list[list[str]]:
    return _table(_block(built, name).iter(cls="tl-summary")[0], "tl-table")


def _hazards(built: Built, name: str) -> list[list[str]]:
    return _table(_block(built, name), "tl-hazards")


def test_the_build_is_clean(html: Built) -> None:
    assert html.warnings == ""


def test_each_kernel_of_a_variant_has_a_row_of_its_own(html: Built) -> None:
    """Threads, __syncthreads, copies, waits and lines per kernel; the first kernel's
    threads are the recorded fact's, which its __launch_bounds__ repeats."""
    rows = _summary(html, "split")[1:]
    assert [row[0] for row in rows] == [
        "2 · split_combine_kernel", "2 · split_combine_kernel_1",
        "3 · split_combine_kernel", "3 · split_combine_kernel_1"], rows
    first, combine = rows[0], rows[1]
    assert first[1:3] == ["pipelined, depth 2", "128"] and combine[1:3] == ["not pipelined", "64"]
    assert (first[4], first[5], first[6]) == ("3", "4 cp.async calls", "<1> <0>")
    assert (combine[4], combine[5], combine[6]) == ("2", "none", "none")
    assert re.fullmatch(r"\d+ \(lines \d+–\d+\)", combine[7]), combine
    # The sync part counts the whole code: both kernels' barriers, and says so.
    block = _block(html, "split")
    sync = {row[0]: row[1:] for row in _table(block.iter(cls="tl-sync")[0], "tl-table")}
    assert sync["__syncthreads()"][0] == str(int(first[4]) + int(combine[4]))
    said = " ".join(p.astext() for p in block.iter(cls="tl-kernels"))
    assert "split_combine_kernel and split_combine_kernel_1" in said
    assert "the summary counts each kernel's own" in said


def test_the_verdict_says_which_kernel_it_is_about(html: Built) -> None:
    rows = _hazards(html, "split")
    assert [row[0] for row in rows[1:]] == ["2", "3"]
    for row in rows[1:]:
        assert row[1].startswith("none found: RAW and WAR on A_s, B_s"), row
        assert ("Of split_combine_kernel, the first of the 2 kernels, which the check "
                "reads; split_combine_kernel_1 is not checked.") in row[1], row


def test_two_pipelined_loops_give_their_waits_per_loop(html: Built) -> None:
    row = _summary(html, "loops")[1]
    assert row[1] == ("line two_loops.py:24: pipelined, depth 2; "
                      "line two_loops.py:29: pipelined, depth 2"), row
    assert row[6] == "line two_loops.py:24: <1> <0>; line two_loops.py:29: <1> <0>", row


def test_synchronous_copies_are_said_so_where_the_verdict_says_so(html: Built) -> None:
    row = _summary(html, "gfx950")[1]
    assert row[5] == "4 cp.async calls (synchronous stores on HIP)", row
    block = _block(html, "gfx950")
    assert "synchronous stores in its HIP templates" in block.iter(cls="tl-hip-copies")[0].astext()
    verdict = _hazards(html, "gfx950")[1][1]
    assert verdict.startswith("not checked: cp.async on gfx950 is a synchronous store"), verdict


def test_a_merged_row_reads_as_one_set_and_holds_for_each(html: Built) -> None:
    """Both N share the verdict: one row, labelled as one set. Their unneeded barriers
    sit at different CUDA lines: a row each, the three barriers one sentence."""
    rows = _hazards(html, "rolling")[1:]
    assert rows[0] == ["num_stages=2, N 256 and 512",
                       "none found: RAW and WAR on S over 2 slots; 16 cp.async groups"], rows
    sentence = re.compile(r"__syncthreads at CUDA lines (\d+), (\d+), (\d+) \(from kernel line "
                          r"rolling_sum\.py:9\): not needed by any shared-memory dependence")
    found = {row[0]: sentence.search(row[1]) for row in rows[1:]}
    assert set(found) == {"N=256, num_stages=2", "N=512, num_stages=2"}, rows
    assert all(found.values()), rows
    assert found["N=256, num_stages=2"].groups() != found["N=512, num_stages=2"].groups()


def test_every_cuda_line_named_links_to_that_line_of_the_listing(html: Built) -> None:
    """Each number links to an id on the page; the line with that id is the listing's line
    of that number (counted without #line directives) and prints the barrier."""
    page = html.html()
    links = re.findall(r'<a class="tl-cuda-ref[^"]*" href="#(tl-rolling-([\w-]+)-L(\d+))"',
                       page)
    assert len(links) == 6, links
    block = _block(html, "rolling")
    for ident, label, number in links:
        listing = next(d for d in block.iter("div", cls="tl-cuda-listing")
                       if any(e.attrs.get("id") == ident for e in d.iter(cls="tl-cu")))
        lines = listing.iter(cls="tl-cu")
        assert lines[int(number) - 1].attrs.get("id") == ident
        assert lines[int(number) - 1].astext() == "__syncthreads();", (ident, label)


def test_the_download_is_numbered_as_the_listing(html: Built) -> None:
    block = _block(html, "rolling")
    link = block.iter("a", cls="tl-download")[0]
    lines_link = block.iter("a", cls="tl-download-lines")[0]
    listed = (html.outdir / link.attrs["href"]).read_text(encoding="utf-8").splitlines()
    kept = (html.outdir / lines_link.attrs["href"]).read_text(encoding="utf-8")
    assert "#line" not in "\n".join(listed) and '#line' in kept
    shown = block.iter("div", cls="tl-cuda-listing")[0].iter(cls="tl-cu")
    assert [line.astext() for line in shown] == [" ".join(t.split()) for t in listed]


def test_a_figure_of_two_trip_counts_says_n_once(html: Built) -> None:
    figures = _block(html, "trips").iter(cls="tl-figures")[0]
    desc = " ".join(d.astext() for d in figures.iter("desc"))
    assert "n = n" not in desc and "loop over n tiles" in desc, desc
    assert "(n = 16)" in desc and "(n = 32)" in desc


@pytest.mark.parametrize("buildername", ["text", "latex"])
def test_other_builders_print_the_lines_and_the_kernels(
        tmp_path_factory: pytest.TempPathFactory, buildername: str) -> None:
    built = _built(tmp_path_factory, buildername)
    assert built.warnings == ""
    out = next(built.outdir.glob("*.txt" if buildername == "text" else "*.tex"))
    text = " ".join(out.read_text(encoding="utf-8").replace("|", " ").split())
    if buildername == "latex":
        text = text.replace(r"\_", "_").replace(r"\sphinxhyphen{}", "-")
    assert re.search(r"__syncthreads at CUDA lines \d+, \d+, \d+ \(from kernel line "
                     r"rolling_sum\.py:9\)", text), text[-3000:]
    assert "split_combine_kernel_1" in text
    assert "synchronous stores on HIP" in text
