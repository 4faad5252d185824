"""The synchronisation trace of a kernel's final device IR, for the hazard check.

It walks the device function as each thread runs it: every loop that holds a
synchronisation (the pipelined loop, a loop around it) is unrolled with its variable
known, every other loop is summarised by bounding its variable; each access to shared
memory becomes a byte interval of its allocation, bounded over the thread indices and
the summarised loops (TVM's integer-bound analysis). Out come plain records (see
:mod:`..core.hazards`, which checks them): cp.async copies, commits, waits,
``__syncthreads``, shared reads; on Hopper the roles of a warp-specialised loop and
their barrier operations. Where the walk cannot decide (a synchronisation under a
condition it cannot evaluate, a loop of unknown length, an operation on shared memory it
does not model) it raises :class:`Undecided`, which the check reports as "not checked".
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from tvm.tirx.stmt_functor import post_order_visit

from ..core.hazards import not_checked, verdict
from .intervals import Interval, Unbounded, interval
from .ir_walk import integer, kind, op_name, short, version_dims

Record = dict[str, Any]
# Loops unrolled in all, over the whole kernel: past this the check says "not checked".
MAX_STEPS = 4096
_SYNC_OPS = frozenset({"ptx_commit_group", "ptx_wait_group", "tvm_storage_sync",
                       "mbarrier_wait_parity", "ptx_arrive_barrier", "mbarrier_arrive",
                       "ptx_arrive_barrier_expect_tx", "mbarrier_expect_tx", "tma_load",
                       "ptx_init_barrier_thread_count", "warpgroup_wait",
                       "ptx_cp_async_barrier_noinc"})
# Reads through a pointer: bytes each thread reads at its address.
_POINTER_READS = {"ptx_ldmatrix": 16}


class Undecided(Exception):
    """The walk cannot say what the code does; the message says why."""


def _shared(var: Any) -> bool:
    scope = getattr(getattr(var, "type_annotation", None), "storage_scope", "")
    return str(scope).startswith("shared") and "barrier" not in str(scope)


class Trace:
    """One walk of a device function; :attr:`records` is its output."""

    def __init__(self, func: Any) -> None:
        self.env: dict[Any, Interval] = {}  # each variable's values: a point when known
        self.bases: dict[Any, tuple[str, int]] = {}  # handle var -> (allocation, byte offset)
        self.records: list[Record] = []
        self.where: list[str] = []
        self.steps = 0
        self.walk(func.body)

    # --- expressions ----------------------------------------------------------------
    def bound(self, expr: Any, what: str) -> Interval:
        try:
            return interval(expr, self.env)
        except Unbounded as exc:
            raise Undecided(f"{what} cannot be bounded ({exc})") from None

    def constant(self, expr: Any, what: str) -> int:
        lo, hi = self.bound(expr, what)
        if lo != hi:
            raise Undecided(f"{what} is not known")
        return lo

    def base(self, var: Any) -> tuple[str, int]:
        return self.bases.get(var, (str(var.name), 0))

    def region(self, buffer: Any, indices: list[Any]) -> tuple[str, str, int, int]:
        """(buffer, allocation, first byte, last byte) of a load or store's elements."""
        size = buffer.dtype.bits * buffer.dtype.lanes // 8
        lanes = 1
        if len(indices) == 1:
            index = indices[0]
        else:
            index, stride = 0, 1
            for i, extent in reversed(list(zip(indices, buffer.shape, strict=True))):
                index, stride = index + i * stride, stride * extent
        if kind(index) == "Ramp":
            if integer(index.stride) != 1:
                raise Undecided(f"a strided vector access to {buffer.name}")
            lanes, index = int(index.lanes), index.base
        lo, hi = self.bound(buffer.elem_offset + index, str(buffer.name))
        root, offset = self.base(buffer.data)
        return str(buffer.data.name), root, offset + lo * size, offset + (hi + lanes) * size - 1

    # --- statements -----------------------------------------------------------------
    def emit(self, record: Record) -> None:
        record["at"] = " ".join(self.where)
        self.records.append(record)

    def walk(self, stmt: Any) -> None:
        what = kind(stmt)
        handler: Callable[[Any], None] | None = getattr(self, f"_{what}", None)
        if handler is not None:
            handler(stmt)
        elif hasattr(stmt, "body") and stmt.body is not None:
            self.walk(stmt.body)

    def _SeqStmt(self, stmt: Any) -> None:
        for item in stmt.seq:
            self.walk(item)

    def _AttrStmt(self, stmt: Any) -> None:
        if stmt.attr_key == "thread_extent":
            var = stmt.node.var
            extent = self.constant(stmt.value, f"the extent of {var.name}")
            self.env[var] = (0, extent - 1)
        self.walk(stmt.body)

    def _Bind(self, stmt: Any) -> None:
        value = stmt.value
        if kind(value) == "Call" and short(op_name(value)) == "handle_add_byte_offset":
            root, offset = self.base(value.args[0])
            extra = self.constant(value.args[1], f"the offset of {stmt.var.name}")
            self.bases[stmt.var] = (root, offset + extra)
        elif str(stmt.var.dtype).startswith(("int", "uint", "bool")):
            with contextlib.suppress(Unbounded):  # an index that uses it says so
                self.env[stmt.var] = interval(value, self.env)

    def _LetStmt(self, stmt: Any) -> None:
        self._Bind(stmt)
        self.walk(stmt.body)

    def _For(self, stmt: Any) -> None:
        name = f"the loop over {stmt.loop_var.name}"
        if not _has_sync(stmt.body):
            lo, extent = self.bound(stmt.min, name), self.bound(stmt.extent, name)
            if extent[1] <= 0:
                return
            self.env[stmt.loop_var] = (lo[0], lo[1] + extent[1] - 1)
            self.walk(stmt.body)
            return
        lo_c, extent_c = self.constant(stmt.min, name), self.constant(stmt.extent, name)
        self.steps += extent_c
        if self.steps > MAX_STEPS:
            raise Undecided(f"more than {MAX_STEPS} loop iterations to unroll")
        for value in range(lo_c, lo_c + extent_c):
            self.env[stmt.loop_var] = (value, value)
            self.where.append(f"{stmt.loop_var.name}={value}")
            try:
                self.walk(stmt.body)
            finally:
                self.where.pop()
        self.env.pop(stmt.loop_var, None)

    def _IfThenElse(self, stmt: Any) -> None:
        try:
            decided = interval(stmt.condition, self.env)
        except Unbounded:
            decided = (0, 1)
        if decided[0] == decided[1]:
            branch = stmt.then_case if decided[0] else stmt.else_case
            if branch is not None:
                self.walk(branch)
            return
        if _has_sync(stmt.then_case) or (stmt.else_case is not None
                                         and _has_sync(stmt.else_case)):
            self.branch(stmt)
            return
        # Accesses under a condition: those of both branches (the intervals widen).
        self.walk(stmt.then_case)
        if stmt.else_case is not None:
            self.walk(stmt.else_case)

    def branch(self, stmt: Any) -> None:
        """A synchronisation under a condition on the thread index: roles (warp
        specialisation) or an elected thread."""
        raise Undecided(f"a synchronisation under the condition {stmt.condition}")

    def _Evaluate(self, stmt: Any) -> None:
        value = stmt.value
        if kind(value) == "Call":
            self.call(value)
        else:
            self.reads(value)

    def _BufferStore(self, stmt: Any) -> None:
        self.reads(stmt.value)
        for index in stmt.indices:
            self.reads(index)

    # --- calls ----------------------------------------------------------------------
    def call(self, call: Any) -> None:
        name = short(op_name(call))
        if name == "ptx_cp_async":
            load = call.args[0].args[0]
            count = self.constant(call.args[2], "the size of a cp.async")
            buffer, root, lo, hi = self.region(load.buffer, list(load.indices))
            size = load.buffer.dtype.bits // 8
            self.emit({"op": "copy", "buffer": buffer, "root": root, "lo": lo,
                       "hi": hi + (count - 1) * size})
            self.reads(call.args[1])
        elif name == "ptx_commit_group":
            self.emit({"op": "commit"})
        elif name == "ptx_wait_group":
            self.emit({"op": "wait", "n": self.constant(call.args[0], "a wait's count")})
        elif name == "tvm_storage_sync":
            scope = call.args[0].value if kind(call.args[0]) == "StringImm" else ""
            if scope in ("shared", "shared.dyn"):
                self.emit({"op": "sync"})
        elif name in _POINTER_READS:
            for arg in call.args:
                if kind(arg) == "Call" and short(op_name(arg)) == "address_of":
                    load = arg.args[0]
                    if _shared(load.buffer.data):
                        buffer, root, lo, _ = self.region(load.buffer, list(load.indices))
                        self.emit({"op": "read", "buffer": buffer, "root": root, "lo": lo,
                                   "hi": lo + _POINTER_READS[name] - 1, "how": name})
        else:
            self.other(call, name)

    def other(self, call: Any, name: str) -> None:
        """A call the model has no rule for: harmless unless it touches shared memory."""
        for arg in call.args:
            if kind(arg) == "Call" and short(op_name(arg)) in ("address_of",
                                                                "tvm_access_ptr"):
                target = arg.args[0] if short(op_name(arg)) == "address_of" else arg.args[1]
                data = getattr(getattr(target, "buffer", None), "data", target)
                if _shared(data):
                    raise Undecided(f"{name} accesses {data.name}, which the check "
                                    "does not model")
            else:
                self.reads(arg)

    def reads(self, expr: Any) -> None:
        """Every shared element an expression loads."""
        found: list[Any] = []

        def visit(node: Any) -> None:
            if kind(node) == "BufferLoad" and _shared(node.buffer.data):
                found.append(node)
            elif kind(node) == "Call" and short(op_name(node)) == "address_of" \
                    and _shared(node.args[0].buffer.data):
                raise Undecided(f"a pointer into {node.args[0].buffer.name} is passed on")

        post_order_visit(expr, visit)
        for load in found:
            buffer, root, lo, hi = self.region(load.buffer, list(load.indices))
            self.emit({"op": "read", "buffer": buffer, "root": root, "lo": lo, "hi": hi,
                       "how": "load"})


def _has_sync(stmt: Any) -> bool:
    found = [False]

    def visit(node: Any) -> None:
        if kind(node) == "Call" and short(op_name(node)) in _SYNC_OPS:
            found[0] = True

    post_order_visit(stmt, visit)
    return found[0]


def hazards(kept: dict[str, Any], target: dict[str, Any], main: Callable[[Any], Any],
            device: Callable[[Any], Any]) -> dict[str, Any]:
    """The ``hazards`` fact of a lowered variant, from the modules the recorder kept
    (``main``/``device`` pick a module's function). Never raises: what the walk cannot
    decide, or a walk that fails, is "not checked" and why."""
    final = kept.get("final")
    if target.get("kind") != "cuda":
        return not_checked(f"no asynchronous pipeline on {target.get('mcpu') or target['kind']}")
    if final is None:
        return not_checked("no final device code")
    try:
        trace = Trace(device(final))
        return verdict(trace.records, _buffers(trace, kept, main))
    except Undecided as exc:
        return not_checked(str(exc))
    except Exception as exc:  # unexpected IR costs the verdict, never the variant
        return not_checked(f"the check failed ({type(exc).__name__}: {exc})"[:300])


def _buffers(trace: Trace, kept: dict[str, Any], main: Callable[[Any], Any]) -> dict[str, Any]:
    """Per shared buffer: its byte offset in its allocation, its bytes and its versions
    (the leading dimension the pipeliner gave it), for naming slots."""
    planned, injected = kept.get("tl.PipelinePlanning"), kept.get("tl.InjectSoftwarePipeline")
    versions = version_dims(main(planned), main(injected)) \
        if planned is not None and injected is not None else {}
    sizes: dict[str, int] = {}
    if injected is not None:
        def visit(node: Any) -> None:
            for buffer in getattr(node, "alloc_buffers", None) or []:
                if _shared(buffer.data):
                    count = 1
                    for extent in buffer.shape:
                        count *= integer(extent) or 0
                    sizes[str(buffer.name)] = count * buffer.dtype.bits // 8

        post_order_visit(main(injected).body, visit)
    bases = {str(var.name): offset for var, (_, offset) in trace.bases.items()}
    return {name: {"base": bases.get(name, 0), "bytes": size, "versions": versions.get(name)}
            for name, size in sizes.items()}
