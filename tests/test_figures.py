"""Figures on built pages, for every builder: inline SVG in HTML (theme hooks, text
alternatives), one sentence per figure in text, PDF in LaTeX; the same bytes in any
folder, serial or parallel; drawn once and reused by warm rebuilds."""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sphinx_tlstages.core.figures import pdf
from sphinx_tlstages.ext import figures as figure_visitors
from sphinx_tlstages.ext import latex_figures as latex

from .conftest import Built, build_once
from .kernels import GEMM, GEMM_PARAMS, rst

ROOT = Path(__file__).resolve().parent.parent
AMPERE = rst(GEMM, "On Ampere", num_stages="2 3", params=GEMM_PARAMS, name="figs-sm80")
HOPPER = rst(GEMM, "On Hopper", num_stages="0 2", params=GEMM_PARAMS, target="sm_90a",
             name="figs-sm90a")
PAGE = "Figures\n=======\n\n" + AMPERE + "\n" + HOPPER
LATEX = {"latex_documents": [("index", "book.tex", "T", "A", "manual")]}
SVG = re.compile(r"<svg .*?</svg>", re.S)


@pytest.fixture(scope="module")
def html(tmp_path_factory: pytest.TempPathFactory, shared_cache: Path) -> Built:
    return build_once(tmp_path_factory.mktemp("figures") / "src", {"index.rst": PAGE})


def test_one_figure_per_schedule_and_a_sentence_where_there_is_none(html: Built) -> None:
    assert html.warnings == ""
    ampere, hopper = (html.part("tl-figures", index=i) for i in (0, 1))
    assert len(ampere.iter("div", cls="tl-schedule-figure")) == 2
    assert len(hopper.iter("div", cls="tl-schedule-figure")) == 1
    (note,) = hopper.iter("p", cls="tl-no-figure")
    assert note.astext() == ("num_stages=0: nothing is pipelined (no software pipeline, no "
                             "warp specialisation): num_stages has no effect on this loop.")
    desc = hopper.iter("desc")[0].astext()
    assert "Producer at ko = 0: mbarrier_wait_parity on barrier 2 (empty), parity 1, " \
           "T.copy(A[by * block_M, ko * block_K], A_shared): TMA load into A_shared[0], " \
           "completes on barrier 0" in desc
    assert "Consumer at ko = 0: mbarrier_wait_parity on barrier 0 (full), parity 0" in desc


def test_figures_are_accessible_self_contained_svg(html: Built) -> None:
    page = html.html()
    figures = SVG.findall(page)
    assert len(figures) == 3
    ids: list[str] = []
    for svg in figures:
        head = svg[:svg.index(">")]
        assert 'role="img"' in head
        labelled = re.search(r'aria-labelledby="([^"]+) ([^"]+)"', head)
        assert labelled is not None
        assert f'<title id="{labelled[1]}">' in svg and f'<desc id="{labelled[2]}">' in svg
        ids += re.findall(r' id="([^"]+)"', svg)
        assert "<script" not in svg and " on" not in head and "href=\"http" not in svg
        assert len(svg.encode()) < 40_000
    assert len(ids) == len(set(ids))  # several figures on one page never collide


def test_theme_hooks(html: Built) -> None:
    """HTML figures take every colour from CSS custom properties, text and strokes falling
    back to the page's own colour; the stylesheet maps them to the theme's variables."""
    svg = SVG.findall(html.html())[0]
    style = svg[svg.index("<style>"):svg.index("</style>")]
    assert "fill:var(--tl-fig-fg, currentColor)" in style
    assert "stroke:var(--tl-fig-fg, currentColor)" in style
    assert "fill:var(--tl-fig-v0, #E69F00)" in style  # Okabe-Ito, overridable
    fills = re.findall(r'(?:fill|stroke)="(#[0-9a-fA-F]+)"', svg)
    assert fills == []  # no colour outside the style, so no colour a theme cannot reach
    css = (ROOT / "sphinx_tlstages/ext/static/tlstages.css").read_text(encoding="utf-8")
    assert "--tl-fig-fg: var(--color-foreground-primary, currentColor);" in css
    assert re.search(r"\.tl-figure \{[^}]*overflow-x: auto;", css)


def test_text_builder_says_each_figure_in_a_sentence(build) -> None:
    result = build({"index.rst": PAGE}, buildername="text")
    text = " ".join((result.outdir / "index.txt").read_text(encoding="utf-8").split())
    assert "<svg" not in text
    assert ("Schedule figure for num_stages=3: 2 prologue step(s), then the steady state ×14 "
            "(commit, wait<2>), then 2 epilogue step(s) (wait<1>, wait<0>); shared buffers "
            "A_shared (3 versions), B_shared (3 versions).") in text
    assert ("Schedule figure for num_stages=2: the producer warp group (128 threads) waits "
            "on an empty barrier (2, 3) and TMA-loads A/B_shared into ring slot ko mod 2, "
            "completing on a full barrier (0, 1); the consumer warp group (128 threads) "
            "waits on the full barrier, computes, and arrives on the empty one.") in text
    assert "num_stages=0: nothing is pipelined" in text
    assert "(3, 128, 64)" in text and "pipelined, depth 3" in text  # the tables stay


def _latex(build, src: Path) -> tuple[str, dict[str, bytes]]:  # type: ignore[no-untyped-def]
    result = build({"index.rst": PAGE}, buildername="latex", srcdir=src,
                   confoverrides=LATEX)
    assert result.warnings == ""
    tex = (result.outdir / "book.tex").read_text(encoding="utf-8")
    pdfs = {p.name: p.read_bytes() for p in result.outdir.glob("tlstages-figure-*.pdf")}
    return tex, pdfs


@pytest.mark.skipif(pdf.converter() is None, reason="no SVG-to-PDF converter here")
def test_latex_gets_the_same_pdf_figures_in_any_folder(build, tmp_path: Path) -> None:
    first = _latex(build, tmp_path / "one" / "src")
    second = _latex(build, tmp_path / "two" / "elsewhere")
    assert first == second
    tex, pdfs = first
    included = re.findall(r"\\sphinxincludegraphics\{\{(tlstages-figure-[0-9a-f]+)\}\.pdf\}", tex)
    assert len(included) == 3 and {f"{n}.pdf" for n in included} == set(pdfs)
    assert all(data.startswith(b"%PDF") for data in pdfs.values())
    assert "Figure left out" not in tex


def test_latex_without_a_converter_says_so_once(build, monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(svg: str, using: str | None = None) -> bytes:
        raise pdf.ConversionError("no SVG-to-PDF converter (rsvg-convert or cairosvg) is "
                                  "installed")

    monkeypatch.setattr(latex.pdf, "svg_to_pdf", missing)
    result = build({"index.rst": PAGE}, buildername="latex", confoverrides=LATEX)
    assert result.warnings.count("[tlstages.figure]") == 1
    assert "figures are left out of the LaTeX output: no SVG-to-PDF converter" \
        in result.warnings
    tex = (result.outdir / "book.tex").read_text(encoding="utf-8")
    hyphen = "\\sphinxhyphen{}"
    assert tex.count(f"Figure left out: no SVG{hyphen}to{hyphen}PDF converter was") == 3
    assert "Schedule figure for num\\_stages=3: 2 prologue step(s)" in tex
    assert not list(result.outdir.glob("tlstages-figure-*.pdf"))


def test_serial_and_parallel_builds_draw_the_same_bytes(tmp_path: Path) -> None:
    pages = {"index.rst": "Index\n=====\n\n.. toctree::\n\n   ampere\n   hopper\n",
             "ampere.rst": "Ampere\n======\n\n" + AMPERE,
             "hopper.rst": "Hopper\n======\n\n" + HOPPER}
    drawn = []
    for parallel in (0, 2):
        built = build_once(tmp_path / f"j{parallel}" / "src", pages, parallel=parallel)
        assert built.warnings == ""
        drawn.append([SVG.findall(built.html(doc)) for doc in ("ampere", "hopper")])
    assert drawn[0] == drawn[1]
    assert [len(svgs) for svgs in drawn[0]] == [2, 1]


def test_warm_rebuilds_reuse_the_drawn_figures(build, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    src = tmp_path / "src"
    first = build({"index.rst": PAGE}, srcdir=src)
    calls: list[str] = []
    original = figure_visitors.figure_svg

    def counted(node, theme):  # type: ignore[no-untyped-def]
        calls.append(theme)
        return original(node, theme)

    monkeypatch.setattr(figure_visitors, "figure_svg", counted)
    again = build({"index.rst": PAGE}, srcdir=src, freshenv=True)
    assert calls == []  # the parts' HTML, figures included, came from the cache
    assert SVG.findall(again.html()) == SVG.findall(first.html())
    edited = PAGE.replace(":num-stages: 0 2", ":num-stages: 0 3")
    build({"index.rst": edited}, srcdir=src)
    assert calls == ["html"]  # only the directive whose facts changed is drawn again


@pytest.mark.skipif(shutil.which("rsvg-convert") is None, reason="needs rsvg-convert")
def test_pdf_is_byte_identical_across_runs_and_dates(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    svg = ('<svg xmlns="http://www.w3.org/2000/svg" width="40" height="20">'
           '<rect width="40" height="20" fill="#E69F00"/><text x="2" y="14">v0</text></svg>')
    first = pdf.svg_to_pdf(svg, "rsvg-convert")
    assert first == pdf.svg_to_pdf(svg, "rsvg-convert")
    assert b"/CreationDate (19700101000000" in first  # SOURCE_DATE_EPOCH unset: the epoch
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "86400")
    assert pdf.svg_to_pdf(svg, "rsvg-convert") != first  # the date honoured, not "now"


@pytest.mark.skipif(importlib.util.find_spec("cairosvg") is None, reason="needs cairosvg")
def test_cairosvg_gives_the_same_pdf_in_two_processes(tmp_path: Path) -> None:
    """The fallback converter (a fresh machine without rsvg-convert) is deterministic too."""
    svg = ('<svg xmlns="http://www.w3.org/2000/svg" width="40" height="20">'
           '<rect width="40" height="20" fill="#0072b2"/><text x="2" y="14">k+1</text></svg>')
    code = ("import sys; from sphinx_tlstages.core.figures import pdf; "
            "sys.stdout.buffer.write(pdf.svg_to_pdf(sys.stdin.read(), using='cairosvg'))")
    outputs = []
    for folder in ("one", "two"):
        (tmp_path / folder).mkdir()
        outputs.append(subprocess.run([sys.executable, "-c", code], input=svg.encode(),
                                      capture_output=True, check=True,
                                      cwd=tmp_path / folder).stdout)
    assert outputs[0] == outputs[1] and outputs[0].startswith(b"%PDF")
