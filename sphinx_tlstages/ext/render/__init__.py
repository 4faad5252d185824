"""Turning a directive's results into docutils nodes, the same for every builder.

The root is a container of class ``tl-pipeline`` holding a caption and the parts the
directive shows, each declared once in :mod:`sphinx_tlstages.core.parts` (its class,
``tl-summary``, ``tl-figures``, ...) and drawn by the renderer a module of this package
registers for its word (:mod:`.parts`). Long texts (diffs, full CUDA) go into
:class:`tl_collapsible` nodes, which only HTML keeps; pictures into :class:`tl_figure`
nodes, which each builder draws its own way. Variants that differ in num_stages alone and
lowered alike are shown as one column, with a sentence under the caption saying so.
"""

from __future__ import annotations

import functools
from importlib import import_module

from docutils import nodes

from ...core.kernel.listing import Listing
from ...core.plan.spec import DirectiveSpec, VariantSpec
from ...core.plan.variants import alike_within, merge_unchanged, unchanged_sentence
from ...core.results.result import Result
from .cuda import literal
from .parts import Context, Drawn, Rows, render_parts, renders, unregistered
from .tables import code


def caption(spec: DirectiveSpec, version: str | None) -> nodes.paragraph:
    first = spec.variants[0]
    para = nodes.paragraph(classes=["tl-caption"])
    para += nodes.strong(text=spec.title)
    para += nodes.Text(" — kernel ")
    para += code(first.factory)
    targets = ", ".join(t.label for t in spec.targets)
    para += nodes.Text(f", target{'s' if len(spec.targets) > 1 else ''} {targets}, "
                       f"TileLang {version or 'not installed'}")
    params = spec.params or (() if spec.sweep else first.params)
    if params:
        para += nodes.Text(", ")
        para += code(" ".join(f"{k}={v}" for k, v in params))
    if spec.sweep:
        para += nodes.Text(", sweeping ")
        para += code(" ".join(f"{k}={','.join(v)}" for k, v in spec.sweep))
    return para


def _snapshot_note(rows: list[tuple[VariantSpec, Result]]) -> nodes.Node | None:
    stored = [v.heading for v, r in rows if r.get("from_snapshot")]
    if not stored:
        return None
    return nodes.paragraph(
        text="TileLang could not lower this kernel where this page was built: "
             f"{'; '.join(stored)} are shown from the committed snapshot, "
             "unverified.", classes=["tl-from-snapshot"])


def _unchanged_note(merged: list[VariantSpec]) -> nodes.Node | None:
    if not merged:
        return None
    return nodes.paragraph(text=" ".join(unchanged_sentence(v) for v in merged),
                           classes=["tl-unchanged"])


def _written_note(spec: DirectiveSpec, factory: str) -> nodes.Node | None:
    if not spec.written_depth:
        return None
    several = len(spec.written_depth) > 1
    para = nodes.paragraph(classes=["tl-note", "tl-as-written"])
    # A depth computed from the arguments reads ``num_stages = <expression> with ...``.
    verb = "computes its pipeline depth{} from its arguments" \
        if any(" = " in said for _, said in spec.written_depth) else "fixes its pipeline depth{}"
    para += nodes.Text(f"The kernel {verb.format('s' if several else '')} (")
    for i, (line, said) in enumerate(spec.written_depth):
        para += nodes.Text("; " if i else "")
        para += code(said) if said.startswith("num_stages=") and " " not in said \
            else nodes.Text(said)
        # Numbered as the kernel listing numbers it (document lines for an inline kernel).
        para += nodes.Text(f", line {(spec.kernel_line or 1) + line - 1}")
    para += nodes.Text("), so it is lowered as written. To compare depths, give ")
    para += code(factory)
    para += nodes.Text(" a ")
    para += code("num_stages")
    para += nodes.Text(f" parameter and pass it to {'its loops' if several else 'that loop'}.")
    return para


def kernel_listing(spec: DirectiveSpec) -> nodes.Element:
    """The kernel as listed: whole, or the part the listing options cut, each line
    numbered as the tables number statements (document lines, or the file's own)."""
    listing = spec.listing or Listing(spec.variants[0].source)
    block = literal(listing.text, "python")
    block["linenos"] = True
    block["highlight_args"] = {"linenostart": (spec.kernel_line or 1) + listing.start - 1}
    if listing.emphasize:
        block["highlight_args"]["hl_lines"] = list(listing.emphasize)
    if not listing.caption:
        return block
    # What literalinclude's :caption: makes: every writer captions such a container.
    # An id, which writers of numbered code blocks require of a captioned one.
    wrapper = nodes.container("", literal_block=True, classes=["literal-block-wrapper"],
                              ids=[f"{spec.node_id}-listing"])
    wrapper += nodes.caption(listing.caption, listing.caption)
    wrapper += block
    return wrapper


def render(spec: DirectiveSpec, rows: list[tuple[VariantSpec, Result]],
           context: Context) -> nodes.container:
    """The whole directive as nodes."""
    root = render_head(spec, rows, context)
    load_renderers()
    root.extend(render_parts(spec, rows, context))
    return root


def render_head(spec: DirectiveSpec, rows: list[tuple[VariantSpec, Result]],
                context: Context) -> nodes.container:
    """The root (class ``tl-pipeline``, the ``:ref:`` target) and its caption."""
    root = nodes.container(classes=["tl-pipeline"], ids=[spec.node_id])
    root += caption(spec, context.version)
    note = _snapshot_note(rows)
    if note is not None:
        root += note
    unchanged = _unchanged_note(merge_unchanged(rows)[1])
    if unchanged is not None:
        root += unchanged
    partly = alike_within(rows)
    if partly:
        root += nodes.paragraph(text=" ".join(partly), classes=["tl-unchanged"])
    written = _written_note(spec, spec.variants[0].factory)
    if written is not None:
        root += written
    if spec.asserts:
        claims = nodes.paragraph(classes=["tl-asserts"])
        claims += nodes.Text("Checked on every build, for every variant: ")
        for i, (_, expression) in enumerate(spec.asserts):
            claims += nodes.Text("; " if i else "")
            claims += code(expression)
        claims += nodes.Text(".")
        root += claims
    return root


@renders("source")
def _source(spec: DirectiveSpec, rows: Rows, context: Context) -> Drawn:
    return Drawn([kernel_listing(spec)])


@functools.cache
def load_renderers() -> None:
    """Import the parts' modules, each registering its part's renderer (see .parts).
    Once, and only when a part is drawn: a build whose pages all come from the fragment
    cache never imports them, nor the drawing code under them."""
    for module in ("annotations", "cuda", "figure_nodes", "fit", "gemm", "passes",
                   "resources", "shared", "summary", "sync"):
        import_module(f".{module}", __name__)
    assert not unregistered(), f"parts without a renderer: {unregistered()}"


__all__ = ["Context", "load_renderers", "render", "render_head", "render_parts"]
