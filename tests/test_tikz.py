"""The TikZ writer: every kind of shape, colours defined for what is used, LaTeX's own
escaping, the same bytes every time; and, where TeX is installed, the picture compiles
with the extension's LaTeX package under pdflatex and xelatex."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from sphinx_tlstages.core.figures import schedule_drawing, to_svg
from sphinx_tlstages.core.figures.drawing import Drawing, Text
from sphinx_tlstages.core.figures.tikz import to_tikz

from .test_figure_drawing import gemm

STY = Path(__file__).resolve().parent.parent / "sphinx_tlstages" / "ext" / "texinputs"


def encode(text: str) -> str:
    """A stand-in for the LaTeX writer's escaping, visible in the output."""
    return text.replace("_", r"\_").replace("&", r"\&")


def every_shape() -> Drawing:
    pic = Drawing("tlf-test", "print")
    pic.rect(10, 10, 40, 20, "v1", rx=3)
    pic.rect(60, 10, 20, 50, "stale", hatch=True)
    pic.rect(58, 8, 24, 54, "accent", outline=2.4)
    pic.text(10, 80, "A_shared & B", "fg m", "middle", 9.5, "bold")
    pic.text(5, 60, "TFLOP/s", "muted", rotate=-90)
    pic.line(0, 90, 100, 90, "grid", 0.6, dash=(6, 3))
    pic.path((10, 100), [(20, 100), (20, 110)], "stroke", 1.2)
    pic.path((30, 100), [(60, 100, 70, 120, 90, 120)], "accent", 1.1, (4, 2), arrow=True)
    return pic.finish(120, 130, "A test figure", "Every shape once.", 2)


def test_every_shape_is_written() -> None:
    tex = to_tikz(every_shape(), encode)
    assert tex.startswith("% A test figure. Every shape once.\n\\begin{tlstagesfigure}\n")
    assert r"\useasboundingbox (0,0) rectangle (120,130);" in tex
    assert r"\fill[tlv1, rounded corners=2.25pt] (10,10) rectangle (50,30);" in tex
    assert r"\fill[pattern=north east lines, pattern color=tlgrid] (60,10) rectangle (80,60);" \
        in tex
    assert r"\draw[tlaccent, line width=1.8pt] (58,8) rectangle (82,62);" in tex
    assert (r"\node[anchor=base, inner sep=0pt, text=tlfg, font=\fontsize{7.12}{8.55}"
            r"\selectfont\ttfamily\bfseries] at (10,80) {A\_shared \& B};") in tex
    assert re.search(r"text=tlmuted, rotate=90, font=[^]]*\\sffamily\] at \(5,60\)", tex)
    assert r"\draw[tlgrid, line width=0.45pt, dash pattern=on 4.5pt off 2.25pt] (0,90) -- " \
        r"(100,90);" in tex
    assert r"(10,100) -- (20,100) -- (20,110);" in tex
    assert (r"\draw[tlaccent, line width=0.83pt, dash pattern=on 3pt off 1.5pt, "
            r"-{Stealth[length=4.5pt, width=4pt]}] (30,100) .. controls (60,100) and "
            r"(70,120) .. (90,120);") in tex


def test_only_the_colours_used_are_defined_from_the_print_theme() -> None:
    tex = to_tikz(every_shape(), encode)
    defined = dict(re.findall(r"\\definecolor\{(\w+)\}\{HTML\}\{([0-9A-F]{6})\}", tex))
    assert defined == {"tlv1": "56B4E9", "tlstale": "9E9E9E", "tlgrid": "C8C8C8",
                       "tlaccent": "D55E00", "tlfg": "1A1A1A", "tlmuted": "555555",
                       "tlstroke": "1A1A1A"}
    body = tex.split(r"\useasboundingbox")[1].split(r"\end{tikzpicture}")[0]
    used = set(re.findall(r"\b(tl[a-z0-9]+)\b", body))
    assert used <= set(defined)


def test_the_svg_writer_reads_the_same_drawing() -> None:
    svg = to_svg(every_shape())
    assert 'fill="url(#tlf-test-h)"' in svg and '<pattern id="tlf-test-h"' in svg
    assert 'marker-end="url(#tlf-test-a)"' in svg and 'stroke-dasharray="4 2"' in svg
    assert 'transform="rotate(-90 5 60)"' in svg
    assert 'class="accent" fill="none" stroke-width="2.4"' in svg


def test_a_schedule_figure_is_every_shape_of_its_drawing_and_deterministic() -> None:
    pic = schedule_drawing(gemm(3, 16), ["num_stages=3"], "print", "here")
    tex = to_tikz(pic, encode)
    assert tex == to_tikz(schedule_drawing(gemm(3, 16), ["num_stages=3"], "print", "here"),
                          encode)
    texts = [s for s in pic.shapes if isinstance(s, Text)]
    assert tex.count(r"\node[") == len(texts) > 10
    assert tex.count("\n") == len(pic.shapes) + 6 + tex.count(r"\definecolor") \
        + sum(1 for s in pic.shapes if getattr(s, "hatch", False))
    assert "(hover" not in tex  # the print drawing has no hover hint


# The fonts Sphinx's LaTeX output uses under each engine.
FONTS = {"pdflatex": "\\usepackage[T1]{fontenc}\\usepackage[utf8]{inputenc}"
                     "\\usepackage{tgtermes,tgheros}\\renewcommand{\\ttdefault}{txtt}",
         "xelatex": "\\usepackage{fontspec}\\setmainfont{FreeSerif}"
                    "\\setsansfont{FreeSans}\\setmonofont{FreeMono}"}
DOC = r"""\documentclass{article}
%s
\usepackage{graphicx,amssymb}
\usepackage{sphinxtlstages}
\begin{document}
%s
\end{document}
"""


@pytest.mark.parametrize("engine", ["pdflatex", "xelatex"])
def test_the_picture_compiles_with_the_package(engine: str, tmp_path: Path) -> None:
    if shutil.which(engine) is None:
        pytest.skip(f"{engine} is not installed (nox -s pdf builds the book's PDF)")
    pic = schedule_drawing(gemm(3, 16), ["num_stages=3"], "print", "here")
    body = to_tikz(pic, encode) + to_tikz(every_shape(), encode)
    (tmp_path / "fig.tex").write_text(DOC % (FONTS[engine], body), encoding="utf-8")
    done = subprocess.run([engine, "-interaction=nonstopmode", "-halt-on-error", "fig.tex"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "TEXINPUTS": f"{STY}:"})
    log = (tmp_path / "fig.log").read_text(encoding="utf-8", errors="replace")
    assert done.returncode == 0, log[-3000:]
    assert "Missing character" not in log
    if shutil.which("pdftotext"):
        text = subprocess.run(["pdftotext", "fig.pdf", "-"], cwd=tmp_path,
                              capture_output=True, text=True, check=True).stdout
        assert "steady state" in text and "num_stages = 3" in text
