"""What builders without HTML get (latex, text, man, texinfo and any other).

- Nodes of ours a builder has no visitor for become their plain stand-ins
  (:meth:`.nodes.tl_node.plain_run`), and the build log says once what was left out.
- Tables with a column per variant are split into tables that fit the line, and every
  table gets column widths from its cells' text (:mod:`.table_fit`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from docutils import nodes

from .collector import all_directives
from .messages import info
from .nodes import tl_node
from .table_fit import LATEX, TEXT, fit_columns, split_variant_columns

if TYPE_CHECKING:
    from sphinx.application import Sphinx
    from sphinx.builders import Builder

def _translator(app: Sphinx) -> type | None:
    """The writer's translator class; None for builders that write no documents
    (dummy, linkcheck), whose lookup raises in Sphinx 8.1."""
    try:
        return app.registry.get_translator_class(app.builder)
    except AttributeError:
        return None


def drawable(app: Sphinx, cls: type[nodes.Node]) -> bool:
    """Whether this build's writer has a visitor for ``cls`` (registered or its own)."""
    builder = app.builder
    registry = app.registry.translation_handlers
    handlers = registry.get(builder.name)
    if handlers is None:
        handlers = registry.get(builder.format, {})
    if cls.__name__ in handlers:
        return True
    return hasattr(_translator(app), f"visit_{cls.__name__}")


def _subclasses(cls: type[tl_node]) -> list[type[tl_node]]:
    found = []
    for sub in cls.__subclasses__():
        found += [sub, *_subclasses(sub)]
    return found


def replace_undrawable(app: Sphinx, root: nodes.Element) -> None:
    """Swap each run of consecutive sibling nodes of ours the writer cannot draw for
    their plain stand-ins (one note per run)."""
    undrawable = tuple(c for c in _subclasses(tl_node) if not drawable(app, c))
    if not undrawable:
        return
    parents = {id(n.parent): n.parent for n in root.findall(tl_node)
               if isinstance(n, undrawable) and n.parent is not None}
    for parent in parents.values():
        children: list[nodes.Node] = []
        run: list[tl_node] = []
        for child in [*parent.children, None]:
            if run and (child is None or type(child) is not type(run[0])):
                children += type(run[0]).plain_run(run)
                run = []
            if isinstance(child, undrawable):
                run.append(child)
            elif child is not None:
                children.append(child)
        parent.children = []
        parent.extend(children)


def note_left_out(app: Sphinx, builder: Builder) -> None:
    """On ``write-started``: say once per build what this builder shows in place of
    parts it cannot draw (each page says so in one line, too)."""
    if builder.format == "html" or _translator(app) is None or not all_directives(app.env):
        return
    for cls in _subclasses(tl_node):
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
