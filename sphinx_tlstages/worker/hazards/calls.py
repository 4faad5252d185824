"""The hazard trace's names for what it meets in the IR: which buffers are shared or
global, which calls synchronise, which statements hold one, and ``&buffer[i]``."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from tvm.tirx.stmt_functor import post_order_visit, pre_order_visit

from ..ir.walk import integer, kind, op_name, short

# Calls that synchronise, or that a synchronised loop's ring state depends on: a loop or
# condition holding one is walked call by call (any other is summarised by its bounds).
SYNC_OPS = frozenset({"ptx_commit_group", "ptx_wait_group", "tvm_storage_sync",
                      "mbarrier_wait_parity", "ptx_arrive_barrier", "mbarrier_arrive",
                      "ptx_arrive_barrier_expect_tx", "mbarrier_expect_tx", "tma_load",
                      "tma_load_multicast", "ptx_init_barrier_thread_count", "warpgroup_wait",
                      "wait_wgmma", "ptx_cp_async_barrier_noinc", "ptx_cp_async_barrier",
                      "tcgen05_mma_arrive", "named_barrier_arrive"})
# Records that name the statement they come from (redundant synchronisation is found per
# statement).
SITE_OPS = frozenset({"sync", "wait", "bwait"})
# Calls whose value depends only on their arguments (any other, a warp's index or an
# election, may differ between threads): a mask, or a condition the block decides alike
# (:meth:`.trace.Trace.uniform`), may make them.
PURE_CALLS = frozenset({"bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not",
                        "shift_right", "shift_left", "if_then_else", "truncmod", "truncdiv",
                        "likely"})


def call_name(node: Any) -> str:
    """A call's operator, short (``ptx_cp_async``); ``""`` of anything else."""
    return short(op_name(node))


def scope(data: Any) -> str:
    """A buffer's data's storage scope (``""``: a kernel's argument)."""
    return str(getattr(getattr(data, "type_annotation", None), "storage_scope", ""))


def shared(var: Any) -> bool:
    """Whether a buffer's data lives in shared memory (barriers are not data)."""
    found = scope(var)
    return found.startswith("shared") and "barrier" not in found


def is_global(data: Any) -> bool:
    """Whether a buffer's data lives in global memory (a kernel's argument)."""
    return scope(data) in ("", "global")


def address_of(expr: Any) -> Any | None:
    """The load ``&buffer[indices]`` takes the address of (``T.address_of``), or None."""
    if kind(expr) == "Call" and call_name(expr) == "address_of":
        return expr.args[0]
    return None


def shared_address(expr: Any) -> Any | None:
    """The load of :func:`address_of` where it is into shared memory, else None."""
    load = address_of(expr)
    return load if load is not None and shared(load.buffer.data) else None


def reads_memory(expr: Any) -> bool:
    """Whether an expression reads memory (a buffer's element: a value the data sets)."""
    found: list[Any] = []
    post_order_visit(expr, lambda node: found.append(node)
                     if kind(node) == "BufferLoad" else None)
    return bool(found)


def scalar_key(stmt: Any) -> tuple[Any, str] | None:
    """The key of a local integer scalar a store sets (``T.alloc_var``: a one-element
    local buffer at index 0), in the walk's environment; None for any other store."""
    buffer = stmt.buffer
    if not scope(buffer.data).startswith("local") \
            or not str(buffer.dtype).startswith(("int", "uint")):
        return None
    if len(stmt.indices) != 1 or integer(stmt.indices[0]) != 0:
        return None
    return buffer.data, "scalar"


def has_call(stmt: Any, names: Collection[str], known: dict[int, bool] | None = None) -> bool:
    """Whether a statement calls one of ``names``. ``known``: what was found before of
    some statements, by a node's address, for these same names (a walk's memo, the IR
    alive): a statement in it is not walked again, and the answer found is added. The
    walk stops at the first call found."""
    if known is not None:
        answer = known.get(stmt.__chandle__())
        if answer is not None:
            return answer
    found = [False]

    def visit(node: Any) -> bool:  # False: do not walk the node's children
        if found[0]:
            return False
        if known is not None:
            answer = known.get(node.__chandle__())
            if answer is not None:
                found[0] = answer
                return False
        if type(node).__name__ == "Call" and _op_name(node.op) in names:
            found[0] = True
            return False
        return True

    pre_order_visit(stmt, visit)
    if known is not None:
        known[stmt.__chandle__()] = found[0]
    return found[0]


# An operator's short name, by its address: operators are registered once and live as
# long as the process (``str(op.name)`` crosses into TVM at every call otherwise).
_OP_NAMES: dict[int, str] = {}


def _op_name(op: Any) -> str:
    key = op.__chandle__()
    name = _OP_NAMES.get(key)
    if name is None:
        name = _OP_NAMES[key] = short(str(op.name))
    return name
