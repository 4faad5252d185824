"""Conditions read from memory that every thread of a block evaluates alike, for the hazard
check: a block-sparse kernel's ``if BlockMask[by, bx, k]:`` around the copies and the
GEMM of a pipelined loop.

Such a condition (a *mask*) reads no thread index: its value is the block's, the same for
every thread and every role (the producer's and the consumer's copy of the mask row read
the same elements). :class:`Masks` reads the device function once: the integer
variables bound to a value (whose definitions it follows), the one-dimensional local
arrays a loop fills from global memory (``block_mask[vj] = BlockSparseMask[.. + vj]``: a
load of ``block_mask[k]`` is that element), the global buffers the kernel writes (a
condition reading one is not a mask: its value may change), the thread indices. A mask's
*form* is its condition with the loop's variable named ``k``: every condition of one form
reads the same element in the same iteration, whatever loop it is in. Its *key* is the
condition with every variable known at a point replaced (``BlockMask[by * 32 + 3]``): the
element a walk at fixed values reads, the brute-force reference's unit.
"""

from __future__ import annotations

from typing import Any

from tilelang import tvm
from tvm.tirx.stmt_functor import post_order_visit, substitute

from ..ir.walk import integer, kind, op_name, short

# Calls whose value depends only on their arguments (any other, a warp's index or an
# election, may differ between threads): a mask, or a condition the block decides alike
# (:meth:`.trace.Trace.uniform`), may make them.
_PURE = frozenset({"bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not",
                   "shift_right", "shift_left", "if_then_else", "truncmod", "truncdiv",
                   "likely"})


def _scope(data: Any) -> str:
    """A buffer's data's storage scope (``""``: a kernel's argument)."""
    return str(getattr(getattr(data, "type_annotation", None), "storage_scope", ""))


def _global(data: Any) -> bool:
    """Whether a buffer's data lives in global memory (a kernel's argument)."""
    return _scope(data) in ("", "global")


class Masks:
    """What a device function says about its masks, read once (the walks share it)."""

    def __init__(self, func: Any) -> None:
        self.func = func
        self.read = False  # the function is read at the first question (most never ask)
        self.bound: dict[Any, Any] = {}  # integer variable -> the value bound to it
        self.threads: set[Any] = set()  # threadIdx.* variables
        self.written: set[Any] = set()  # global buffers' data the kernel stores into
        self.filled: dict[Any, tuple[Any, Any]] = {}  # local array -> (loop var, value)
        self.resolved: dict[int, Any] = {}  # a condition's handle -> its mask (or None)
        self.forms: dict[tuple[int, int], str | None] = {}

    def _read(self) -> None:
        """One pass over the function for what :meth:`mask` needs."""
        self.read = True
        stores: dict[Any, list[Any]] = {}  # local array data -> its stores
        loops: set[Any] = set()  # variables of loops from 0

        def visit(node: Any) -> None:
            what = kind(node)
            if what == "AttrStmt" and node.attr_key == "thread_extent" \
                    and str(node.node.thread_tag).startswith("threadIdx"):
                self.threads.add(node.node.var)
            elif what in ("Bind", "LetStmt") and str(node.var.dtype).startswith(
                    ("int", "uint", "bool")):
                self.bound[node.var] = node.value
            elif what == "BufferStore":
                scope = _scope(node.buffer.data)
                if _global(node.buffer.data):
                    self.written.add(node.buffer.data)
                elif scope.startswith("local"):
                    stores.setdefault(node.buffer.data, []).append(node)
            elif what == "For" and integer(node.min) == 0:
                loops.add(node.loop_var)

        post_order_visit(self.func.body, visit)
        # A local array filled once, element by element, by one loop from 0 (the only
        # store into it, indexed by the loop's variable): its loads are the values stored
        # (the loop reaches every element of its range before a later statement reads it).
        for data, found in stores.items():
            store = found[0]
            if len(found) == 1 and len(store.indices) == 1 \
                    and kind(store.indices[0]) == "Var" and store.indices[0] in loops:
                self.filled[data] = (store.indices[0], store.value)

    def mask(self, cond: Any) -> Any | None:
        """The condition as a mask (local arrays and bound variables replaced by what they
        hold), or None where it is not one: it reads a thread index, shared memory, a
        global buffer the kernel writes, or calls something that may differ by thread;
        or it reads no memory at all."""
        key = cond.__chandle__()
        if key not in self.resolved:
            calls: list[bool] = []
            post_order_visit(cond, lambda n: calls.append(True) if kind(n) == "Call"
                             and short(op_name(n)) not in _PURE else None)
            if calls:  # ``tl_shuffle_elect()``: the thread's, whatever the function holds
                self.resolved[key] = None
                return None
            if not self.read:
                self._read()
            self.resolved[key] = self._resolve(cond)
        return self.resolved[key]

    def _resolve(self, cond: Any) -> Any | None:
        expr = cond
        for _ in range(8):  # bound variables and local arrays, followed a few levels
            changed = False
            lets: dict[Any, Any] = {}
            arrays: list[Any] = []

            def visit(node: Any, lets: dict[Any, Any] = lets,
                      arrays: list[Any] = arrays) -> None:
                if kind(node) == "Var" and node in self.bound:
                    lets[node] = self.bound[node]
                elif kind(node) == "BufferLoad" and _scope(node.buffer.data).startswith("local") \
                        and node.buffer.data in self.filled and len(node.indices) == 1:
                    arrays.append(node)

            post_order_visit(expr, visit)
            if lets:
                expr, changed = substitute(expr, lets), True
            for load in arrays:
                var, value = self.filled[load.buffer.data]
                replacement = substitute(value, {var: load.indices[0]})
                expr = tvm.tirx.stmt_functor.ir_transform(
                    tvm.tirx.Evaluate(expr), None,
                    lambda n, load=load, rep=replacement: rep if n.same_as(load) else None,
                    ["tirx.BufferLoad"]).value
                changed = True
            if not changed:
                break
        verdict = {"global": False, "other": False}

        def check(node: Any) -> None:
            what = kind(node)
            if what == "Var" and (node in self.threads or node in self.bound):
                verdict["other"] = True
            elif what == "BufferLoad":
                if _global(node.buffer.data) and node.buffer.data not in self.written:
                    verdict["global"] = True
                else:
                    verdict["other"] = True
            elif what == "Call" and short(op_name(node)) not in _PURE:
                verdict["other"] = True

        post_order_visit(expr, check)
        return expr if verdict["global"] and not verdict["other"] else None

    def form(self, cond: Any, loop_var: Any) -> str | None:
        """The mask's form in a loop: its text with the loop's variable named ``k``; None
        when the condition is no mask or does not use the loop's variable."""
        key = (cond.__chandle__(), loop_var.__chandle__())
        if key not in self.forms:
            found = self.mask(cond)
            self.forms[key] = None
            if found is not None:
                uses: list[bool] = []
                post_order_visit(found, lambda n: uses.append(n.same_as(loop_var))
                                 if kind(n) == "Var" else None)
                if any(uses):
                    named = substitute(found, {loop_var: tvm.tirx.Var("k", loop_var.dtype)})
                    self.forms[key] = str(tvm.arith.Analyzer().simplify(named))
        return self.forms[key]

    def variables(self, cond: Any) -> list[Any]:
        """The variables a mask uses (none where the condition is no mask)."""
        found = self.mask(cond)
        used: list[Any] = []
        if found is not None:
            post_order_visit(found, lambda n: used.append(n) if kind(n) == "Var" else None)
        return used

    def key(self, cond: Any, points: dict[Any, int]) -> str | None:
        """The element a mask reads at the variables' values ``points`` (the others kept
        by name): the brute-force reference's unit (None: no mask; ``=0``, ``=1``: the
        values alone decide it)."""
        found = self.mask(cond)
        if found is None:
            return None
        used: list[Any] = []
        post_order_visit(found, lambda n: used.append(n)
                         if kind(n) == "Var" and n in points else None)
        fixed = {var: tvm.tirx.IntImm(var.dtype, points[var]) for var in used}
        value = tvm.arith.Analyzer().simplify(substitute(found, fixed) if fixed else found)
        known = integer(value)  # a part on the variables alone decided it (``k < 3 and``)
        return str(value) if known is None else f"={known}"
