"""Matrix units that read shared tiles asynchronously, through descriptors: Hopper's
wgmma (retired by ``warpgroup_wait``) and Blackwell's tcgen05 MMA (retired when the
phase its ``tcgen05.commit`` arrives on completes), and Blackwell's tensor memory."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...ir.walk import kind
from ..calls import address_of, shared_address
from ..undecided import Undecided
from . import rule
from .barriers import barrier

if TYPE_CHECKING:
    from ..trace import Trace

# Blackwell's tensor-memory operations that touch no shared memory the model follows:
# the tcgen05 fences around a thread barrier (``tcgen05.fence::before_thread_sync`` /
# ``after_thread_sync``), loads and stores between tensor memory and registers (their
# address argument, a shared word, is read as any load), the allocation's release.
TENSOR_MEMORY_OPS = ("tcgen05_before_thread_sync", "tcgen05_after_thread_sync",
                     "tcgen05_ld", "tcgen05_st", "ptx_deallocate_tensor_memory",
                     "deallocate_tmem")


@rule("warpgroup_wait", "wait_wgmma")
def wait(trace: Trace, name: str, args: list[Any]) -> None:
    """``T.wait_wgmma(n)`` is ``tl::wait_wgmma<n>``: ``cute::warpgroup_wait<n>`` too."""
    trace.emit({"op": "wgwait", "n": trace.constant(args[0], "a warpgroup wait")})


@rule("warpgroup_commit_batch")
def commit_batch(trace: Trace, name: str, args: list[Any]) -> None:
    trace.batch = set()
    trace.emit({"op": "wgcommit"})


@rule("initialize_wgmma_descriptor", "initialize_tcgen05_descriptor")
def descriptor(trace: Trace, name: str, args: list[Any]) -> None:
    found = trace.pointer(args[1])
    if found is None:
        raise Undecided("a wgmma descriptor of an address the check cannot read")
    trace.descriptors[args[0].buffer.data] = list(found)


@rule("increase_descriptor_offset")
def descriptor_offset(trace: Trace, name: str, args: list[Any]) -> None:
    region = trace.descriptors.get(args[0].buffer.data)
    if region is None:
        raise Undecided("a wgmma descriptor offset before its initialisation")
    region[2] += trace.constant(args[1], "a descriptor offset")


def _operands(trace: Trace, args: list[Any]) -> list[list[Any]]:
    """The shared regions an MMA reads through the descriptors among its arguments."""
    found = []
    for arg in args:
        region = trace.descriptors.get(arg) if kind(arg) == "Var" else None
        if region is not None:
            found.append(region)
    return found


@rule("ptx_wgmma_ss", "ptx_wgmma_rs")
def wgmma(trace: Trace, name: str, args: list[Any]) -> None:
    """Each operand tile read once per batch (up to the next commit)."""
    for region in _operands(trace, args):
        if tuple(region) not in trace.batch:
            trace.batch.add(tuple(region))
            buffer, root, lo, _ = region
            trace.emit({"op": "read", "buffer": buffer, "root": root, "lo": lo,
                        "hi": None, "how": "wgmma", "async": True})


@rule("ptx_tcgen05_mma_ss", "ptx_tcgen05_mma_ts", "ptx_tcgen05_mma_blockscaled_ss")
def tcgen05_mma(trace: Trace, name: str, args: list[Any]) -> None:
    """PTX ISA, "tcgen05.mma": the MMA reads its shared-memory operands through their
    matrix descriptors asynchronously; it completes only as tracked by a later
    ``tcgen05.commit`` (see :func:`commit`)."""
    for region in _operands(trace, args):
        buffer, root, lo, _ = region
        trace.emit({"op": "read", "buffer": buffer, "root": root, "lo": lo,
                    "hi": None, "how": "tcgen05.mma", "umma": True})
        trace.umma.append(trace.records[-1])


@rule("tcgen05_mma_arrive")
def commit(trace: Trace, name: str, args: list[Any]) -> None:
    """``tl::tcgen05_mma_arrive(&bar)`` (``tl_templates/cuda/tcgen_05.h``): one elected
    lane of each warp running it issues ``tcgen05.commit.cta_group::1.mbarrier::
    arrive::one.shared::cluster.b64 [bar]``. PTX ISA, "tcgen05.commit": the barrier
    tracks the completion of every earlier asynchronous tcgen05 operation of the
    executing thread, and one arrive-on it is made when they complete. The reads of the
    MMAs issued since the previous commit are marked with this commit's number: they
    retire when its arrival's phase completes (:mod:`....core.hazards.rings`). A commit
    to other CTAs' barriers (``cta_group::2``, a multicast mask) is outside the
    model."""
    if len(args) != 1:
        raise Undecided(f"tcgen05_mma_arrive with {len(args)} arguments (two CTAs' "
                        "MMA?)")
    target = address_of(args[0])
    if target is None:
        raise Undecided("a tcgen05 commit to a barrier the check cannot name")
    lo, hi = trace.env[trace.threads] if trace.threads is not None else (0, 0)
    warps = 1 if trace.elected else max((hi - lo + 1 + 31) // 32, 1)
    trace.commits += 1
    trace.emit({"op": "arrive", "bar": barrier(trace, target), "n": warps,
                "commit": trace.commits})
    for read in trace.umma:
        read["commit"] = trace.commits
    trace.umma = []


@rule("ptx_init_tensor_memory")
def allocate(trace: Trace, name: str, args: list[Any]) -> None:
    """``tcgen05.alloc`` writes the address of the tensor memory it allocates into the
    shared word it is given: a store, as the threads' own (outside the model)."""
    target = args[0].args[0]
    trace.store(target.buffer, list(target.indices))


@rule(*TENSOR_MEMORY_OPS)
def tensor_memory(trace: Trace, name: str, args: list[Any]) -> None:
    """A shared word an operation takes the address of is read; other arguments are
    read as expressions."""
    for arg in args:
        load = shared_address(arg)
        if load is not None:
            trace.read_at(load, name)
        elif address_of(arg) is None:
            trace.reads(arg)
