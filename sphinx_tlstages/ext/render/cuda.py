"""The "Generated CUDA" part: collapsible diffs between variants and full listings.

Both are capped at ``tlstages_max_lines`` lines so a page stays small; the rest is one
click away in the downloadable CUDA files (HTML builders).
"""

from __future__ import annotations

from docutils import nodes

from ...core.parts import shows
from ...core.plan.spec import DirectiveSpec, VariantSpec
from ...core.results import diffs
from ...core.results.cuda import without_line_directives
from ...core.results.result import Result
from ..nodes import tl_collapsible
from .parts import Context, Drawn, Rows, renders
from .summary import code_name


def _collapsible(summary_text: str, cls: str, *body: nodes.Node,
                 variant: str = "", language: str = "") -> tl_collapsible:
    node = tl_collapsible(summary=summary_text, classes=[cls], variant=variant,
                          language=language)
    for child in body:
        node += child
    return node


def literal(text: str, language: str) -> nodes.literal_block:
    return nodes.literal_block(text, text, language=language)


def _capped(text: str, max_lines: int) -> tuple[str, int]:
    lines = text.splitlines()
    return "\n".join(lines[:max_lines]), max(0, len(lines) - max_lines)


def _hidden_note(hidden: int, what: str) -> nodes.paragraph:
    return nodes.paragraph(text=f"{hidden} more lines of this {what} are not shown; the "
                                "downloadable CUDA files have everything.", classes=["tl-note"])


def cuda_part(spec: DirectiveSpec, rows: list[tuple[VariantSpec, Result]], max_lines: int,
              downloads: dict[str, str] | None) -> list[nodes.Node]:
    """Diffs (per ``:diff:``) and full listings (when ``cuda`` is shown)."""
    ok = {v.label: r for v, r in rows if r.get("ok")}
    headings = {v.label: v.heading for v, _ in rows}
    result: list[nodes.Node] = []
    chosen = diffs.pairs([(v.label, v.axes or (("num_stages", str(v.num_stages)),))
                          for v, r in rows if r.get("ok")], spec.diff) \
        if shows(spec, "diff") else []
    for old, new, title in chosen:
        d = diffs.diff(old, ok[old]["cuda"], new, ok[new]["cuda"], max_lines)
        body: list[nodes.Node] = [literal(d.text, "diff")]
        if d.hidden_lines:
            body.append(_hidden_note(d.hidden_lines, "diff"))
        result.append(_collapsible(f"{title}: {d.counts}", "tl-diff-item", *body))
    if shows(spec, "cuda"):
        for label, res in ok.items():
            body = []
            if downloads and label in downloads:
                suffix = next(v.target.source_suffix for v, _ in rows if v.label == label)
                link = nodes.reference("", f"download {spec.name}-{label}{suffix}",
                                       refuri=downloads[label], classes=["tl-download"])
                metal = next(v.target.kind == "metal" for v, _ in rows if v.label == label)
                para = nodes.paragraph("", "", link, nodes.Text(" (numbered as this listing)"))
                if f"{label}:lines" in downloads:
                    # TileLang's #line directives are lines of their own: the file that
                    # keeps them is numbered otherwise, and says so.
                    para += nodes.Text("; ")
                    para += nodes.reference(
                        "", "with #line directives", refuri=downloads[f"{label}:lines"],
                        classes=["tl-download-lines"])
                    para += nodes.Text(
                        " (written from the IR's source lines, which map each line to the "
                        "kernel; their lines shift every number after them)" if metal else
                        " (which map each line to the kernel; their lines shift every "
                        "number after them)")
                body.append(para)
            text, hidden = _capped(without_line_directives(res["cuda"]), max_lines)
            # Plain text: highlighted, four full listings made a page of half a megabyte
            # (4x its size) and most of a warm build's time; the diffs stay highlighted.
            body.append(literal(text, "text"))
            if hidden:
                body.append(_hidden_note(hidden, "listing"))
            language = next(v.target.language for v, _ in rows if v.label == label)
            result.append(_collapsible(f"{headings[label]}: full {language}, "
                                       f"{res['cuda_lines']} lines", "tl-cuda-item", *body,
                                       variant=label, language=language))
    return result


@renders("diff")
def _code(spec: DirectiveSpec, rows: Rows, context: Context) -> Drawn | None:
    """The diffs and the full listings (the ``cuda`` part), in one container."""
    found = cuda_part(spec, rows, context.max_lines, context.downloads)
    return Drawn(found, f"Generated {code_name(spec.targets)}") if found else None
