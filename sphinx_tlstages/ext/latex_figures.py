"""Figures in LaTeX output, and the registration of every builder's figure visitor.

Each :class:`~.nodes.tl_figure` is written as TikZ picture code in the document
(:mod:`..core.figures.tikz`): LaTeX draws it in the document's own fonts, so the PDF needs
no converter and no system library, and its text can be searched. Its text is escaped by
the LaTeX writer itself (``self.encode``), as the rest of the document is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from docutils import nodes

from ..core.figures.tikz import to_tikz
from .figures import figure_drawing, through, visit_html
from .nodes import tl_figure

if TYPE_CHECKING:
    from sphinx.application import Sphinx


def visit_latex(self: Any, node: tl_figure) -> None:
    self.body.append("\n\n" + to_tikz(figure_drawing(node, "print"), self.encode) + "\n")
    raise nodes.SkipNode


def setup_figures(app: Sphinx) -> None:
    app.add_node(tl_figure, html=(visit_html, None), latex=(visit_latex, None),
                 text=(through, through), man=(through, through),
                 texinfo=(through, through))
