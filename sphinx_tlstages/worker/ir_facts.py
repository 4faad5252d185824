"""Reading facts off TileLang's IR: pipelined loops, buffers, warp specialisation.

Each function takes the module (or function) some pass left and returns plain data;
:mod:`.lowering` decides after which pass each is read.
"""

from __future__ import annotations

from typing import Any

from tilelang import tvm
from tvm.tirx.stmt_functor import post_order_visit, pre_order_visit

# Passes whose output the facts are read from; everything else is only named.
WATCHED = (
    "tl.PipelinePlanning",
    "tl.ProducerConsumerWarpSpecialized",
    "tl.InjectSoftwarePipeline",
    "tl.MergeSharedMemoryAllocations",
)


def read(after: dict[str, Any]) -> dict[str, Any]:
    """Every IR fact, from the module each watched pass left (absent: not run)."""
    planned = after.get("tl.PipelinePlanning")
    injected = after.get("tl.InjectSoftwarePipeline")
    merged = after.get("tl.MergeSharedMemoryAllocations")
    specialised = after.get("tl.ProducerConsumerWarpSpecialized")
    return {
        "pipeline": pipeline_loops(main_function(planned)) if planned else [],
        "shared": block_buffers(main_function(injected), "shared") if injected else [],
        "merged": merged_allocations(device_function(merged)) if merged else {},
        "warp_specialized": warp_specialization(main_function(specialised))
        if specialised else None,
    }


def _visit(node: Any, fn: Any) -> None:
    post_order_visit(node, fn)


def _buffers(stmt: Any) -> list[str]:
    names: list[str] = []

    def visit(node: Any) -> None:
        buffer = getattr(node, "buffer", None)
        if buffer is not None and hasattr(buffer, "name") and buffer.name not in names:
            names.append(str(buffer.name))

    _visit(stmt, visit)
    return names


def _summary(stmt: Any) -> dict[str, Any]:
    value = getattr(stmt, "value", None)
    op = getattr(getattr(value, "op", None), "name", type(stmt).__name__)
    lines = [line.strip() for line in stmt.script().splitlines()]
    code = [line for line in lines if line and not line.startswith("#")
            and " = T.Buffer(" not in line and not line.endswith(" = T.int32()")]
    return {"op": str(op), "buffers": _buffers(stmt), "ir": code[0] if code else ""}


def _body(stmt: Any) -> list[Any]:
    while type(stmt).__name__ in ("SBlockRealize", "BlockRealize"):
        stmt = stmt.block.body
    return list(stmt.seq) if type(stmt).__name__ == "SeqStmt" else [stmt]


def pipeline_loops(func: Any) -> list[dict[str, Any]]:
    loops: list[dict[str, Any]] = []

    def visit(node: Any) -> None:
        if isinstance(node, tvm.tirx.For) and "software_pipeline_stage" in node.annotations:
            ann = node.annotations
            loops.append({
                "num_stages": int(ann.get("tl_pipelined_num_stages", -1)),
                "stage": [int(s) for s in ann["software_pipeline_stage"]],
                "order": [int(o) for o in ann.get("software_pipeline_order", [])],
                "statements": [_summary(s) for s in _body(node.body)],
            })

    _visit(func.body, visit)
    return loops


def _bytes(buffer: Any) -> int:
    count = 1
    for extent in buffer.shape:
        count *= int(extent)
    return count * int(tvm.DataType(str(buffer.dtype)).bits) // 8


def block_buffers(func: Any, scope_prefix: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []

    def visit(node: Any) -> None:
        for buffer in getattr(node, "alloc_buffers", None) or []:
            if str(buffer.scope()).startswith(scope_prefix):
                found.append({
                    "name": str(buffer.name),
                    "shape": [int(x) for x in buffer.shape],
                    "dtype": str(buffer.dtype),
                    "scope": str(buffer.scope()),
                    "bytes": _bytes(buffer),
                })

    _visit(func.body, visit)
    return found


def _is_thread_x(node: Any) -> bool:
    return type(node).__name__ == "AttrStmt" and node.attr_key == "thread_extent" \
        and str(node.node.thread_tag) == "threadIdx.x"


def merged_allocations(func: Any) -> dict[str, int]:
    totals = {"dynamic": 0, "static": 0, "threads": 0}

    def visit(node: Any) -> None:
        if type(node).__name__ == "AllocBuffer":
            scope = str(node.buffer.scope())
            if scope == "shared.dyn":
                totals["dynamic"] += _bytes(node.buffer)
            elif scope.startswith("shared"):
                totals["static"] += _bytes(node.buffer)
        if _is_thread_x(node):
            totals["threads"] = max(totals["threads"], int(node.value))

    _visit(func.body, visit)
    return totals


def warp_specialization(func: Any) -> dict[str, Any] | None:
    """Producer/consumer split written by ``tl.ProducerConsumerWarpSpecialized``."""
    split: dict[str, Any] = {}

    def visit(node: Any) -> None:
        kind = type(node).__name__
        if kind == "AttrStmt" and node.attr_key == "kWarpSpecializationScope":
            branch = node.body
            if type(branch).__name__ == "IfThenElse" and not split:
                split["producer_threads"] = int(branch.condition.b)
                split["producer"] = _branch_statements(branch.then_case)
                split["consumer"] = _branch_statements(branch.else_case)
        if _is_thread_x(node):
            split["threads"] = int(node.value)
        if kind in ("SBlock", "Block") and "barrier_init" in node.annotations:
            split["barrier_init"] = [[int(c) for c in counts]
                                     for counts in node.annotations["barrier_init"].values()]

    _visit(func.body, visit)
    if "producer" not in split:
        return None
    split["barriers"] = block_buffers(func, "shared.barrier")
    return split


def _branch_statements(stmt: Any) -> list[dict[str, Any]]:
    """The statements of the outermost loops of one warp group's branch (the pipelined
    loop, rewritten): tile operations and whole inner loops alike."""
    found: list[dict[str, Any]] = []
    if stmt is None:
        return found

    def visit(node: Any) -> bool:
        if isinstance(node, tvm.tirx.For):
            found.extend(_summary(s) for s in _body(node.body))
            return False  # its inner loops belong to these statements
        return True

    pre_order_visit(stmt, visit)
    return found


def main_function(mod: Any) -> Any:
    return next(iter(mod.functions.values()))


def device_function(mod: Any) -> Any:
    # After SplitHostDevice the module holds the host function and the device kernel.
    for gvar, func in mod.functions.items():
        if str(gvar.name_hint).endswith("_kernel"):
            return func
    return main_function(mod)
