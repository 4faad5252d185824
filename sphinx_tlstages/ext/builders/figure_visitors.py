"""The visitors of :class:`~..nodes.tl_figure`, one per builder, in one place as
``sphinx.ext.graphviz`` keeps its own; the nodes are made in :mod:`..render.figure_nodes`, the
drawings in :mod:`...core.figures`.

- HTML (and singlehtml, epub): the figure inlined as SVG in a ``<div class="tl-figure">``,
  colours from CSS custom properties (see :mod:`...core.figures`); it scrolls sideways
  when the page is narrower than the figure. These visitors run when the parts' HTML is
  written, so figures are part of the cached fragments.
- LaTeX: the print-theme drawing written as TikZ picture code (:mod:`...core.figures.tikz`):
  LaTeX draws it in the document's own fonts, so the PDF needs no converter and no system
  library, and its text can be searched. Its text is escaped by the LaTeX writer itself
  (``self.encode``), as the rest of the document is; ``sphinxtlstages.sty`` scales it down
  to the line width when it is wider.
- text, man, texinfo: the node's child, the sentence saying what the figure shows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from docutils import nodes

from ..nodes import tl_figure

if TYPE_CHECKING:
    from sphinx.application import Sphinx

    from ...core.figures import Drawing


def figure_drawing(node: tl_figure, theme: str) -> Drawing:
    """The drawing of a figure node in ``theme`` (``html`` or ``print``)."""
    # Imported here: a build whose parts all come from the fragment cache draws nothing,
    # and the drawing code was a tenth of the extension's import time.
    from ...core.figures import (
        chart_drawing,
        occupancy_drawing,
        schedule_drawing,
        timeline_drawing,
    )

    if node["kind"] == "chart":
        return chart_drawing(node["data"], theme, node["ident"])
    if node["kind"] == "timeline":
        return timeline_drawing(node["data"], theme, node["ident"])
    if node["kind"] == "occupancy":
        return occupancy_drawing(node["data"], theme, node["ident"])
    return schedule_drawing(node["data"], node["covers"], theme, node["ident"])


def visit_html(self: Any, node: tl_figure) -> None:
    from ...core.figures import to_svg

    classes = " ".join(node["classes"])
    self.body.append(f'<div class="{classes}">{to_svg(figure_drawing(node, "html"))}</div>\n')
    raise nodes.SkipNode


def visit_latex(self: Any, node: tl_figure) -> None:
    from ...core.figures.tikz import to_tikz

    self.body.append("\n\n" + to_tikz(figure_drawing(node, "print"), self.encode) + "\n")
    raise nodes.SkipNode


def through(self: Any, node: tl_figure) -> None:
    """Builders without pictures write the node's child: the sentence."""


def setup_figures(app: Sphinx) -> None:
    app.add_node(tl_figure, html=(visit_html, None), latex=(visit_latex, None),
                 text=(through, through), man=(through, through),
                 texinfo=(through, through))
