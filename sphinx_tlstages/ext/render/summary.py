"""The "Summary" part: one column per variant, the facts a reader compares first."""

from __future__ import annotations

from docutils import nodes

from ...core.result import Result, shared_bytes
from ...core.spec import DirectiveSpec, VariantSpec
from .tables import Cell, Span, number, table


def _schedule(result: Result) -> str:
    ws = result.get("warp_specialized")
    if ws:
        count = sum(b["shape"][0] for b in ws["barriers"])
        return f"warp-specialised, {count} barriers"
    loops = result.get("pipeline") or []
    if loops:
        return ", ".join(f"pipelined, depth {loop['num_stages']}" for loop in loops)
    return "not pipelined"


def _shared_cell(result: Result, limit: int | None) -> Cell:
    used = shared_bytes(result)
    if limit is None:
        return f"{number(used)} B"
    text = f"{number(used)} B ({100 * used / limit:.0f} %)"
    if used > limit:
        return nodes.strong(text=f"{text}: over the limit", classes=["tl-over"])
    return text


def summary_table(spec: DirectiveSpec, rows: list[tuple[VariantSpec, Result]]) -> nodes.Node:
    one_target = len(spec.targets) == 1
    limit = spec.target.shared_memory_limit
    shared = "shared memory / block" + (f" (of {number(limit)} B)" if limit and one_target
                                        else "")
    matrix = not all(v.only_num_stages for v, _ in rows)
    headers = ["variant" if matrix else "num_stages", "schedule", "threads", shared,
               "__syncthreads", "async copies", "waits", "CUDA lines"]
    body: list[list[Cell | Span]] = []
    for variant, result in rows:
        name = variant.heading if matrix else str(variant.num_stages)
        if not result.get("ok"):
            error = result["error"]
            expected = variant.num_stages in spec.expect_error
            text = f"failed{', as expected' if expected else ''} ({error['kind']}): " \
                   f"{error['message']}"
            body.append([name,
                         Span(nodes.strong(text=text, classes=["tl-failed"]), len(headers) - 1)])
            continue
        sync = result["sync"]
        if sync["tma_load"]:
            copies = f"{sync['tma_load']} TMA loads"
        else:
            copies = f"{sync['cp_async']} cp_async"
        if sync["cp_async_wait"]:
            waits = " ".join(f"<{n}>" for n in sync["cp_async_wait"])
        else:
            waits = f"{sync['mbarrier_wait']} mbarrier"
        body.append([name, _schedule(result), str(result["threads"]),
                     _shared_cell(result, variant.target.shared_memory_limit),
                     str(sync["syncthreads"]), copies, waits, str(result["cuda_lines"])])
    return table(headers, body, ["tl-table"], widths=[8, 18, 7, 20, 10, 12, 14, 8])
