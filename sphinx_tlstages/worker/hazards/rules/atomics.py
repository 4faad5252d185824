"""TileLang's atomic operations (``T.atomic_add`` and its kin): on shared memory, a read
and a write of the elements its pointer names, made by one thread at a time (the write is
the thread's own store, outside the cp.async model, as every store); on global memory,
nothing to the check."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import rule

if TYPE_CHECKING:
    from ..trace import Trace

# Each atomic operation's name, and whether it reads and writes its elements.
_READS = ("atomic_add_elem_op", "atomic_add_ret_elem_op", "atomic_addx2_elem_op",
          "atomic_addx2_ret_elem_op", "atomic_addx4_elem_op", "atomic_addx4_ret_elem_op",
          "atomic_max_elem_op", "atomic_max_ret_elem_op", "atomic_min_elem_op",
          "atomic_min_ret_elem_op", "atomic_or_elem_op", "atomic_load_elem_op")
_WRITES = (*(name for name in _READS if name != "atomic_load_elem_op"),
           "atomic_store_elem_op")


@rule(*sorted({*_READS, *_WRITES}))
def atomic(trace: Trace, name: str, args: list[Any]) -> None:
    """The elements from the first argument's address (two or four for the ``x2`` and
    ``x4`` forms); the other arguments are read as any expression."""
    elements = 4 if "x4" in name else 2 if "x2" in name else 1
    touched = trace.pointed(args[0], elements)
    if touched is not None:
        buffer, root, lo, hi, own = touched
        if name in _READS:  # an element the data picks: any of them, or none for sure
            trace.emit({"op": "read", "buffer": buffer, "root": root, "lo": lo, "hi": hi,
                        "how": name, "own": own, **({"maybe": True} if hi is None else {})})
        if name in _WRITES:
            trace.emit({"op": "store", "buffer": buffer, "root": root, "lo": lo,
                        "hi": 1 << 62 if hi is None else hi})
    else:
        trace.reads(args[0])  # a pointer into global memory: only its index is read
    for arg in args[1:]:
        trace.reads(arg)
