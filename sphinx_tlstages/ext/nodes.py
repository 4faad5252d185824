"""The extension's own docutils nodes, all format-neutral.

``tl_pipeline_placeholder`` stands where a directive was until its results exist;
``tl_collapsible`` is a titled block that HTML shows as ``<details>`` and every other
builder replaces by its title and a note (see :mod:`.html` and :mod:`.render`).
"""

from __future__ import annotations

from docutils import nodes


class tl_pipeline_placeholder(nodes.General, nodes.Element):
    """Replaced after reading by the rendered directive; attribute ``name``."""


class tl_collapsible(nodes.General, nodes.Element):
    """A block with a one-line ``summary`` attribute, collapsed in HTML."""


def skip(translator: object, node: nodes.Element) -> None:
    raise nodes.SkipNode
