"""Drawing :class:`~.nodes.tl_figure` nodes: one visitor per builder, as
``sphinx.ext.graphviz`` does (the LaTeX one is in :mod:`.latex`, which registers them).

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

from typing import Any

from docutils import nodes

from ..core.figures import chart, schedule_svg
from .nodes import tl_figure


def figure_svg(node: tl_figure, theme: str) -> str:
    """The SVG of a figure node in ``theme`` (``html`` or ``print``)."""
    if node["kind"] == "chart":
        return chart.chart_svg(node["data"], theme, node["ident"])
    return schedule_svg(node["data"], node["covers"], theme, node["ident"])


def visit_html(self: Any, node: tl_figure) -> None:
    classes = " ".join(node["classes"])
    self.body.append(f'<div class="{classes}">{figure_svg(node, "html")}</div>\n')
    raise nodes.SkipNode


def through(self: Any, node: tl_figure) -> None:
    """Builders without pictures write the node's child: the sentence."""
