"""The "Shared buffers" and "Synchronisation" parts."""

from __future__ import annotations

from docutils import nodes

from ...core.result import Result
from ...core.spec import VariantSpec
from .tables import Cell, Span, code, number, table


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
    body.append([nodes.strong(text="total"),
                 *(f"{number(sum(b['bytes'] for b in r['shared']))} B" for _, r in ok)])
    body.append(["merged dynamic allocation", *(f"{number(r['dynamic_shared_bytes'])} B"
                                                 for _, r in ok)])
    if any(r["static_shared_bytes"] for _, r in ok):
        body.append(["static shared (barriers)",
                     *(f"{number(r['static_shared_bytes'])} B" for _, r in ok)])
    headers: list[Cell] = ["buffer", *(v.heading for v, _ in ok)]
    return table(headers, body, ["tl-table"], widths=[20, *[20] * len(ok)],
                 key_columns=1)


SYNC_ROWS = (
    ("syncthreads", "__syncthreads()"),
    ("cp_async", "tl::cp_async_gs<N>"),
    ("cp_async_commit", "tl::cp_async_commit()"),
    ("cp_async_wait", "tl::cp_async_wait<N>()"),
    ("mbarrier_init", "mbarrier[i].init()"),
    ("mbarrier_wait", "mbarrier[i].wait()"),
    ("mbarrier_arrive", "mbarrier[i].arrive()"),
    ("mbarrier_expect_tx", "mbarrier[i].expect_transaction()"),
    ("mbarrier_arrive_expect_tx", "mbarrier[i].arrive_and_expect_tx()"),
    ("tma_load", "tl::tma_load"),
    ("tma_store", "tl::tma_store"),
    ("mma", "tl::mma_sync"),
    ("wgmma", "tl::wgmma_ss / _rs"),
)


def sync_part(rows: list[tuple[VariantSpec, Result]]) -> list[nodes.Node]:
    ok = [(v, r) for v, r in rows if r.get("ok")]
    body: list[list[Cell | Span]] = []
    omitted = []
    for key, spelling in SYNC_ROWS:
        values = [r["sync"][key] for _, r in ok]
        if not any(values):
            omitted.append(spelling)
            continue
        cells = [" ".join(f"<{n}>" for n in v) if isinstance(v, list) else str(v) for v in values]
        body.append([code(spelling), *cells])
    headers: list[Cell] = ["in the CUDA", *(v.heading for v, _ in ok)]
    result: list[nodes.Node] = [table(headers, body, ["tl-table"], widths=[30, *[14] * len(ok)],
                                       key_columns=1)]
    if omitted:
        result.append(nodes.paragraph(
            text="Absent from every variant: " + ", ".join(omitted) + ".", classes=["tl-note"]))
    return result
