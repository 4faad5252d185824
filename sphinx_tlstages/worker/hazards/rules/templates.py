"""Shared memory reached through a pointer: ``ldmatrix`` and ``stmatrix``, TileLang's CUDA
templates whose workspace the check follows (``tl::AllReduce``), and extern device
functions handed a pointer into shared memory (a scan over a shared array)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...ir.walk import kind
from ..calls import address_of, call_name, shared_address
from ..undecided import Undecided
from . import rule

if TYPE_CHECKING:
    from ..trace import Trace

# Reads through a pointer: bytes each thread reads at its address.
POINTER_READS = {"ptx_ldmatrix": 16}
# The templates whose arguments the walk follows itself (a pointer passed to any other
# call into shared memory is "not checked").
_FOLLOWED = ("tl::AllReduce<",)


@rule(*POINTER_READS)
def matrix_load(trace: Trace, name: str, args: list[Any]) -> None:
    """From each thread's address (the last element's first byte on), its bytes."""
    for arg in args:
        load = shared_address(arg)
        if load is not None:
            element = load.buffer.dtype.bits * load.buffer.dtype.lanes // 8
            trace.read_at(load, name, extra=POINTER_READS[name] - element)


@rule("ptx_stmatrix")
def matrix_store(trace: Trace, name: str, args: list[Any]) -> None:
    """Stores the threads make themselves through a pointer (like a BufferStore into
    shared memory, outside the model: TileLang's thread-sync pass places their
    barriers), taken as the rest of the buffer."""
    for arg in args:
        load = shared_address(arg)
        if load is not None:
            trace.store(load.buffer, list(load.indices), wide=True)


def followed(call: Any) -> bool:
    """Whether ``call`` is a template the walk follows (:func:`all_reduce`)."""
    return call_name(call) == "call_extern" and kind(call.args[0]) == "StringImm" \
        and str(call.args[0].value).startswith(_FOLLOWED)


def all_reduce(trace: Trace, call: Any) -> None:
    """TileLang's ``tl::AllReduce<Reducer, threads, scale, thread_offset[, Barrier[,
    batch, stride]]>::run(x, red_buf)`` (``tl_templates/cuda/reduce.h``): at each level
    of its butterfly whose offset (``threads / 2``, halved down to ``scale``) is 32 or
    more, it synchronises, stores each thread's value at ``red_buf[tid - offset (+ i *
    stride)]``, synchronises again and reads its partner's. Its stores are the threads'
    own (outside the model, as every store); its reads of the workspace are records, and
    its barrier is a ``__syncthreads`` for the model where it spans every thread running
    the call (``SyncThreadsBarrier``, or ``NamedBarrier<n>`` with ``n`` those threads)."""
    name = str(call.args[0].value)
    inner = name[len("tl::AllReduce<"):name.rindex(">")]
    parts = [part.strip() for part in inner.split(",")]
    pointer = next((arg for arg in call.args[1:] if address_of(arg) is not None), None)
    if pointer is None:
        return  # no workspace: warp shuffles only
    try:
        threads, scale = int(parts[1]), int(parts[2])
        offset = int(parts[3])
    except (IndexError, ValueError):
        raise Undecided(f"a pointer into a workspace is passed to {name}") from None
    batch, stride = 1, 0
    if len(parts) >= 7:
        batch, stride = int(parts[5]), int(parts[6])
    levels = 0
    half = threads // 2
    while half >= scale and half >= 32:
        levels += 1
        half //= 2
    if not levels:
        return
    lo_t, hi_t = trace.env.get(trace.threads, (0, 0)) if trace.threads is not None \
        else (0, 0)
    running = hi_t - lo_t + 1
    barrier = parts[4] if len(parts) >= 5 else "tl::SyncThreadsBarrier"
    whole = barrier == "tl::SyncThreadsBarrier" or barrier == f"tl::NamedBarrier<{running}>"
    if barrier.startswith("tl::NamedBarrier<") and not barrier.endswith(">"):
        raise Undecided(f"a pointer into a workspace is passed to {name}")
    load = pointer.args[0]
    first = max(hi_t - offset + 1, threads)
    span = (1 << (first - 1).bit_length()) + (batch - 1) * stride
    size = load.buffer.dtype.bits * load.buffer.dtype.lanes // 8
    buffer, root, lo, _ = trace.region(load.buffer, list(load.indices))
    for _ in range(levels):
        if whole:
            trace.emit({"op": "sync"})
            trace.emit({"op": "sync"})
        trace.emit({"op": "read", "buffer": buffer, "root": root, "lo": lo,
                    "hi": lo + span * size - 1, "how": "tl::AllReduce",
                    "node": call.__chandle__()})


@rule("call_extern", "call_pure_extern")
def extern(trace: Trace, name: str, args: list[Any]) -> None:
    """A device function each calling thread runs to its end (``T.call_extern``): what it
    is handed a pointer into shared memory for, it may read and write anywhere in that
    buffer (:func:`helper`); its other arguments are read."""
    function = str(args[0].value) if args and kind(args[0]) == "StringImm" else name
    for arg in args[1:]:
        if not helper(trace, function, arg):
            trace.reads(arg)


def helper(trace: Trace, function: str, arg: Any) -> bool:
    """A function's pointer into shared memory, if ``arg`` is one: a read that may touch
    any byte of the buffer's slot the pointer falls in, or none (``maybe``: a conflict
    with it is "not checked", never a race), and a store of it (the thread's own). The
    slot: the author handed the function the tile as written, before TileLang gave it a
    version per stage (``verdict._sized`` fills it in); the extent ``tvm_access_ptr``
    declares, where it declares one."""
    load = shared_address(arg)
    if load is not None:
        for index in load.indices:
            trace.reads(index)
        buffer, root, lo, _ = trace.region(load.buffer, list(load.indices))
        hi = None
    else:
        pointed = trace.pointed(arg)
        if pointed is None:
            return False
        buffer, root, lo, hi, _ = pointed
    trace.emit({"op": "read", "buffer": buffer, "root": root, "lo": lo, "hi": hi,
                "how": function, "maybe": True})
    trace.emit({"op": "store", "buffer": buffer, "root": root, "lo": lo,
                "hi": 1 << 62 if hi is None else hi})
    return True
