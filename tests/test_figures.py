"""Figures on built pages, for every builder: inline SVG in HTML (theme hooks, text
alternatives), one sentence per figure in text, TikZ pictures in LaTeX; the same bytes in any
folder, serial or parallel; drawn once and reused by warm rebuilds."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sphinx_tlstages.ext.builders import figure_visitors as figure_visitors

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
    # A figure that scrolls says so (phones hide scroll bars): marked by the script.
    assert re.search(r"\.tl-figure\.tl-overflows::before \{[^}]*content: \"Wider than "
                     r"the page: scroll sideways", css)
    script = (ROOT / "sphinx_tlstages/ext/static/tlstages.js").read_text(encoding="utf-8")
    assert 'classList.toggle("tl-overflows", fig.scrollWidth > fig.clientWidth' in script


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


def _latex(build, src: Path, **conf: str) -> str:  # type: ignore[no-untyped-def]
    result = build({"index.rst": PAGE}, buildername="latex", srcdir=src,
                   confoverrides={**LATEX, **conf})
    assert result.warnings == ""
    assert not [p for p in result.outdir.iterdir() if p.suffix in (".pdf", ".png", ".svg")]
    return (result.outdir / "book.tex").read_text(encoding="utf-8")


def test_latex_draws_each_figure_as_tikz_the_same_in_any_folder(build,
                                                               tmp_path: Path) -> None:
    tex = _latex(build, tmp_path / "one" / "src")
    assert tex == _latex(build, tmp_path / "two" / "elsewhere")
    pictures = re.findall(r"\\begin\{tlstagesfigure\}.*?\\end\{tlstagesfigure\}", tex, re.S)
    assert len(pictures) == 3  # two cp.async schedules, one warp-specialised loop
    assert "\\usepackage{sphinxtlstages}" in tex  # which loads tikz and the environment
    ampere = next(p for p in pictures if "num\\_stages = 3" in p)
    # The statements' text is escaped by the LaTeX writer, as the rest of the document.
    assert "copy(A{[}…{]}, A\\_shared)" in ampere
    assert re.search(r"\\node\[anchor=base, [^]]*\\ttfamily\\bfseries\] at \([0-9.]+,[0-9.]+\) "
                     r"\{W2\};", ampere)
    assert "\\definecolor{tlv2}{HTML}{009E73}" in ampere  # the third version's colour
    hopper = next(p for p in pictures if "producer" in p)
    # Barrier arrows, the dashed ones routed round the chips in straight segments.
    assert "-{Stealth" in hopper and "dash pattern=on" in hopper
    assert "Figure left out" not in tex


def test_xelatex_source_has_the_same_pictures(build, tmp_path: Path) -> None:
    pdflatex = _latex(build, tmp_path / "pdf" / "src")
    xelatex = _latex(build, tmp_path / "xe" / "src", latex_engine="xelatex")

    def pictures(tex: str) -> list[str]:
        return re.findall(r"\\begin\{tikzpicture\}.*?\\end\{tikzpicture\}", tex, re.S)

    assert pictures(xelatex) and len(pictures(xelatex)) == len(pictures(pdflatex))


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
    original = figure_visitors.figure_drawing

    def counted(node, theme):  # type: ignore[no-untyped-def]
        calls.append(theme)
        return original(node, theme)

    monkeypatch.setattr(figure_visitors, "figure_drawing", counted)
    again = build({"index.rst": PAGE}, srcdir=src, freshenv=True)
    assert calls == []  # the parts' HTML, figures included, came from the cache
    assert SVG.findall(again.html()) == SVG.findall(first.html())
    edited = PAGE.replace(":num-stages: 0 2", ":num-stages: 0 3")
    build({"index.rst": edited}, srcdir=src)
    assert calls == ["html"]  # only the directive whose facts changed is drawn again
