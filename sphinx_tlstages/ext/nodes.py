"""The extension's own docutils nodes, all format-neutral.

``tl_pipeline_placeholder`` stands where a directive was until its results exist; it
carries its own document's name, as ``sphinx.ext.todo``'s nodes do, because builders that
assemble one output from many documents (singlehtml, latex, texinfo, man) resolve them all
under the root document's name.

Every other node of ours is a :class:`tl_node`: a builder draws it with its own visitor
(``app.add_node``), and a builder without one gets :meth:`tl_node.plain_run` instead (see
:mod:`.plain`), so that no builder drops a part silently. ``tl_collapsible`` is a titled
block that HTML shows as ``<details>``; other builders get its title in a list.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from docutils import nodes


class tl_pipeline_placeholder(nodes.General, nodes.Element):
    """Replaced after reading by the rendered directive; attributes ``name`` and
    ``docname`` (the document the directive stands in)."""


class tl_node(nodes.General, nodes.Element):
    """A part only some builders can draw: subclasses say what the others get."""

    #: What a builder without a visitor for this node shows in its place, for the one
    #: line the build log gives it ("the latex builder shows ...").
    stand_in: ClassVar[str] = "a plain-text stand-in"

    def plain(self) -> list[nodes.Node]:
        """Plain nodes that every builder can write; by default the node's children."""
        return [child.deepcopy() for child in self.children]

    @classmethod
    def plain_run(cls, run: Sequence[tl_node]) -> list[nodes.Node]:
        """Stand-ins for consecutive siblings of this class (one note for the lot)."""
        return [node for item in run for node in item.plain()]


class tl_collapsible(tl_node):
    """A block with a one-line ``summary`` attribute, collapsed in HTML."""

    stand_in = ("each CUDA or IR diff and each full CUDA listing as its one-line summary; "
                "the text itself is in the HTML output")

    @classmethod
    def plain_run(cls, run: Sequence[tl_node]) -> list[nodes.Node]:
        listing = nodes.bullet_list(classes=["tl-collapsed"])
        for node in run:
            listing += nodes.list_item("", nodes.paragraph(text=node["summary"]))
        listings = sum("tl-cuda-item" in n["classes"] for n in run)
        what = ("The full CUDA listings are" if listings == len(run) else
                "The diffs are" if not listings else "The diffs and the full CUDA listings are")
        note = nodes.paragraph(classes=["tl-note", "tl-html-only"])
        note += nodes.emphasis(text=f"{what} in the HTML output.")
        return [listing, note]


def skip(translator: object, node: nodes.Element) -> None:
    raise nodes.SkipNode
