"""The "Compiler passes" part: which pass runs respond to the variants, and IR diffs.

Built from each result's pass record (see :mod:`.passes`). Runs that change nothing, or
change every variant alike, are counted, not listed; the run where the variants part
ways (same input everywhere, different change) is named in a sentence above the table.
"""

from __future__ import annotations

from docutils import nodes

from ...core.plan.spec import DirectiveSpec, VariantSpec
from ...core.results import pass_compare, passes
from ...core.results.result import Result
from ..nodes import tl_collapsible
from .parts import Context, Drawn, Rows, renders
from .tables import Cell, Span, code, table


def _cell(record: passes.Record | None) -> str:
    if record is None:
        return "did not run"
    if not record["added"] and not record["removed"]:
        return "no change"
    return f"+{record['added']} −{record['removed']}"


def _summary(found: list[pass_compare.Row], idle: int, alike: int,
             total: int) -> nodes.paragraph:
    para = nodes.paragraph(classes=["tl-note"])
    origins = [row.id for row in found if row.origin]
    if origins:
        para += nodes.Text("The variants part ways at ")
        for i, name in enumerate(origins):
            para += nodes.Text(", " if i else "")
            para += code(name)
        para += nodes.Text(": its input IR is the same in every variant (the num_stages "
                           "annotation and the target aside), its output is not; every "
                           "later difference follows from there. ")
    partial = sum(1 for row in found if None in row.changes)
    if not origins and partial:
        para += nodes.Text(f"The variants run different pipelines: {partial} of the runs "
                           "below happen in some variants only. ")
    para += nodes.Text(f"Of {total} pass runs, {len(found)} respond to the variants; "
                       f"{idle} changed nothing and {alike} changed every variant alike "
                       "(not listed).")
    return para


def _diffs(spec: DirectiveSpec, rows: list[tuple[VariantSpec, Result]],
           aligned: list[pass_compare.Row], max_lines: int) -> list[nodes.Node]:
    """One collapsible IR diff per chosen pass run and variant, runs named as in the
    table (lined up across variants)."""
    found: list[nodes.Node] = []
    for row in aligned:
        name, _, run = row.id.partition("#")
        if not any(passes.matches(s, name, int(run)) for s in spec.passes):
            continue
        for (variant, result), record in zip(rows, row.changes, strict=True):
            text = result.get("pass_diffs", {}).get(
                passes.run_id(record["name"], record["run"])) if record else None
            if record is None or not text:
                continue
            lines = text.splitlines()
            node = tl_collapsible(summary=f"{row.id} (pass {row.position}), "
                                          f"{variant.heading}: IR +{record['added']} "
                                          f"−{record['removed']} lines",
                                  classes=["tl-pass-diff"])
            node += nodes.literal_block("", "\n".join(lines[:max_lines]), language="diff")
            if len(lines) > max_lines:
                node += nodes.paragraph(text=f"{len(lines) - max_lines} more lines not shown.",
                                        classes=["tl-note"])
            found.append(node)
    return found


def passes_part(spec: DirectiveSpec, rows: list[tuple[VariantSpec, Result]],
                max_lines: int) -> list[nodes.Node]:
    """The table of responding runs (with two or more variants) and the chosen diffs."""
    # Only variants that recorded their pass changes (see VariantSpec.record_passes).
    ok = [(v, r) for v, r in rows if r.get("ok") and passes.recorded(r.get("passes") or [])]
    if not ok:
        return []
    body: list[nodes.Node] = []
    aligned = pass_compare.align([r["passes"] for _, r in ok]) \
        if len(ok) > 1 or spec.passes else []
    if len(ok) > 1:
        found, idle, alike = pass_compare.responding(aligned)
        total = len(found) + idle + alike
        body.append(_summary(found, idle, alike, total))
        table_rows: list[list[Cell | Span]] = []
        for row in found:
            label: Cell = code(row.id)
            if row.origin:
                label = [code(row.id), nodes.emphasis(text=" (the variants part here)")]
            table_rows.append([label, row.position, *(_cell(c) for c in row.changes)])
        headers: list[Cell] = ["pass run", "position", *(v.heading for v, _ in ok)]
        if table_rows:
            body.append(table(headers, table_rows, ["tl-table", "tl-pass-table"],
                              widths=[30, 8, *[12] * len(ok)], key_columns=2))
    body.extend(_diffs(spec, ok, aligned, max_lines))
    return body


@renders("passes")
def _passes(spec: DirectiveSpec, rows: Rows, context: Context) -> Drawn | None:
    found = passes_part(spec, rows, context.max_lines)
    return Drawn(found) if found else None
