"""The extension's own docutils nodes, all format-neutral.

``tl_pipeline_placeholder`` stands where a directive was until its results exist; it
carries its own document's name, as ``sphinx.ext.todo``'s nodes do, because builders that
assemble one output from many documents (singlehtml, latex, texinfo, man) resolve them all
under the root document's name.

Every other node of ours is a :class:`tl_node`: a builder draws it with its own visitor
(``app.add_node``), and a builder without one gets :meth:`tl_node.plain_run` instead
(:func:`replace_undrawable`; :mod:`.builders.plain` says so in the build log), so that no builder
drops a part silently. A new kind of part subclasses it and registers its visitors.
``tl_collapsible`` is a titled block that HTML shows as ``<details>``; other builders get
its title in a list.
``tl_figure`` is a picture drawn by each builder's own visitor (:mod:`.builders.figure_visitors`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

from docutils import nodes

if TYPE_CHECKING:
    from sphinx.application import Sphinx


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
        # A listing's language (CUDA, HIP, Metal) rides on its node; CUDA where it does not.
        languages = {n.get("language") or "CUDA" for n in run if "tl-cuda-item" in n["classes"]}
        full = f"full {languages.pop()} listings" if len(languages) == 1 else "full listings"
        what = (f"The {full} are" if listings == len(run) else
                "The diffs are" if not listings else f"The diffs and the {full} are")
        note = nodes.paragraph(classes=["tl-note", "tl-html-only"])
        note += nodes.emphasis(text=f"{what} in the HTML output.")
        return [listing, note]


class tl_figure(tl_node):
    """A schedule figure, a benchmark chart or a measured timeline, as data: ``kind``
    (``schedule``, ``chart``, ``occupancy`` or ``timeline``), ``data`` (what
    :mod:`..core.figures` draws), ``covers`` (the variants a schedule stands for),
    ``ident`` (unique on the page). Its one child is the sentence
    that says what it shows, which builders without pictures print instead."""

    stand_in = ("each schedule figure, benchmark chart and measured timeline as the "
                "sentence that describes it")


def skip(translator: object, node: nodes.Element) -> None:
    raise nodes.SkipNode


def translator(app: Sphinx) -> type | None:
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
    return hasattr(translator(app), f"visit_{cls.__name__}")


def tl_nodes(cls: type[tl_node] | None = None) -> list[type[tl_node]]:
    """Every subclass of :class:`tl_node` (of ``cls``), however deep."""
    found = []
    for sub in (cls or tl_node).__subclasses__():
        found += [sub, *tl_nodes(sub)]
    return found


def replace_undrawable(app: Sphinx, root: nodes.Element) -> None:
    """Swap each run of consecutive sibling nodes of ours the writer cannot draw for
    their plain stand-ins (one note per run)."""
    undrawable = tuple(c for c in tl_nodes() if not drawable(app, c))
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
        parent[:] = children
