"""Figures in LaTeX output, and the registration of every builder's figure visitor.

The print-theme SVG of each :class:`~.nodes.tl_figure` is converted to PDF
(:mod:`..core.figures.pdf`) and written into the output folder under a name made of its
digest (converted once, the same bytes on every run and in any folder), then included
with ``\\sphinxincludegraphics``, which scales it down to the line width. Without a
converter the output says so in one line, with the figure's sentence, and the build
warns once (``tlstages.figure``).
"""

from __future__ import annotations

import hashlib
import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Any

from docutils import nodes

from ..core.figures import pdf
from ..core.files import write_atomic
from .figures import figure_svg, through, visit_html
from .messages import warn
from .nodes import tl_figure

if TYPE_CHECKING:
    from sphinx.application import Sphinx

_WARNED: weakref.WeakSet[Any] = weakref.WeakSet()  # builders told there is no converter


def pdf_name(svg: str) -> str:
    return f"tlstages-figure-{hashlib.sha256(svg.encode()).hexdigest()[:16]}.pdf"


def _write_pdf(outdir: Path, svg: str) -> str:
    """The file name of ``svg``'s PDF in ``outdir``, converted unless already there;
    raises :class:`pdf.ConversionError`."""
    name = pdf_name(svg)
    path = outdir / name
    if not path.is_file():
        write_atomic(path, pdf.svg_to_pdf(svg))
    return name


def visit_latex(self: Any, node: tl_figure) -> None:
    svg = figure_svg(node, "print")
    try:
        name = _write_pdf(Path(self.builder.outdir), svg)
    except pdf.ConversionError as exc:
        if self.builder not in _WARNED:
            _WARNED.add(self.builder)
            warn(f"figures are left out of the LaTeX output: {exc} (install rsvg-convert, "
                 "e.g. the librsvg2-bin package, or sphinx-tlstages[pdf])", "figure",
                 location=node)
        text = node.children[0].astext() if node.children else ""
        self.body.append("\n\n\\noindent\\sphinxstyleemphasis{"
                         + self.encode("Figure left out: no SVG-to-PDF converter was "
                                       "installed where this document was built.")
                         + "} " + self.encode(text) + "\n\n")
        raise nodes.SkipNode from None
    stem = name.removesuffix(".pdf")
    self.body.append(f"\n\n\\begin{{center}}\n\\sphinxincludegraphics{{{{{stem}}}.pdf}}\n"
                     "\\end{center}\n\n")
    raise nodes.SkipNode


def setup_figures(app: Sphinx) -> None:
    app.add_node(tl_figure, html=(visit_html, None), latex=(visit_latex, None),
                 text=(through, through), man=(through, through),
                 texinfo=(through, through))
