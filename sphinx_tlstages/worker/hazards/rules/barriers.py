"""Barriers: ``__syncthreads`` and named barriers (``bar.sync``), and the mbarriers of TMA
pipelines (Hopper, Blackwell): their initialisation, waits with their parity, arrivals
with their count, expected bytes, ``cp.async.mbarrier.arrive``, and the fences. The
cp.async model (:mod:`....core.hazards.check`) reads the first, the ring model
(:mod:`....core.hazards.rings`) the others."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...ir.walk import integer, kind
from ..undecided import Undecided
from . import rule

if TYPE_CHECKING:
    from ..trace import Trace


@rule("tvm_storage_sync")
def sync(trace: Trace, name: str, args: list[Any]) -> None:
    """A barrier of the block (or of a cluster: it holds the CTA's too); a warp's
    ``tvm_storage_sync("warp")`` prints nothing and records nothing."""
    scope = args[0].value if kind(args[0]) == "StringImm" else ""
    if scope not in ("shared", "shared.dyn", "cluster"):
        return
    # ``tvm_storage_sync(scope, id, count)`` is a named barrier (``bar.sync id, count``,
    # TileLang's ``__sync_thread_partial``): PTX ISA, "Parallel Synchronization and
    # Communication Instructions: bar, barrier": it orders the memory accesses of the
    # threads that take part in it only, here the threads executing it. A plain
    # ``__syncthreads`` names every thread.
    named = len(args) >= 3 and integer(args[2]) not in (None, 0)
    what = "cluster sync" if scope == "cluster" else \
        "named barrier" if len(args) > 1 else "__syncthreads"
    record = {"op": "sync", "named": named, "what": what}
    if named:  # its id and count: it may count another role's arrivals (bar.arrive)
        record["id"], record["count"] = integer(args[1]), integer(args[2])
    trace.emit(record)


@rule("named_barrier_arrive")
def named_arrive(trace: Trace, name: str, args: list[Any]) -> None:
    """``bar.arrive id, count`` (``T.named_barrier_arrive``; PTX ISA, "bar, barrier"):
    the executing threads arrive on a named barrier without waiting, their memory
    accesses before it performed for the threads that wait on that phase (a ``bar.sync``
    of the same id). Orders nothing for the arriving threads' later accesses."""
    trace.emit({"op": "barrive", "id": integer(args[0]), "count": integer(args[1])})


def barrier(trace: Trace, load: Any) -> str:
    """``mbarrier[3]``: a barrier by its array and index."""
    key = load.__chandle__()
    known = trace.memo.barriers.get(key)
    if known is None:
        if kind(load) != "BufferLoad" or len(load.indices) != 1:
            raise Undecided(f"a barrier the check cannot name: {load}")
        known = trace.memo.barriers[key] = (str(load.buffer.data.name), load.indices[0])
    name, index = known
    return f"{name}[{trace.constant(index, 'a barrier index')}]"


@rule("ptx_init_barrier_thread_count")
def init(trace: Trace, name: str, args: list[Any]) -> None:
    trace.emit({"op": "init", "bar": barrier(trace, args[0]),
                "count": trace.constant(args[1], "a barrier's count")})


@rule("mbarrier_wait_parity")
def wait_parity(trace: Trace, name: str, args: list[Any]) -> None:
    trace.emit({"op": "bwait", "bar": barrier(trace, args[0]),
                "parity": trace.constant(args[1], "a wait's parity")})


@rule("ptx_arrive_barrier", "mbarrier_arrive")
def arrive(trace: Trace, name: str, args: list[Any]) -> None:
    if len(args) != 1:
        raise Undecided(f"{name} with {len(args)} arguments (a cluster barrier?)")
    trace.emit({"op": "arrive", "bar": barrier(trace, args[0]), "n": trace.arrivals()})


@rule("ptx_cp_async_barrier_noinc", "ptx_cp_async_barrier")
def copies_arrive(trace: Trace, name: str, args: list[Any]) -> None:
    """``cp.async.mbarrier.arrive{.noinc}`` (PTX ISA, "Parallel Synchronization and
    Communication Instructions: cp.async.mbarrier.arrive"): an arrive-on made by the
    system once every earlier cp.async of the executing thread completes. With
    ``.noinc`` it is one of the arrivals the init count counts; without, the pending
    count is raised first: a net change of zero."""
    noinc = name.endswith("noinc")
    trace.emit({"op": "arrive", "bar": barrier(trace, args[0]),
                "n": trace.arrivals() if noinc else 0, "cp": True})


@rule("ptx_arrive_barrier_expect_tx", "mbarrier_expect_tx")
def expect(trace: Trace, name: str, args: list[Any]) -> None:
    if len(args) != 2:
        raise Undecided(f"{name} with {len(args)} arguments (a cluster barrier?)")
    trace.emit({"op": "expect", "bar": barrier(trace, args[0]),
                "bytes": trace.constant(args[1], "expected bytes") * trace.arrivals(),
                "n": trace.arrivals() if name.startswith("ptx_arrive") else 0})


@rule("ptx_fence_barrier_init")
def fence_init(trace: Trace, name: str, args: list[Any]) -> None:
    trace.emit({"op": "fence"})


@rule("fence_proxy_async")
def fence_proxy(trace: Trace, name: str, args: list[Any]) -> None:
    trace.emit({"op": "pfence"})
