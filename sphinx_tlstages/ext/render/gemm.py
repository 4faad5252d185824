"""The "Matrix multiplies" part: which instruction each ``T.gemm`` became, per variant.

Read off the compiler's IR after tile-op lowering (see ``worker.ir_facts``), never
re-derived: where a plain rule of the architecture explains the choice (no tcgen05
without a tensor-memory accumulator), the cell says so.
"""

from __future__ import annotations

from typing import Any

from docutils import nodes

from ...core.result import Result
from ...core.spec import DirectiveSpec, VariantSpec
from ...core.targets import instruction_rule
from .tables import Cell, Span, code, doc_line, table

NOT_RECORDED = "not recorded"


def _cell(variant: VariantSpec, gemm: dict[str, Any] | None) -> Cell:
    if gemm is None:
        return "—"
    instruction, form = gemm.get("instruction"), gemm.get("form")
    if instruction is None:
        return "not read"
    shown: list[nodes.Node] = [code(str(instruction))]
    if form and instruction not in ("fma", "none"):
        shown.append(nodes.Text(f" {form}"))
    rule = instruction_rule(variant.target, str(instruction))
    if not rule:
        return shown
    return nodes.container("", nodes.paragraph("", "", *shown),
                           nodes.paragraph("", "", nodes.emphasis(text=rule)),
                           classes=["tl-rule"])


def gemm_part(spec: DirectiveSpec, rows: list[tuple[VariantSpec, Result]]) -> nodes.Node | None:
    """One row per gemm call of the kernel, one column per lowered variant; None when
    no variant has one."""
    ok = [(v, r) for v, r in rows if r.get("ok")]
    found: dict[tuple[int | None, str], dict[str, dict[str, Any]]] = {}
    for variant, result in ok:
        for gemm in result.get("gemm") or []:
            found.setdefault((gemm.get("line"), gemm["text"]), {})[variant.label] = gemm
    if not found:
        return None
    body: list[list[Cell | Span]] = []
    for (line, text), cells in found.items():
        body.append([code(text), doc_line(spec, line),
                     *(NOT_RECORDED if "gemm" not in r else _cell(v, cells.get(v.label))
                       for v, r in ok)])
    headers: list[Cell] = ["tile-level gemm", "line", *(v.heading for v, _ in ok)]
    return table(headers, body, ["tl-table", "tl-gemm-table"], widths=[34, 8, *[16] * len(ok)])
