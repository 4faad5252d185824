"""The "Matrix multiply instructions" part: which instruction each ``T.gemm`` became,
per variant.

Read off the compiler's IR after tile-op lowering (see ``worker.ir.gemm``), never
re-derived: where a plain rule of the architecture explains the choice (no tcgen05
without a tensor-memory accumulator), the cell refers to it, said once under the table.
"""

from __future__ import annotations

from docutils import nodes

from ...core.plan.spec import DirectiveSpec, VariantSpec
from ...core.plan.targets import instruction_rule
from ...core.results.result import GemmCall, Result
from .parts import Context, Drawn, Rows, renders
from .tables import Cell, Span, code, doc_line, table

NOT_RECORDED = "not recorded"


def _cell(variant: VariantSpec, gemm: GemmCall | None, rules: list[str]) -> Cell:
    """The instruction and its form; a rule of the architecture that explains it is
    numbered here and said once under the table."""
    if gemm is None:
        return "—"
    instruction, form = gemm.get("instruction"), gemm.get("form")
    if instruction is None:
        return "not read"
    shown: list[nodes.Node] = [code(str(instruction))]
    if form and instruction not in ("fma", "none"):
        shown.append(nodes.Text(f" {form}"))
    rule = instruction_rule(variant.target, str(instruction))
    if rule:
        if rule not in rules:
            rules.append(rule)
        shown += [nodes.Text(" "), nodes.superscript(text=str(rules.index(rule) + 1))]
    return shown


def gemm_part(spec: DirectiveSpec,
              rows: list[tuple[VariantSpec, Result]]) -> list[nodes.Node] | None:
    """One row per gemm call of the kernel, one column per lowered variant, and the
    architecture's rules the cells refer to; None when no variant has a gemm."""
    ok = [(v, r) for v, r in rows if r.get("ok")]
    found: dict[tuple[int | None, str], dict[str, GemmCall]] = {}
    for variant, result in ok:
        for gemm in result.get("gemm") or []:
            found.setdefault((gemm.get("line"), gemm["text"]), {})[variant.label] = gemm
    if not found:
        return None
    rules: list[str] = []
    body: list[list[Cell | Span]] = []
    for (line, text), cells in found.items():
        body.append([code(text), doc_line(spec, line),
                     *(NOT_RECORDED if "gemm" not in r else _cell(v, cells.get(v.label), rules)
                       for v, r in ok)])
    headers: list[Cell] = ["tile-level gemm", "line", *(v.heading for v, _ in ok)]
    part: list[nodes.Node] = [table(headers, body, ["tl-table", "tl-gemm-table"],
                                    widths=[34, 8, *[16] * len(ok)], key_columns=2)]
    for number, rule in enumerate(rules, 1):
        note = nodes.paragraph(classes=["tl-note", "tl-rule"])
        note += nodes.superscript(text=str(number))
        note += nodes.Text(f" {rule}.")
        part.append(note)
    return part


@renders("gemm")
def _gemm(spec: DirectiveSpec, rows: Rows, context: Context) -> Drawn | None:
    found = gemm_part(spec, rows)
    return Drawn(found) if found is not None else None
