"""The ``shared`` part, "Shared buffers" (and tensor memory on Blackwell)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from docutils import nodes

from ...core.plan.spec import DirectiveSpec, VariantSpec
from ...core.plan.targets import TENSOR_MEMORY_COLUMNS
from ...core.results.result import Result, shared_bytes
from .parts import Context, Drawn, Rows, renders
from .tables import Cell, Span, code, number, table

NOT_RECORDED = "not recorded"


def _tmem_cell(buf: Mapping[str, Any] | None) -> str:
    if buf is None:
        return "—"
    columns = buf.get("columns")
    taken = f"{columns} of {TENSOR_MEMORY_COLUMNS} columns" if columns is not None \
        else "columns not read"
    return f"{tuple(buf['shape'])} {buf['dtype']}, {taken}"


def _tmem_rows(ok: list[tuple[VariantSpec, Result]]) -> list[list[Cell | Span]]:
    """Tensor memory (Blackwell) is not shared memory: its buffers get rows of their own,
    with the columns they take of the SM's 512, and stay out of the totals."""
    names: list[str] = []
    for _, result in ok:
        names += [b["name"] for b in result.get("tmem") or [] if b["name"] not in names]
    rows: list[list[Cell | Span]] = []
    for name in names:
        cells: list[Cell | Span] = [[code(name), nodes.emphasis(text=" (tensor memory)")]]
        for _, result in ok:
            if "tmem" not in result:
                cells.append(NOT_RECORDED)
                continue
            cells.append(_tmem_cell(next((b for b in result["tmem"] if b["name"] == name),
                                         None)))
        rows.append(cells)
    return rows


def _limit_cell(variant: VariantSpec, result: Result) -> Cell:
    limit = variant.target.shared_memory_limit
    if limit is None:
        return "no limit known"
    used = shared_bytes(result)
    text = f"{100 * used / limit:.0f} % of {number(limit)} B"
    if used > limit:
        return nodes.strong(text=f"{text}: over the limit", classes=["tl-over"])
    return text


def _limit_row(ok: list[tuple[VariantSpec, Result]]) -> list[Cell | Span]:
    """Where Apple's GPUs are among the targets: each variant's shared memory against its
    target's limit (32 KiB of threadgroup memory on Apple's GPUs, where depth decides
    whether a tile fits at all)."""
    label = "of the threadgroup memory a threadgroup may use" \
        if all(v.target.kind == "metal" for v, _ in ok) else "of the target's limit per block"
    return [label, *(_limit_cell(v, r) for v, r in ok)]


def has_tensor_memory(rows: list[tuple[VariantSpec, Result]]) -> bool:
    return any(r.get("tmem") for _, r in rows if r.get("ok"))


def shared_table(rows: list[tuple[VariantSpec, Result]]) -> nodes.Node:
    ok = [(v, r) for v, r in rows if r.get("ok")]
    names: list[str] = []
    for _, result in ok:
        names += [b["name"] for b in result["shared"] if b["name"] not in names]
    body: list[list[Cell | Span]] = []
    for name in names:
        cells: list[Cell | Span] = [code(name)]
        for _, result in ok:
            buf = next((b for b in result["shared"] if b["name"] == name), None)
            cells.append(f"{tuple(buf['shape'])} {buf['dtype']}, {number(buf['bytes'])} B"
                         if buf else "—")
        body.append(cells)
    body.append([nodes.strong(text="total of the buffers"),
                 *(f"{number(sum(b['bytes'] for b in r['shared']))} B" for _, r in ok)])
    # Where the merged allocation is smaller than the buffers' sum, TileLang let buffers
    # whose lifetimes do not overlap share memory; the row says so, or a reader takes the
    # total for what the block uses.
    reused = any(r["dynamic_shared_bytes"] < sum(b["bytes"] for b in r["shared"])
                 for _, r in ok)
    # On Metal the merged allocation is printed as one fixed-size threadgroup array.
    merged = "merged allocation (one threadgroup array)" \
        if all(v.target.kind == "metal" for v, _ in ok) else "merged dynamic allocation"
    merged_label = f"{merged} (buffers not live at once share memory)" if reused else merged
    body.append([merged_label, *(f"{number(r['dynamic_shared_bytes'])} B" for _, r in ok)])
    if any(r["static_shared_bytes"] for _, r in ok):
        # Tensor memory leaves one 32-bit address per buffer in shared memory.
        what = "barriers, tensor-memory addresses" if has_tensor_memory(ok) else "barriers"
        body.append([f"static shared ({what})",
                     *(f"{number(r['static_shared_bytes'])} B" for _, r in ok)])
    body += _tmem_rows(ok)
    if any(v.target.kind == "metal" for v, _ in ok):
        body.append(_limit_row(ok))
    headers: list[Cell] = ["buffer", *(v.heading for v, _ in ok)]
    return table(headers, body, ["tl-table"], widths=[20, *[20] * len(ok)],
                 key_columns=1)


@renders("shared")
def _shared(spec: DirectiveSpec, rows: Rows, context: Context) -> Drawn | None:
    if not any(r.get("ok") for _, r in rows):
        return None
    return Drawn([shared_table(rows)],
                 "Shared buffers and tensor memory" if has_tensor_memory(rows) else None)
