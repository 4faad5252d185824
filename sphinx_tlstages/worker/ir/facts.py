"""Reading facts off TileLang's IR: pipelined loops, buffers, warp specialisation, tensor
memory; the instruction each tile-level gemm became is traced in :mod:`.gemm`.

Each function takes the module (or function) some pass left and returns plain data;
:mod:`..lowering` decides after which pass each is read.
"""

from __future__ import annotations

import contextlib
import hashlib
from typing import Any

from tilelang import tvm
from tvm.tirx.stmt_functor import post_order_visit, pre_order_visit

from .gemm import gemm_instructions
from .planned import scheduled
from .walk import op_name, statements, summary

# Passes whose output the facts are read from; everything else is only named.
WATCHED = (
    "tl.PipelinePlanning",
    "tl.ProducerConsumerWarpSpecialized",
    "tl.InjectSoftwarePipeline",
    "tl.LowerTileOp",
    "tl.LowerSharedTmem",
    "tl.MergeSharedMemoryAllocations",
)


def read(after: dict[str, Any], built: Any | None = None) -> dict[str, Any]:
    """Every IR fact, from the module each watched pass left (absent: not run) and the
    module as the factory ``built`` it, before any pass."""
    planned = after.get("tl.PipelinePlanning")
    injected = after.get("tl.InjectSoftwarePipeline")
    merged = after.get("tl.MergeSharedMemoryAllocations")
    specialised = after.get("tl.ProducerConsumerWarpSpecialized")
    lowered = after.get("tl.LowerTileOp")
    return {
        "pipeline": pipeline_loops(main_function(planned)) if planned else [],
        "planned_ir": ir_digest(main_function(planned)) if planned else None,
        "shared": block_buffers(main_function(injected), "shared") if injected else [],
        "tmem": tensor_memory(main_function(injected), after.get("tl.LowerSharedTmem"))
        if injected else [],
        "merged": merged_allocations(device_function(merged)) if merged else {},
        "warp_specialized": warp_specialization(main_function(specialised))
        if specialised else None,
        "gemm": gemm_instructions(main_function(built), main_function(lowered))
        if built and lowered else [],
    }


def ir_digest(func: Any) -> str:
    """A digest of a function's printed IR: equal digests, equal IR."""
    return hashlib.sha256(str(func.script()).encode()).hexdigest()[:16]


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
    """An IR statement's operation, buffers and first line of IR (see :func:`.walk.summary`)."""
    lines = [line.strip() for line in stmt.script().splitlines()]
    code = [line for line in lines if line and not line.startswith("#")
            and " = T.Buffer(" not in line and not line.endswith(" = T.int32()")]
    return {**summary(stmt), "buffers": _buffers(stmt), "ir": code[0] if code else ""}


def _body(stmt: Any) -> list[Any]:
    while type(stmt).__name__ in ("SBlockRealize", "BlockRealize"):
        stmt = stmt.block.body
    return list(stmt.seq) if type(stmt).__name__ == "SeqStmt" else [stmt]


def _statements_of(loop: Any) -> list[dict[str, Any]]:
    """A planned loop's statements, each summarised; a binding the planner left out of
    the schedule (see :mod:`.planned`) says so, with the stages of its readers."""
    found = scheduled(loop)
    if found is None:  # annotations that do not fit the body: the body as it reads
        return [_summary(s) for s in _body(loop.body)]
    return [{**_summary(p.stmt), "replayed": True, "reader_stages": p.reader_stages}
            if p.replayed else _summary(p.stmt) for p in found]


def pipeline_loops(func: Any) -> list[dict[str, Any]]:
    loops: list[dict[str, Any]] = []

    def visit(node: Any) -> None:
        if isinstance(node, tvm.tirx.For) and "software_pipeline_stage" in node.annotations:
            ann = node.annotations
            loops.append({
                # The Python loop variable's name survives tracing: with the statements'
                # buffers, it tells which T.Pipelined loop of the kernel this one is.
                "var": str(node.loop_var.name),
                "trips": int(node.extent.value)
                if isinstance(node.extent, tvm.tirx.IntImm) else None,
                "num_stages": int(ann.get("tl_pipelined_num_stages", -1)),
                "stage": [int(s) for s in ann["software_pipeline_stage"]],
                "order": [int(o) for o in ann.get("software_pipeline_order", [])],
                "statements": _statements_of(node),
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
    # Allocations and thread extents are statements; sums and a maximum need no order.
    for node in statements(func.body):
        if type(node).__name__ == "AllocBuffer":
            scope = str(node.buffer.scope())
            if scope == "shared.dyn":
                totals["dynamic"] += _bytes(node.buffer)
            elif scope.startswith("shared") and scope != TMEM_SCOPE:
                totals["static"] += _bytes(node.buffer)
        if _is_thread_x(node):
            totals["threads"] = max(totals["threads"], int(node.value))
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
                split["loops"] = _specialised_loops(branch.then_case)
                split["vars"] = [loop["var"] for loop in split["loops"]]
        if _is_thread_x(node):
            split["threads"] = int(node.value)
        if kind in ("SBlock", "Block") and "barrier_init" in node.annotations:
            # Keyed by each barrier buffer's data variable; its order is not the
            # buffers' order.
            split["barrier_init"] = {
                str(getattr(var, "name", None) or getattr(var, "name_hint", "")):
                [int(c) for c in counts]
                for var, counts in node.annotations["barrier_init"].items()}

    _visit(func.body, visit)
    if "producer" not in split:
        return None
    split["barriers"] = block_buffers(func, "shared.barrier")
    return split


def _left_to_pipeliner(node: Any) -> bool:
    """A ``T.Pipelined`` loop the warp-specialisation passes left as it was (it still
    carries its ``num_stages``): the software pipeliner takes it later, in the consumer."""
    return "num_stages" in node.annotations


def _slots(loop: Any) -> int:
    """How many ring slots a warp-specialised loop cycles through: ``m`` of the version
    index ``k % m`` its copies write (1 where nothing is versioned)."""
    found = [1]

    def visit(node: Any) -> None:
        if type(node).__name__ == "FloorMod" and node.a.same_as(loop.loop_var) \
                and isinstance(node.b, tvm.tirx.IntImm):
            found.append(int(node.b.value))

    _visit(loop.body, visit)
    return max(found)


def _waits_on_barriers(loop: Any) -> bool:
    found = [False]

    def visit(node: Any) -> None:
        if isinstance(node, tvm.tirx.Call) and "barrier" in op_name(node):
            found[0] = True

    _visit(loop.body, visit)
    return found[0]


def _ring_loops(stmt: Any | None) -> list[Any]:
    """The outermost loops of one warp group's branch that are the ``T.Pipelined`` loop,
    rewritten: those that wait or arrive on the barrier ring. Not a loop left to the
    software pipeliner (another loop of the kernel), nor one TileLang or the kernel runs
    beside it (a copy of a mask into the producer's own buffer before it, the
    normalisation after it); every outermost loop where none touches a barrier."""
    loops: list[Any] = []

    def visit(node: Any) -> bool:
        if isinstance(node, tvm.tirx.For):
            if not _left_to_pipeliner(node):
                loops.append(node)
            return False  # its inner loops belong to its statements
        return True

    if stmt is not None:
        pre_order_visit(stmt, visit)
    return [loop for loop in loops if _waits_on_barriers(loop)] or loops


def _specialised_loops(stmt: Any) -> list[dict[str, Any]]:
    """The loops the producer branch runs, the ``T.Pipelined`` loops that were
    warp-specialised: loop variable, trip count (None: not a number) and ring slots."""
    return [{"var": str(loop.loop_var.name), "slots": _slots(loop),
             "trips": int(loop.extent.value)
             if isinstance(loop.extent, tvm.tirx.IntImm) else None}
            for loop in _ring_loops(stmt)]


def _branch_statements(stmt: Any) -> list[dict[str, Any]]:
    """The statements of one warp group's specialised loops: tile operations and whole
    inner loops alike; the statements of an ``if`` holding several (a condition around
    the whole iteration, which the split leaves whole) each apart, guarded."""
    found: list[dict[str, Any]] = []
    for loop in _ring_loops(stmt):
        for each in _body(loop.body):
            inner = each.then_case if type(each).__name__ == "IfThenElse" \
                and each.else_case is None else None
            parts = _body(inner) if inner is not None else []
            if len(parts) > 1:
                condition = _buffers(tvm.tirx.Evaluate(each.condition))
                found.extend({**_summary(part), "guarded": True, "condition": condition,
                              "buffers": [*condition, *_buffers(part)]} for part in parts)
            else:
                found.append(_summary(each))
    return found


TMEM_SCOPE = "shared.tmem"


def tensor_memory(func: Any, lowered: Any | None) -> list[dict[str, Any]]:
    """Tensor-memory buffers (Blackwell) with the 32-bit columns each takes.

    They are in the IR until ``tl.LowerSharedTmem`` (``lowered``) turns each into an
    address slot and a ``ptx_init_tensor_memory(<buffer>, columns)`` call: the columns are
    read from that call, as the compiler allocated them.
    """
    found = [{"name": b["name"], "shape": b["shape"], "dtype": b["dtype"], "columns": None}
             for b in block_buffers(func, TMEM_SCOPE)]
    if lowered is None or not found:
        return found
    columns: dict[str, int] = {}

    def visit(node: Any) -> None:
        if isinstance(node, tvm.tirx.Call) and op_name(node) == "tl.ptx_init_tensor_memory":
            pointer = node.args[0]
            data = pointer.args[1] if op_name(pointer) == "tirx.tvm_access_ptr" else pointer
            name = str(getattr(data, "name", None) or getattr(data, "name_hint", ""))
            if isinstance(node.args[1], tvm.tirx.IntImm):
                columns.setdefault(name, int(node.args[1]))

    _visit(main_function(lowered).body, visit)
    for buffer in found:
        buffer["columns"] = columns.get(str(buffer["name"]))
    return found


def main_function(mod: Any) -> Any:
    return next(iter(mod.functions.values()))


def _flag(func: Any, name: str) -> bool:
    """A function attribute, under TVM's ``tirx.`` prefix or the older ``tir.``."""
    attrs = func.attrs
    if attrs is None:
        return False
    for key in (f"tirx.{name}", f"tir.{name}"):
        if key in attrs:
            with contextlib.suppress(TypeError, ValueError):
                return bool(attrs[key])
    return False


def device_function(mod: Any) -> Any:
    """The device kernel of a module split into host and device functions (else its one
    function). Told by the attributes the split writes, never by name: a prim_func the
    author named ``gemm_kernel`` has a host function of that name, and a device kernel
    ``gemm_kernel_kernel``."""
    functions = list(mod.functions.items())
    for _, func in functions:
        if _flag(func, "is_global_func"):
            return func
    if len(functions) > 1:  # attributes unread: not the entry function, else by name
        others = [(g, f) for g, f in functions if not _flag(f, "is_entry_func")]
        named = [f for g, f in others or functions if str(g.name_hint).endswith("_kernel")]
        return named[-1] if named else (others or functions)[-1][1]
    return main_function(mod)
