"""TMA: bulk and tensor copies into shared memory signalled on an mbarrier, their
multicast to a cluster's CTAs, TMA stores out of shared memory, and the branch on a CTA's
rank in its cluster that ``T.copy_cluster`` lowers to."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..calls import has_call
from ..undecided import Undecided
from . import rule
from .barriers import barrier

if TYPE_CHECKING:
    from ..trace import Trace


def _name(var: Any) -> str:
    """A variable's name (``str`` of a TVM node prints it as a script: slow)."""
    return str(getattr(var, "name", "")) or str(var)


@rule("tma_load")
def load(trace: Trace, name: str, args: list[Any]) -> None:
    """Bulk copy: (dst, src, barrier, bytes, ...); tensor copy: (descriptor, barrier, dst,
    coordinates...), whose box size only the descriptor knows (the host builds it:
    :func:`..verdict._boxes`)."""
    dst = trace.pointer(args[0])
    bar, size = (args[2], trace.constant(args[3], "a copy's bytes")) \
        if dst is not None else (args[1], None)
    if dst is None:
        dst, size = trace.pointer(args[2]), trace.boxes.get(_name(args[0]))
    if dst is None:
        raise Undecided("a TMA load into an address the check cannot read")
    buffer, root, lo, _ = dst
    trace.emit({"op": "tma", "bar": barrier(trace, bar), "buffer": buffer, "root": root,
                "lo": lo, "bytes": size})


@rule("tma_load_multicast")
def multicast(trace: Trace, name: str, args: list[Any]) -> None:
    """(descriptor, barrier, dst, CTA mask, coordinates...): the box and its completion
    land at the same offsets in every CTA of the mask, this one too."""
    dst = trace.pointer(args[2])
    if dst is None:
        raise Undecided("a TMA multicast into an address the check cannot read")
    buffer, root, lo, _ = dst
    trace.emit({"op": "tma", "bar": barrier(trace, args[1]), "buffer": buffer,
                "root": root, "lo": lo, "bytes": trace.boxes.get(_name(args[0])),
                "multicast": True})


@rule("tma_store")
def store(trace: Trace, name: str, args: list[Any]) -> None:
    """(descriptor, source, coordinates...): the box is read from shared memory
    (asynchronously, after the threads' stores are fenced for it)."""
    found = trace.pointer(args[1])
    if found is None:
        raise Undecided("a TMA store from an address the check cannot read")
    buffer, root, lo, _ = found
    trace.emit({"op": "read", "buffer": buffer, "root": root, "lo": lo, "hi": None,
                "bytes": trace.boxes.get(_name(args[0])), "how": "tma_store"})


def on_cluster_rank(cond: Any) -> bool:
    """Whether a condition asks the CTA's rank in its cluster."""
    return has_call(cond, ("block_rank_in_cluster",))


def cluster_branch(trace: Trace, stmt: Any) -> None:
    """A TMA copy under a condition on the CTA's rank in its cluster, as
    ``T.copy_cluster(..., cluster_mask=m)`` lowers: the leader multicasts the box to
    every CTA of the mask, a CTA outside the mask loads its own (``else: if not in m:
    tma_load``). Every CTA then receives the same box at the same offset, signalled on
    its own barrier: the records are one path's, when both paths agree."""
    if stmt.else_case is None:
        if not trace.fallback:
            raise Undecided(f"a synchronisation under the condition {stmt.condition}")
        trace.walk(stmt.then_case)  # a CTA in the mask gets the leader's multicast
        return
    paths: list[list[dict[str, Any]]] = []
    outer, kept = trace.fallback, trace.records
    for number, case in enumerate((stmt.then_case, stmt.else_case)):
        trace.records, trace.fallback = [], number == 1
        try:
            trace.walk(case)
        finally:
            paths.append(trace.records)
            trace.records, trace.fallback = kept, outer

    def same(path: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
        return [(r["op"], r.get("bar"), r.get("buffer"), r.get("lo"), r.get("bytes"))
                for r in path]

    if not any(r.get("multicast") for r in paths[0]) or same(paths[0]) != same(paths[1]):
        raise Undecided(f"a synchronisation under the condition {stmt.condition}")
    trace.records.extend(paths[0])
