"""What builders without HTML get (latex, text, man, texinfo and any other).

- Nodes of ours a builder has no visitor for become their plain stand-ins
  (:func:`..nodes.replace_undrawable`; HTML builders do this too, for a node without an
  HTML visitor), and the build log says once per build what each builder left out.
- Tables with a column per variant are split into tables that fit the line, and every
  table gets column widths from its cells' text (:mod:`.table_fit`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from docutils import nodes

from ..collector import all_directives
from ..messages import info
from ..nodes import drawable, replace_undrawable, tl_nodes, translator
from .table_fit import LATEX, TEXT, fit_columns, split_variant_columns

if TYPE_CHECKING:
    from sphinx.application import Sphinx
    from sphinx.builders import Builder


def note_left_out(app: Sphinx, builder: Builder) -> None:
    """On ``write-started``: say once per build what this builder shows in place of
    parts it cannot draw (each page says so in one line, too)."""
    if translator(app) is None or not all_directives(app.env):
        return
    for cls in tl_nodes():
        if not drawable(app, cls):
            info(f"tl-pipeline: the {builder.name} builder shows {cls.stand_in}")


def for_print(app: Sphinx, root: nodes.Element) -> None:
    """Everything a non-HTML builder needs done to one rendered directive."""
    replace_undrawable(app, root)
    latex = app.builder.format == "latex"
    measure = LATEX if latex else TEXT
    split_variant_columns(root, measure)
    fit_columns(root, measure, latex)


def setup_plain(app: Sphinx) -> None:
    app.connect("write-started", note_left_out)
