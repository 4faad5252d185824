"""The extension's own docutils nodes, all format-neutral.

``tl_pipeline_placeholder`` stands where a directive was until its results exist;
``tl_collapsible`` is a titled block that HTML shows as ``<details>`` and every other
builder replaces by its title and a note (see :mod:`.html` and :mod:`.render`);
``tl_figure`` is a picture drawn by each builder's own visitor (:mod:`.figures`).
"""

from __future__ import annotations

from docutils import nodes


class tl_pipeline_placeholder(nodes.General, nodes.Element):
    """Replaced after reading by the rendered directive; attribute ``name``."""


class tl_collapsible(nodes.General, nodes.Element):
    """A block with a one-line ``summary`` attribute, collapsed in HTML."""


class tl_figure(nodes.General, nodes.Element):
    """A schedule figure or a benchmark chart, as data: ``kind`` (``schedule`` or
    ``chart``), ``data`` (what :mod:`..core.figures` draws), ``covers`` (the variants a
    schedule stands for), ``ident`` (unique on the page). Its one child is the sentence
    that says what it shows, which builders without pictures print instead."""


def skip(translator: object, node: nodes.Element) -> None:
    raise nodes.SkipNode
