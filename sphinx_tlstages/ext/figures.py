"""Drawing :class:`~.nodes.tl_figure` nodes: one visitor per builder, as
``sphinx.ext.graphviz`` does (the LaTeX one is in :mod:`.latex_figures`, which registers them).

- HTML (and singlehtml, epub): the figure inlined as SVG in a ``<div class="tl-figure">``,
  colours from CSS custom properties (see :mod:`..core.figures`); it scrolls sideways
  when the page is narrower than the figure. These visitors run when the parts' HTML is
  written, so figures are part of the cached fragments.
- LaTeX: the print-theme drawing written as TikZ picture code (:mod:`..core.figures.tikz`),
  scaled down to the line width when wider: LaTeX draws it, no converter needed.
- text, man, texinfo: the node's child, the sentence saying what the figure shows.
"""

from __future__ import annotations

from typing import Any

from docutils import nodes

from ..core.figures import Drawing, chart_drawing, schedule_drawing, to_svg
from .nodes import tl_figure


def figure_drawing(node: tl_figure, theme: str) -> Drawing:
    """The drawing of a figure node in ``theme`` (``html`` or ``print``)."""
    if node["kind"] == "chart":
        return chart_drawing(node["data"], theme, node["ident"])
    return schedule_drawing(node["data"], node["covers"], theme, node["ident"])


def visit_html(self: Any, node: tl_figure) -> None:
    classes = " ".join(node["classes"])
    self.body.append(f'<div class="{classes}">{to_svg(figure_drawing(node, "html"))}</div>\n')
    raise nodes.SkipNode


def through(self: Any, node: tl_figure) -> None:
    """Builders without pictures write the node's child: the sentence."""
