"""``cp.async``: a thread's asynchronous copy into shared memory, its commit into a group,
and the wait for all but the newest ``n`` groups (PTX ISA, "cp.async",
"cp.async.commit_group", "cp.async.wait_group"); checked by :mod:`....core.hazards.check`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import rule

if TYPE_CHECKING:
    from ..trace import Trace


@rule("ptx_cp_async")
def copy(trace: Trace, name: str, args: list[Any]) -> None:
    """``cp.async`` of ``args[2]`` elements from global memory into ``args[0]``'s address:
    the bytes it writes, and each thread's own (a thread may read back its own copy once
    its group is waited for, with no barrier)."""
    load = args[0].args[0]
    count = trace.constant(args[2], "the size of a cp.async")
    buffer, root, lo, hi = trace.region(load.buffer, list(load.indices))
    size = load.buffer.dtype.bits // 8
    trace.emit({"op": "copy", "buffer": buffer, "root": root, "lo": lo,
                "hi": hi + (count - 1) * size,
                "own": trace.per_thread((count - 1) * size)})
    trace.reads(args[1])


@rule("ptx_commit_group")
def commit(trace: Trace, name: str, args: list[Any]) -> None:
    trace.emit({"op": "commit"})


@rule("ptx_wait_group")
def wait(trace: Trace, name: str, args: list[Any]) -> None:
    trace.emit({"op": "wait", "n": trace.constant(args[0], "a wait's count")})
