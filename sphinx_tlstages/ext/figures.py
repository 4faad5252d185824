"""Drawing :class:`~.nodes.tl_figure` nodes: one visitor per builder, as
``sphinx.ext.graphviz`` does.

- HTML (and singlehtml, epub): the figure inlined as SVG in a ``<div class="tl-figure">``,
  colours from CSS custom properties (see :mod:`..core.figures`); it scrolls sideways
  when the page is narrower than the figure. These visitors run when the parts' HTML is
  written, so figures are part of the cached fragments.
- LaTeX: the print-theme SVG converted to PDF (:mod:`..core.figures.pdf`) and written into
  the output folder under a name made of its digest (written once, the same bytes on every
  run), then ``\\sphinxincludegraphics``, which scales it down to the line width. Without a
  converter the output says so in one line, with the figure's sentence, and the build
  warns once (``tlstages.figure``).
- text, man, texinfo: the node's child, the sentence saying what the figure shows.
"""

from __future__ import annotations

import hashlib
import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Any

from docutils import nodes

from ..core.figures import chart, pdf, schedule_svg
from ..core.files import write_atomic
from .messages import warn
from .nodes import tl_figure

if TYPE_CHECKING:
    from sphinx.application import Sphinx

_WARNED: weakref.WeakSet[Any] = weakref.WeakSet()  # builders told there is no converter


def figure_svg(node: tl_figure, theme: str) -> str:
    """The SVG of a figure node in ``theme`` (``html`` or ``print``)."""
    if node["kind"] == "chart":
        return chart.chart_svg(node["data"], theme, node["ident"])
    return schedule_svg(node["data"], node["covers"], theme, node["ident"])


def visit_html(self: Any, node: tl_figure) -> None:
    classes = " ".join(node["classes"])
    self.body.append(f'<div class="{classes}">{figure_svg(node, "html")}</div>\n')
    raise nodes.SkipNode


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


def _through(self: Any, node: tl_figure) -> None:
    """Builders without pictures write the node's child: the sentence."""


def setup_figures(app: Sphinx) -> None:
    app.add_node(tl_figure, html=(visit_html, None), latex=(visit_latex, None),
                 text=(_through, _through), man=(_through, _through),
                 texinfo=(_through, _through))
