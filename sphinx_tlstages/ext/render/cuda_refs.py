"""A sentence's reference to lines of a variant's CUDA, as nodes that can be followed.

The hazard check and the unneeded-synchronisation rows name lines of the CUDA listing
(``#line`` directives left out, from 1: the numbering of the listing the page shows and of
the file it offers for download). In HTML, where the page lists that variant's code and
the line is within the lines it shows, each number links to its line, which the listing
writer (:func:`..builders.html.link_listings`) gives the id; elsewhere it is a number.
"""

from __future__ import annotations

from collections.abc import Iterable

from docutils import nodes

from ...core.parts import shows
from ...core.plan.spec import DirectiveSpec, VariantSpec
from ...core.results.line_links import line_spans
from ...core.results.result import Result
from .parts import Context


def anchor(spec: DirectiveSpec, variant: VariantSpec, line: int) -> str:
    """The id of one line of a variant's CUDA listing on the page."""
    return f"{spec.node_id}-{variant.label}-L{line}"


def cuda_lines(spec: DirectiveSpec, variant: VariantSpec, result: Result,
               lines: Iterable[int], context: Context) -> list[nodes.Node]:
    """``CUDA lines 40-42, 45`` (as :func:`...core.hazards.check.cuda_words` says it),
    each span's first number linked to the listing where the page has it."""
    spans = line_spans(lines)
    if not spans:
        return []
    count = sum(b - a + 1 for a, b in spans)
    linked = context.links and shows(spec, "cuda") and bool(result.get("ok"))
    found: list[nodes.Node] = [nodes.Text(
        f"{variant.target.language} line{'s' if count > 1 else ''} ")]
    for i, (a, b) in enumerate(spans):
        if i:
            found.append(nodes.Text(", "))
        if linked and a <= context.max_lines:
            found.append(nodes.reference(
                "", str(a), refuri=f"#{anchor(spec, variant, a)}", internal=True,
                classes=["tl-cuda-ref"], tl_variant=variant.label, tl_line=a,
                reftitle=f"line {a} of the {variant.heading} listing"))
        else:
            found.append(nodes.Text(str(a)))
        if b != a:
            found.append(nodes.Text(f"-{b}"))
    return found


__all__ = ["anchor", "cuda_lines"]
