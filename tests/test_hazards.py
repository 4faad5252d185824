"""The hazard check on real compiler output: TileLang's known pipelining bug flagged, its
correct twin clean, the seed GEMM clean, and every mutation of its synchronisation caught.

The bugs, open in TileLang 0.1.15: tile-ai/tilelang#2668, a loop that consumes a shared
buffer and then copies the next tile into it lowers at num_stages >= 2 with no
cp_async_wait and one buffer version; tile-ai/tilelang#2927, cluster copies in a loop,
each on a barrier of its own, wait with the loop's parity on fresh barriers. A TileLang
that fixes one changes the code, so the tests accept "flagged, or the lowered code no
longer has the defect".
"""

from __future__ import annotations

import importlib.metadata
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sphinx_tlstages.core.hazards.check import verdict

from .html_tree import Element
from .kernels import GEMM, read, rst

VERSION = importlib.metadata.version("tilelang")

# This module lowers and mutates TileLang IR in the test process itself. So that the
# tests proving that Sphinx's own process never imports TileLang can prove it, TileLang
# is imported only when these tests run, and conftest runs them last.
tvm: Any = None
ir_transform: Any = None
post_order_visit: Any = None
substitute: Any = None
hazard_check: Any = None
ir_facts: Any = None
kernel_module: Any = None
prim_func: Any = None
lower_kept: Any = None


@pytest.fixture(autouse=True, scope="module")
def _tilelang() -> None:
    global tvm, ir_transform, post_order_visit, substitute, hazard_check, ir_facts
    global kernel_module, prim_func, lower_kept
    from tilelang import tvm
    from tvm.tirx.stmt_functor import ir_transform, post_order_visit, substitute

    from sphinx_tlstages.worker.hazards import verdict as hazard_check
    from sphinx_tlstages.worker.ir import facts as ir_facts
    from sphinx_tlstages.worker.kernel_module import kernel_module, prim_func
    from sphinx_tlstages.worker.lowering import lower_kept


# The kernels, each in a file of its own (tests/kernels/hazards), as a directive's body.
# Consume the tile in S, then fetch the next one into S: the order #2668 mislowers.
ROLLING_SUM = read("hazards/rolling_sum.py")
# The same sum in the order the pipeliner expects: fetch, then consume.
FETCH_FIRST = read("hazards/fetch_first.py")
# A pair of CTAs shares each chunk of a panel: the leader multicasts it, each CTA sums it.
# One barrier per chunk: the pattern of tile-ai/tilelang#2927.
PANEL_SUM = read("hazards/panel_sum.py")
# The same sum with one barrier reused by every chunk: its parity is the loop's.
PANEL_SUM_ONE_BARRIER = read("hazards/panel_sum_one_barrier.py")
# Each row of a tile weighted by a vector fetched with it: 64 floats, copied by half of
# the 128 threads (``if tx < 64``), as the backward flash-attention kernels fetch their
# row statistics.
WEIGHTED_ROWS = read("hazards/weighted_rows.py")
# A ring the kernel manages itself: (stages, M, K) buffers, a loader and a math
# warpgroup, full and empty barriers it waits on with its own parities.
RING_GEMM = read("hazards/ring_gemm.py")
# A gate the threads gather element by element beside two tiles the TMA copies: on sm_90a
# the producer's gather is cp.async, and its threads arrive on the full barrier with
# ``cp.async.mbarrier.arrive.noinc`` (the barrier's count is theirs).
DECAYED_GEMM = read("hazards/decayed_gemm.py")
# Two pipelined loops over one shared matrix: on sm_90a TileLang specialises the warps of
# the first (TMA, a producer branch) and leaves the second to the consumer, with cp.async.
MIXED_TWICE = read("hazards/mixed_twice.py")
# A state loaded into shared memory before a warp-specialised loop and read into registers
# before it; TileLang 0.1.15 (sm_90a) loads it by TMA and puts the wait on its barrier in the
# loop's first iteration, after the read: a real race.
CARRIED_STATE = read("hazards/carried_state.py")
# A GEMM whose A rows are gathered through an index (cp.async, one 16-byte copy per
# thread) beside B's tile by TMA: on sm_90a the producer signals its cp.async copies on
# B's full barrier with ``cp.async.mbarrier.arrive.noinc``.
GATHERED_GEMM = read("hazards/gathered_gemm.py")
# Each thread sums the four floats of thread tx ^ partner in each chunk T.copy fetches;
# with partner 0 they are the ones its own 16-byte cp.async wrote.
OWN_CHUNKS = read("hazards/own_chunks.py")

# The fetch-then-consume sum read back to front (each thread reads bytes another thread
# copied, so the pipeline's barriers are needed), with a barrier its author added before
# the pipeline, where nothing in shared memory has been touched yet: a barrier no
# dependence needs; and its twin without that barrier.
EXTRA_BARRIER = read("hazards/extra_barrier.py")
REVERSED_SUM = read("hazards/reversed_sum.py")
# Three warp groups: a loader of B's tile, and two math groups, each fetching its own half
# of A's rows by TMA and releasing B's tile on one barrier of count 256 (128 arrivals
# from each group): both roles arrive on it, each phase takes both shares.
SPLIT_ROWS_GEMM = read("hazards/split_rows_gemm.py")
# A Blackwell GEMM whose accumulator lives in tensor memory: each tcgen05 MMA reads its
# shared tiles through descriptors asynchronously, and its commit arrives on a barrier
# the math threads wait on before they release the stage to the TMA loader.
SCALED_TMEM_GEMM = read("hazards/scaled_tmem_gemm.py")
# The same kind of GEMM fed by cp.async (TMA and warp specialisation off): TileLang 0.1.15
# issues the next tile's cp.async into the stage the MMA reads after a __syncthreads, but
# before the wait on the MMA's commit barrier.
COPIED_TMEM_GEMM = read("hazards/copied_tmem_gemm.py")

SUM_PARAMS = {"N": 512, "K": 16}
PANEL_PARAMS = {"M": 256, "N": 256, "chunks": 4}
GEMM_ARGS = {"M": 1024, "N": 1024, "K": 1024, "block_M": 128, "block_N": 128,
             "block_K": 64, "threads": 128}
HEAD = "Hazards\n=======\n\n"


HEADER = "import tilelang\nimport tilelang.language as T\n\n"


def lowered(source: str, factory: str, arch: str, **kwargs: Any) -> tuple[dict[str, Any], str]:
    """The modules the worker keeps of one real lowering, and the code."""
    with kernel_module(HEADER + source, "hazard_kernel.py", None) as module:
        func, configs = prim_func(module.namespace[factory], kwargs)
        after, code = lower_kept(func, configs, {"kind": "cuda", "arch": arch})
    return after, code


def check(after: dict[str, Any], arch: str = "sm_80") -> dict[str, Any]:
    return hazard_check.hazards(after, {"kind": "cuda", "arch": arch},
                                ir_facts.main_function, ir_facts.device_function)


@pytest.mark.parametrize("num_stages", [2, 3])
def test_consume_then_fetch_is_flagged_on_sm80(num_stages: int) -> None:
    after, code = lowered(ROLLING_SUM, "rolling_sum", "sm_80", num_stages=num_stages,
                          **SUM_PARAMS)
    found = check(after)
    still_broken = "cp_async_wait" not in code
    assert found["verdict"] == "hazard" or not still_broken, (VERSION, found)
    if still_broken:  # TileLang 0.1.15: the read of S races the copy of the next tile
        assert found["findings"][0]["kind"] == "RAW"
        assert found["findings"][0]["buffer"] == "S"
        assert "still in flight: no cp_async_wait covers it" in found["findings"][0]["text"]


@pytest.mark.parametrize("num_stages", [1, 2, 3])
def test_fetch_then_consume_is_clean_on_sm80(num_stages: int) -> None:
    after, _ = lowered(FETCH_FIRST, "fetch_first", "sm_80", num_stages=num_stages,
                       **SUM_PARAMS)
    found = check(after)
    assert found["verdict"] == "none", found
    if num_stages > 1:
        assert found["text"] == (f"none found: RAW and WAR on S over {num_stages} slots; "
                                 "16 cp.async groups")


# --- mutations of the seed GEMM's synchronisation on sm_80 -------------------------------

def _calls(stmt: Any, name: str) -> bool:
    value = getattr(stmt, "value", None)
    return type(stmt).__name__ == "Evaluate" and str(getattr(getattr(value, "op", None),
                                                            "name", "")).endswith(name)


def mutated(after: dict[str, Any], change: Any, loop_only: bool = True) -> dict[str, Any]:
    """``after`` with the final device function's pipelined loop body (or its whole body)
    rewritten by ``change`` (a function of each statement: None keeps it, a statement
    replaces it)."""

    def in_loop(node: Any) -> Any:
        if type(node).__name__ == "For" and "tl_pipelined_num_stages" in node.annotations:
            body = ir_transform(node.body, None, change, ["tirx.Evaluate"])
            return tvm.tirx.For(node.loop_var, node.min, node.extent, node.kind, body,
                                node.thread_binding, node.annotations)
        return None

    return _rewritten(after, in_loop, ["tirx.For"]) if loop_only \
        else _rewritten(after, change, ["tirx.Evaluate"])


def _rewritten(after: dict[str, Any], change: Any, kinds: list[str]) -> dict[str, Any]:
    """``after`` with the final device function's body rewritten by ``change`` on the
    nodes of ``kinds`` (None keeps a node, a node replaces it)."""
    mod = after["final"]
    device = ir_facts.device_function(mod)
    body = ir_transform(device.body, None, change, kinds)
    gvar = next(g for g, f in mod.functions.items() if f.same_as(device))
    return {**after, "final": tvm.IRModule({**dict(mod.functions.items()),
                                            gvar: device.with_body(body)})}


def _nth(name: str, n: int, replace: Any) -> Any:
    """A mutation: the ``n``-th call ``name`` of the loop body replaced (a fresh count
    each time it is applied)."""

    def mutation() -> Any:
        seen = [0]

        def change(stmt: Any) -> Any:
            if not _calls(stmt, name):
                return None
            seen[0] += 1
            return replace(stmt) if seen[0] == n + 1 else None

        return change

    return mutation


def _no_op(stmt: Any) -> Any:
    return tvm.tirx.Evaluate(0)


def _wait_more(stmt: Any) -> Any:
    call = stmt.value
    return tvm.tirx.Evaluate(tvm.tirx.Call(call.dtype, call.op,
                                           [tvm.tirx.IntImm("int32", call.args[0].value + 1)]))


MUTATIONS = {
    "the steady-state wait deleted": _nth("ptx_wait_group", 0, _no_op),
    "the wait count raised by one": _nth("ptx_wait_group", 0, _wait_more),
    "the first __syncthreads deleted": _nth("tvm_storage_sync", 0, _no_op),
    "the second __syncthreads deleted": _nth("tvm_storage_sync", 1, _no_op),
}


@pytest.fixture(scope="module", params=[2, 3, 4])
def gemm80(request: pytest.FixtureRequest) -> dict[str, Any]:
    after, _ = lowered(GEMM, "matmul", "sm_80", num_stages=request.param, **GEMM_ARGS)
    return after


def test_seed_gemm_is_clean_on_sm80(gemm80: dict[str, Any]) -> None:
    found = check(gemm80)
    assert found["verdict"] == "none", found
    assert re.fullmatch(r"none found: RAW and WAR on A_shared, B_shared over [234] slots; "
                        r"16 cp\.async groups", found["text"]), found


@pytest.mark.parametrize("mutation", sorted(MUTATIONS))
def test_each_mutation_of_the_seed_gemm_is_flagged(gemm80: dict[str, Any],
                                                   mutation: str) -> None:
    found = check(mutated(gemm80, MUTATIONS[mutation]()))
    assert found["verdict"] == "hazard", (mutation, found)


# --- mutations of the seed GEMM's barrier ring on sm_90a (and sm_100a's TMA ring) ---------

def _call(stmt: Any, args: list[Any]) -> Any:
    return tvm.tirx.Evaluate(tvm.tirx.Call(stmt.value.dtype, stmt.value.op, args))


def _flip(stmt: Any) -> Any:
    parity = stmt.value.args[1]
    return _call(stmt, [stmt.value.args[0],
                        tvm.tirx.call_intrin("int32", "tirx.bitwise_xor", parity, 1)])


def _halve(stmt: Any) -> Any:
    count = stmt.value.args[1]
    return _call(stmt, [stmt.value.args[0], tvm.tirx.IntImm("int32", count.value // 2)])


def _next_slot(stmt: Any) -> Any:
    """A TMA tensor copy into the next slot of the ring: ``ko`` -> ``ko + 1`` in its
    destination."""
    args = list(stmt.value.args)
    load = args[2].args[0]
    index = load.indices[0]
    loop_vars: list[Any] = []
    post_order_visit(index, lambda n: loop_vars.append(n) if isinstance(n, tvm.tirx.Var)
                     and n.name == "ko" else None)
    shifted = substitute(index, {loop_vars[0]: loop_vars[0] + 1})
    args[2] = tvm.tirx.address_of(tvm.tirx.BufferLoad(load.buffer, [shifted]))
    return _call(stmt, args)


def _arrive_before_wait() -> Any:
    """The consumer's arrive on its empty barrier moved before its warpgroup_wait."""
    moved: list[Any] = []

    def change(stmt: Any) -> Any:
        if _calls(stmt, "ptx_arrive_barrier") and not moved:
            moved.append(stmt)
            return tvm.tirx.Evaluate(0)
        return None

    def put(stmt: Any) -> Any:
        return tvm.tirx.SeqStmt([moved[0], stmt]) if _calls(stmt, "warpgroup_wait") else None

    return change, put


RING_MUTATIONS = {
    # In program order: the producer's wait on "empty", then the consumer's on "full".
    "the consumer's wait deleted": _nth("mbarrier_wait_parity", 1, _no_op),
    "the producer's wait deleted": _nth("mbarrier_wait_parity", 0, _no_op),
    "the consumer's parity flipped": _nth("mbarrier_wait_parity", 1, _flip),
    "the producer's parity flipped": _nth("mbarrier_wait_parity", 0, _flip),
    "the consumer's arrive dropped": _nth("ptx_arrive_barrier", 0, _no_op),
    "a TMA copy moved to the next slot": _nth("tma_load", 0, _next_slot),
    "the barrier-init fence deleted": _nth("ptx_fence_barrier_init", 0, _no_op),
    "the __syncthreads after barrier init deleted": _nth("tvm_storage_sync", 0, _no_op),
}


@pytest.fixture(scope="module", params=[("sm_90a", 2), ("sm_90a", 3), ("sm_90a", 4),
                                        ("sm_100a", 3)])
def gemm90(request: pytest.FixtureRequest) -> tuple[dict[str, Any], str, int]:
    arch, num_stages = request.param
    after, _ = lowered(GEMM, "matmul", arch, num_stages=num_stages, **GEMM_ARGS)
    return after, arch, num_stages


@pytest.mark.smoke  # at both ends of the TileLang range: 0.1.14 names its passes otherwise
def test_seed_gemm_ring_is_clean(gemm90: tuple[dict[str, Any], str, int]) -> None:
    after, arch, num_stages = gemm90
    found = check(after, arch)
    assert found["text"] == (f"none found: RAW and WAR on A_shared, B_shared over {num_stages} "
                             f"slots; {2 * num_stages} barriers, phases and arrivals, bytes"), \
        found


@pytest.mark.parametrize("mutation", sorted(RING_MUTATIONS))
def test_each_mutation_of_the_ring_is_flagged(gemm90: tuple[dict[str, Any], str, int],
                                              mutation: str) -> None:
    after, arch, _ = gemm90
    found = check(mutated(after, RING_MUTATIONS[mutation](), loop_only=False), arch)
    assert found["verdict"] == "hazard", (mutation, found)


def test_a_lower_init_count_is_flagged(gemm90: tuple[dict[str, Any], str, int]) -> None:
    after, arch, num_stages = gemm90  # the first "empty" barrier: 128 consumer threads
    found = check(mutated(after, _nth("ptx_init_barrier_thread_count", num_stages, _halve)(),
                          loop_only=False), arch)
    assert found["verdict"] == "hazard" and found["findings"][0]["kind"] == "ARRIVE", found


def test_the_arrive_moved_before_the_mma_wait_is_flagged(
        gemm90: tuple[dict[str, Any], str, int]) -> None:
    after, arch, _ = gemm90
    if arch != "sm_90a":
        pytest.skip("only wgmma has a warpgroup_wait")
    change, put = _arrive_before_wait()
    first = mutated(after, change, loop_only=False)
    found = check(mutated(first, put, loop_only=False), arch)
    assert found["verdict"] == "hazard" and found["findings"][0]["kind"] == "WAR", found


def test_a_raised_warpgroup_wait_is_flagged(gemm90: tuple[dict[str, Any], str, int]) -> None:
    after, arch, _ = gemm90
    if arch != "sm_90a":
        pytest.skip("only wgmma has a warpgroup_wait")
    found = check(mutated(after, _nth("warpgroup_wait", 0, _wait_more)(), loop_only=False),
                  arch)
    assert found["verdict"] == "hazard" and found["findings"][0]["kind"] == "WAR", found


def test_consume_then_fetch_is_flagged_on_sm90a() -> None:
    after, code = lowered(ROLLING_SUM, "rolling_sum", "sm_90a", num_stages=2, **SUM_PARAMS)
    found = check(after, "sm_90a")
    # The defect: inside the loop, every tile is copied to the start of one S.
    one_version = "tma_load((&(S[0])), (&(A[((k" in code
    assert found["verdict"] == "hazard" or not one_version, (VERSION, found)
    if one_version:  # TileLang 0.1.15: the copy of tile k+1 overwrites what k reads
        assert [(f["kind"], f["buffer"]) for f in found["findings"]] == [("WAR", "S")]


@pytest.mark.smoke
def test_fetch_then_consume_is_clean_on_sm90a() -> None:
    after, _ = lowered(FETCH_FIRST, "fetch_first", "sm_90a", num_stages=2, **SUM_PARAMS)
    assert check(after, "sm_90a")["text"] == ("none found: RAW and WAR on S over 2 slots; "
                                              "4 barriers, phases and arrivals, bytes")


def _double(stmt: Any) -> Any:
    count = stmt.value.args[1]
    return _call(stmt, [stmt.value.args[0], tvm.tirx.IntImm("int32", count.value * 2)])


@pytest.mark.parametrize("mutation", ["halved", "doubled"])
def test_changed_expected_bytes_are_flagged(gemm90: tuple[dict[str, Any], str, int],
                                            mutation: str) -> None:
    """The producer expects 16384 bytes twice per stage (A's box and B's, 16384 each); with
    the loop's first expect_tx changed, no phase's bytes are its copies'."""
    after, arch, _ = gemm90
    change = _halve if mutation == "halved" else _double
    found = check(mutated(after, _nth("mbarrier_expect_tx", 0, change)(), loop_only=False),
                  arch)
    assert found["verdict"] == "hazard", found
    assert {f["kind"] for f in found["findings"]} == {"TX"}, found
    assert re.search(r"mbarrier\[0\] expects (24576|49152) bytes at ko=0 \(phase 0\) but "
                     r"the TMA copies signalling it bring 32768", found["findings"][0]["text"]), \
        found


def test_cluster_copies_on_a_barrier_each_are_flagged_on_sm90a() -> None:
    """tile-ai/tilelang#2927 (open; TileLang 0.1.15 lowers it so): the wait on ready[s]
    asks for parity s & 1; ready[1] has completed no phase yet, so the wait with parity 1
    returns at once and the read of tiles[1] races its multicast."""
    after, code = lowered(PANEL_SUM, "panel_sum", "sm_90a", **PANEL_PARAMS)
    found = check(after, "sm_90a")
    still_broken = "ready[s].wait((s & 1));" in code
    assert "tl::tma_load_multicast(" in code
    assert found["verdict"] == "hazard" or not still_broken, (VERSION, found)
    if still_broken:
        assert [(f["kind"], f["buffer"], f["at"]) for f in found["findings"]] == \
            [("RAW", "tiles", "s=1")], found
        assert "no wait on ready[1] covers it" in found["findings"][0]["text"]


def test_the_cluster_finding_names_its_statements_and_cuda_lines() -> None:
    """Outside a pipelined loop, the finding's iteration (s=1) names the loop whose
    statements use the buffer; each comes with the CUDA lines it became."""
    from sphinx_tlstages.core.results import cuda as cuda_text
    from sphinx_tlstages.core.results.facts import _located

    after, code = lowered(PANEL_SUM, "panel_sum", "sm_90a", **PANEL_PARAMS)
    found = check(after, "sm_90a")
    if found["verdict"] != "hazard":  # a TileLang without #2927's defect
        assert "ready[s].wait((s & 1));" not in code, VERSION
        return
    source = HEADER + PANEL_SUM  # the module text lowered() executes, numbered from 1
    cuda = cuda_text.normalise(code, "hazard_kernel.py")
    located = _located(found, [], source, "panel_sum", cuda, "hazard_kernel.py")
    listing = [line for line in cuda.splitlines() if not line.lstrip().startswith("#line")]
    copy, read = located["findings"][0]["statements"]
    assert copy["text"].startswith("T.copy_cluster(X[s, by * block_M, bx * block_N]")
    assert source.splitlines()[copy["line"] - 1].lstrip().startswith("T.copy_cluster(")
    assert any("tma_load_multicast" in listing[n - 1] for n in copy["cuda_lines"]), copy
    assert read["text"] == ("for i, j in T.Parallel(block_M, block_N): "
                            "acc[i, j] += tiles[s, i, j]")
    assert read["cuda_lines"] and not set(read["cuda_lines"]) & set(copy["cuda_lines"])


def test_a_multicast_into_a_tile_it_rewrites_is_not_checked() -> None:
    """One tile for every chunk: the leader's next multicast may land while the other CTA
    still reads the tile, which this CTA's code cannot show."""
    source = PANEL_SUM_ONE_BARRIER.replace("T.alloc_shared((chunks, block_M, block_N)",
                                           "T.alloc_shared((block_M, block_N)") \
        .replace("tiles[s, :, :]", "tiles").replace("tiles[s, i, j]", "tiles[i, j]")
    after, code = lowered(source, "panel_sum", "sm_90a", **PANEL_PARAMS)
    assert "tl::tma_load_multicast(" in code
    assert check(after, "sm_90a")["text"] == (
        "not checked: a TMA multicast rewrites bytes of tiles: the other CTAs' reads of them "
        "are not modelled")


def test_cluster_copies_on_one_barrier_are_clean_on_sm90a() -> None:
    after, code = lowered(PANEL_SUM_ONE_BARRIER, "panel_sum", "sm_90a", **PANEL_PARAMS)
    assert "ready[0].wait((s & 1));" in code
    assert check(after, "sm_90a")["text"] == ("none found: RAW and WAR on tiles over 1 slot; "
                                              "1 barrier, phases and arrivals, bytes")


@pytest.mark.parametrize("num_stages", [2, 3])
def test_a_copy_by_part_of_the_threads_is_clean_on_sm80(num_stages: int) -> None:
    """The copy of w runs under ``if threadIdx.x < 64``: its slot is 256 bytes, not the
    512 that all 128 threads would write (that overlap of the next slot was a false RAW
    on TileLang's own backward flash-attention example)."""
    after, code = lowered(WEIGHTED_ROWS, "weighted_rows", "sm_80", N=64, K=8,
                          num_stages=num_stages)
    assert "if (((int)threadIdx.x) < 64) {" in code
    assert check(after)["text"] == (f"none found: RAW and WAR on tile, w over {num_stages} "
                                    "slots; 8 cp.async groups")


# The seed GEMM with its tile staged in shared memory for the store (a TMA store on Hopper).
GEMM_STAGED_STORE = GEMM.replace(
    "            T.copy(C_local, C[by * block_M, bx * block_N])",
    "            C_shared = T.alloc_shared((block_M, block_N), dtype)\n"
    "            T.copy(C_local, C_shared)\n"
    "            T.copy(C_shared, C[by * block_M, bx * block_N])")


def test_a_tma_store_epilogue_is_checked_on_sm90a() -> None:
    """The TMA store reads C_shared's box: a read like any other, not "not checked"."""
    assert GEMM_STAGED_STORE != GEMM
    after, code = lowered(GEMM_STAGED_STORE, "matmul", "sm_90a", num_stages=3, **GEMM_ARGS)
    assert "tl::tma_store(" in code
    assert check(after, "sm_90a")["text"] == (
        "none found: RAW and WAR on A_shared, B_shared over 3 slots; 6 barriers, phases and "
        "arrivals, bytes")


def test_a_ring_the_kernel_manages_itself_is_clean_on_sm90a() -> None:
    """The pipeliner does not version a_ring: its slots are its first index (a wgmma
    operand starting in slot 0 once spread over slot 1 too: a false WAR on TileLang's
    own barrier-pipe example)."""
    after, code = lowered(RING_GEMM, "ring_gemm", "sm_90a", M=1024, N=1024, K=1024)
    assert "tl::increase_descriptor_offset<int>(desc_a, ((k & 1) * 16384));" in code
    found = check(after, "sm_90a")
    assert found["text"] == ("none found: RAW and WAR on a_ring, b_ring over 1 slot; 4 barriers, "
                             "phases and arrivals, bytes"), found
    # Its own parity flipped on the math side is still a race.
    flipped = check(mutated(after, _nth("mbarrier_wait_parity", 1, _flip)(), loop_only=False),
                    "sm_90a")
    assert flipped["verdict"] == "hazard", flipped


def test_a_trace_without_copies_is_not_checked() -> None:
    assert verdict([{"op": "sync", "at": ""}], {})["verdict"] == "not checked"


# --- on the page -------------------------------------------------------------------------

def hazard_rows(result: Any, index: int) -> list[list[str]]:
    """The *Hazards* table under the ``index``-th directive's summary, as cell texts."""
    part = result.part("tl-summary", index=index)
    found = [t for t in part.iter("table") if "tl-hazards" in t.attrs.get("class", "")]
    assert len(found) == 1
    return [[cell.astext() for cell in row.children
             if isinstance(cell, Element) and cell.tag in ("td", "th")]
            for row in found[0].iter("tr")]


def test_a_page_with_the_race_warns_at_the_directive_and_its_twin_does_not(build) -> None:
    racy = rst(ROLLING_SUM, num_stages="1 2", params="N=512 K=16", name="racy")
    twin = rst(FETCH_FIRST, num_stages="1 2", params="N=512 K=16", name="twin")
    page = HEAD + racy + "\n" + twin
    result = build({"index.rst": page})
    line = page.splitlines().index(".. tl-pipeline::") + 1
    found = re.findall(r"index\.rst:(\d+): WARNING: (.*?) \[tlstages\.hazard\]",
                       result.warnings)
    assert [int(n) for n, _ in found] == [line], result.warnings
    assert found[0][1].startswith("racy: num_stages=2: hazard: RAW on S")
    copy_line = next(i for i, text in enumerate(page.splitlines(), 1)
                     if "T.copy(A[k + 1, :], S)" in text)
    # Each statement with its kernel line and the CUDA lines its #line directives mark.
    assert re.search(rf"\(for i in T\.Parallel\(N\): acc\[i\] \+= S\[i\] at line "
                     rf"{copy_line - 2}, CUDA lines \d+(, \d+)+; T\.copy\(A\[k \+ 1, :\], S\) "
                     rf"at line {copy_line}, CUDA lines \d+(, \d+)+\)", found[0][1]), found[0][1]
    racy_rows, twin_rows = (hazard_rows(result, i) for i in (0, 1))
    assert racy_rows[0][0] == twin_rows[0][0] == "Hazards"
    verdicts = {row[0]: row[1] for row in racy_rows[1:]}
    assert verdicts["1"] == "not checked: no asynchronous copy into shared memory"
    assert verdicts["2"].startswith("hazard: RAW on S")
    assert "no cp_async_wait covers it" in verdicts["2"]
    twin = [row for row in twin_rows[1:] if row[1].startswith("none found")]
    assert twin == [["1", "none found: RAW and WAR on S over 1 slot; 16 cp.async groups"],
                    ["2", "none found: RAW and WAR on S over 2 slots; 16 cp.async groups"]], \
        twin_rows


def test_expect_hazard_turns_the_finding_into_a_note(build) -> None:
    page = HEAD + rst(ROLLING_SUM, num_stages="2", params="N=512 K=16", name="bug",
                      expect_hazard="2: RAW on S", assert_='hazards.verdict == "hazard"')
    result = build({"index.rst": page})
    assert "[tlstages.hazard]" not in result.warnings, result.warnings
    assert "expected by :expect-hazard:" in result.status


def test_a_missing_expected_finding_is_an_error(build) -> None:
    page = HEAD + rst(FETCH_FIRST, num_stages="2", params="N=512 K=16", name="clean",
                      expect_hazard="2")
    result = build({"index.rst": page})
    assert re.search(r"ERROR: clean: num_stages=2: :expect-hazard: lists it, but the check "
                     r"says 'none found", result.warnings), result.warnings


def test_tlstages_lower_keeps_a_flagged_variant_ok(tmp_path: Path) -> None:
    """A finding never fails its variant: ``tlstages lower`` exits 0, the JSON holds it."""
    kernel = tmp_path / "rolling.py"
    kernel.write_text(ROLLING_SUM)
    done = subprocess.run([sys.executable, "-m", "sphinx_tlstages", "lower", str(kernel),
                           "--params", "N=512", "K=16", "--num-stages", "2", "--target",
                           "sm_80", "--json"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)["2"]
    assert result["ok"] is True
    assert result["hazards"]["verdict"] == "hazard" or "cp_async_wait" in result["cuda"]
    if result["hazards"]["verdict"] == "hazard":  # the statements and their CUDA lines
        listing = [line for line in result["cuda"].splitlines()
                   if not line.lstrip().startswith("#line")]
        read, copy = result["hazards"]["findings"][0]["statements"]
        assert read["text"] == "for i in T.Parallel(N): acc[i] += S[i]"
        # The sum's first line each time; it reads S within the next lines.
        assert read["cuda_lines"] and all(any("*)(S + " in line for line in listing[n - 1:n + 3])
                                          for n in read["cuda_lines"]), read
        assert copy["text"] == "T.copy(A[k + 1, :], S)"
        assert copy["cuda_lines"] and all("cp_async_gs" in listing[n - 1]
                                          for n in copy["cuda_lines"]), copy


def test_a_tile_copied_as_several_tma_boxes_is_clean() -> None:
    """B (32 x 128 half) is copied as two TMA boxes of 64 columns: each box starts inside
    its slot and no extent may spill into the next slot (a false WAR once did)."""
    source = read("styles/autotuned_bmm.py")
    for num_stages in (2, 3):
        after, code = lowered(source, "batched_matmul", "sm_90a", batch=2, M=256, N=256,
                              K=256, num_stages=num_stages)
        assert "tl::tma_load(" in code
        assert check(after, "sm_90a")["verdict"] == "none", num_stages


def test_the_race_fails_sphinx_build_w_on_sm80_and_sm90a_and_its_twin_passes(
        tmp_path: Path) -> None:
    def strict(source: str, name: str) -> tuple[int, str, int]:
        src = tmp_path / name
        src.mkdir()
        (src / "conf.py").write_text('extensions = ["sphinx_tlstages"]\nproject = "p"\n')
        page = HEAD + rst(source, num_stages="2", target="sm_80 sm_90a",
                          params="N=512 K=16", name=name)
        (src / "index.rst").write_text(page)
        done = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q",
                               "-b", "html", str(src), str(tmp_path / f"{name}-out")],
                              capture_output=True, text=True, timeout=600)
        return done.returncode, done.stderr, page.splitlines().index(".. tl-pipeline::") + 1

    status, said, line = strict(ROLLING_SUM, "racy")
    found = re.findall(r"index\.rst:(\d+): (?:WARNING|ERROR): racy: ([^:]+): hazard: (\w+ on S)",
                       said)
    assert status != 0
    assert found == [(str(line), "sm_80, num_stages=2", "RAW on S"),
                     (str(line), "sm_90a, num_stages=2", "WAR on S")], said
    status, said, _ = strict(FETCH_FIRST, "twin")
    assert status == 0 and "hazard" not in said, said


@pytest.mark.parametrize("num_stages", [1, 2])
def test_cp_async_arrivals_on_a_full_barrier_are_counted(num_stages: int) -> None:
    """The producer's ``cp.async.mbarrier.arrive.noinc`` is each of its threads' arrival:
    uncounted, the full barrier's phase never completes (a false HANG once did)."""
    after, code = lowered(DECAYED_GEMM, "decayed_gemm", "sm_90a", M=256, N=256, K=512,
                          num_stages=num_stages)
    assert "noinc" in code  # the arrival this test is about
    found = check(after, "sm_90a")
    assert found["verdict"] == "none", found
    assert "phases and arrivals" in found["text"]


@pytest.mark.parametrize("num_stages", [1, 2])
def test_a_consumer_that_copies_with_cp_async_is_its_own_role(num_stages: int) -> None:
    """The producer branch is the one issuing the TMA loads, even when the consumer issues
    cp.async copies of its own (once both were called producers: "not checked"). At two
    stages the last wgmma's descriptor points a byte offset past its buffer's first slot
    (``handle_add_byte_offset``: once "not checked" too); its waits deleted, the reads of
    that slot race their copies."""
    after, code = lowered(MIXED_TWICE, "mixed_twice", "sm_90a", rows=64, p_cols=256,
                          q_cols=256, num_stages=num_stages)
    assert "tma_load" in code and "cp_async" in code
    found = check(after, "sm_90a")
    assert found["verdict"] == "none", found
    assert "cp.async groups" in found["text"] and "phases and arrivals" in found["text"]
    if num_stages == 2:
        assert "handle_add_byte_offset" in str(ir_facts.device_function(after["final"]))
        unwaited = check(mutated(after, lambda stmt: _no_op(stmt)
                                 if _calls(stmt, "ptx_wait_group") else None,
                                 loop_only=False), "sm_90a")
        assert unwaited["verdict"] == "hazard" and "RAW on q" in unwaited["text"], unwaited


@pytest.mark.parametrize("num_stages", [1, 2])
def test_a_state_read_before_its_tma_wait_is_flagged(num_stages: int) -> None:
    """The consumer reads the state's shared copy before the loop, the wait on its
    barrier comes in the loop's first iteration: a RAW on sm_90a (or TileLang's code no
    longer reads before it waits)."""
    after, code = lowered(CARRIED_STATE, "carried_state", "sm_90a", steps=8,
                          num_stages=num_stages)
    consumer = code[code.index("} else {"):]
    read_first = consumer.index("state_s_local_cast") < consumer.index(".wait(0)")
    found = check(after, "sm_90a")
    if read_first:
        assert found["verdict"] == "hazard" and found["text"] == "hazard: RAW on state_s", found
    else:
        assert found["verdict"] == "none", found


# --- no false alarm: cp.async signalled on an mbarrier, a thread's own bytes, named barriers

def _after_waits(extra: Any) -> Any:
    """A mutation: ``extra()`` (a statement) after each mbarrier wait of the loops."""
    def change(stmt: Any) -> Any:
        return tvm.tirx.SeqStmt([stmt, extra()]) if _calls(stmt, "mbarrier_wait_parity") \
            else None
    return change


def _fence() -> Any:
    return tvm.tirx.Evaluate(tvm.tirx.Call("handle", tvm.ir.Op.get("tl.fence_proxy_async"),
                                           []))


@pytest.mark.parametrize("num_stages", [1, 2])
def test_cp_async_signalled_on_the_full_barrier_is_ordered_by_its_wait(
        num_stages: int) -> None:
    """The consumer's wait on the full barrier covers the producer's cp.async copies that
    ``cp.async.mbarrier.arrive.noinc`` signals on it (once a RAW "no cp_async_wait covers
    it"). What remains is the proxy: wgmma reads through the async proxy what cp.async
    wrote through the generic one, and TileLang 0.1.15 puts no ``fence.proxy.async``
    between the consumer's wait and its wgmma; with one there the kernel is clean, and
    with the arrive deleted the read races the copy again."""
    after, code = lowered(GATHERED_GEMM, "gathered_gemm", "sm_90a", M=256, N=256, K=512,
                          rows=1024, num_stages=num_stages)
    assert "mbarrier_cp_async_arrive_noinc" in code and "tma_load" in code
    found = check(after, "sm_90a")
    kinds = {f["kind"] for f in found["findings"]}
    consumer = code[code.index("} else {"):]
    unfenced = "fence_proxy_async" not in consumer
    assert kinds == ({"PROXY"} if unfenced else set()), found
    if unfenced:
        assert "no fence.proxy.async between its wait on" in found["findings"][0]["text"]
    fenced = check(mutated(after, _after_waits(_fence), loop_only=False), "sm_90a")
    assert fenced["verdict"] == "none", fenced
    assert "phases and arrivals" in fenced["text"] and "cp.async groups" in fenced["text"]
    dropped = check(mutated(mutated(after, _after_waits(_fence), loop_only=False),
                            _nth("ptx_cp_async_barrier_noinc", 0, _no_op)(),
                            loop_only=False), "sm_90a")
    assert "RAW" in {f["kind"] for f in dropped["findings"]}, dropped


def _syncs(replace: Any) -> Any:
    """A mutation: every ``__syncthreads`` of the pipelined loop replaced by ``replace``."""
    def mutation() -> Any:
        return lambda stmt: replace(stmt) if _calls(stmt, "tvm_storage_sync") else None
    return mutation


def _named(stmt: Any, count: int) -> Any:
    """``bar.sync 1, count`` (TileLang's ``__sync_thread_partial``) for a __syncthreads."""
    call = stmt.value
    return tvm.tirx.Evaluate(tvm.tirx.Call(call.dtype, call.op, [
        call.args[0], tvm.tirx.IntImm("int32", 1), tvm.tirx.IntImm("int32", count)]))


def _own_chunks(partner: int) -> dict[str, Any]:
    after, _ = lowered(OWN_CHUNKS, "own_chunks", "sm_80", N=4096, partner=partner,
                       num_stages=2)
    return after


def test_a_thread_reading_its_own_copied_bytes_needs_no_barrier() -> None:
    """Each thread reads back only the 16 bytes its own cp.async wrote: without the
    loop's __syncthreads that is still no race (once RAW "complete but not published"
    and WAR "another thread may still be reading it"); a thread reading its neighbour's
    bytes without them is flagged."""
    own, neighbour = _own_chunks(0), _own_chunks(1)
    assert check(own)["verdict"] == "none" and check(neighbour)["verdict"] == "none"
    bare = check(mutated(own, _syncs(_no_op)()))
    assert bare["verdict"] == "none", bare
    raced = check(mutated(neighbour, _syncs(_no_op)()))
    assert raced["verdict"] == "hazard" and "RAW on x_s" in raced["text"], raced
    assert {f["kind"] for f in raced["findings"]} == {"RAW", "WAR"}, raced


# Each thread copies four 16-byte chunks of a (32, 64) tile, one every eight rows, into
# a slot ``(k + 1) & 1`` of its double buffer, and sums back those four (shift 0) or the
# row after each, which the next sixteen threads copied (shift 1).
OWN_ROWS = read("hazards/own_rows.py")


@pytest.mark.parametrize("num_stages", [1, 2, 3])
def test_a_thread_reading_back_its_own_rows_needs_no_barrier(num_stages: int) -> None:
    """The bytes a thread copies and reads are one 16-byte chunk per row of a loop over
    rows: bounded row by row they are its own, although the loop's range spans every
    thread's rows. Without the loop's __syncthreads the read of its own rows is no race;
    the read of another thread's rows is, and both RAW and WAR are named."""
    def lowered_rows(shift: int) -> dict[str, Any]:
        return lowered(OWN_ROWS, "own_rows", "sm_80", M=1024, shift=shift,
                       num_stages=num_stages)[0]

    own, shifted = lowered_rows(0), lowered_rows(1)
    bare = check(mutated(own, _syncs(_no_op)()))
    assert bare["verdict"] == "none", bare
    raced = check(mutated(shifted, _syncs(_no_op)()))
    assert raced["verdict"] == "hazard" and "on x_s" in raced["text"], raced
    assert {f["kind"] for f in raced["findings"]} == {"RAW", "WAR"}, raced


def test_a_named_barrier_orders_the_threads_it_names() -> None:
    """The loop's __syncthreads as a named barrier over the 128 threads that run it still
    orders the neighbour's read; run by half of them only (``if tx < 64``), it does not."""
    neighbour = _own_chunks(1)
    named = check(mutated(neighbour, _syncs(lambda stmt: _named(stmt, 128))()))
    assert named["verdict"] == "none", named

    threads: list[Any] = []
    post_order_visit(ir_facts.device_function(neighbour["final"]).body,
                     lambda n: threads.append(n.node.var) if type(n).__name__ == "AttrStmt"
                     and n.attr_key == "thread_extent"
                     and str(n.node.thread_tag) == "threadIdx.x" else None)
    halved = check(mutated(neighbour, _syncs(lambda stmt: tvm.tirx.IfThenElse(
        threads[0] < 64, _named(stmt, 64), None))()))
    assert halved["verdict"] == "hazard" and "RAW on x_s" in halved["text"], halved

# --- synchronisation no dependence needs (core/hazards/needed.py) -------------------------

def full_check(after: dict[str, Any], arch: str) -> dict[str, Any]:
    found: dict[str, Any] = hazard_check.check(after, {"kind": "cuda", "arch": arch},
                                               ir_facts.main_function,
                                               ir_facts.device_function)
    return found


def _listing(code: str) -> list[str]:
    from sphinx_tlstages.core.results import cuda as cuda_text

    cuda = cuda_text.normalise(code, "hazard_kernel.py")
    return [line for line in cuda.splitlines() if not line.lstrip().startswith("#line")]


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_a_barrier_the_author_added_before_the_pipeline_is_named(arch: str) -> None:
    """The kernel's own ``T.sync_threads()`` comes before any shared access: it is named,
    at its CUDA line (the ``__syncthreads`` just before the pipeline's first copy on
    sm_80; on sm_90a the second of two in a row after the barriers' initialisation, the
    first publishing it); every other synchronisation is kept."""
    from sphinx_tlstages.core.results.facts import _sync_lines

    after, code = lowered(EXTRA_BARRIER, "extra_barrier", arch, num_stages=2, **SUM_PARAMS)
    found = full_check(after, arch)
    assert found["hazards"]["verdict"] == "none", found
    assert [(e["op"], e["what"]) for e in found["unneeded_sync"]] == \
        [("sync", "__syncthreads")], found
    source = HEADER + EXTRA_BARRIER
    from sphinx_tlstages.core.results import cuda as cuda_text

    cuda = cuda_text.normalise(code, "hazard_kernel.py")
    entry, = _sync_lines(found["unneeded_sync"], source, cuda, "hazard_kernel.py")
    listing = _listing(code)
    line, = entry["cuda_lines"]
    assert listing[line - 1].strip() == "__syncthreads();", (line, listing[line - 1])
    after_it = next(text for text in listing[line:] if text.strip())
    before_it = listing[line - 2].strip()
    if arch == "sm_80":  # before the prologue's copy, itself before the loop
        assert "cp_async_gs" in after_it, after_it
        loop = next(i for i, text in enumerate(listing, 1) if "for (int k = 0;" in text)
        assert line < loop, (line, loop)
    else:
        assert before_it == "__syncthreads();" and "fence_barrier_init" in listing[line - 3]
    assert entry["text"] == ("__syncthreads: not needed by any shared-memory dependence the "
                             "check models; it may still order global memory or registers")
    # Its twin without that barrier: nothing to name.
    twin, _ = lowered(REVERSED_SUM, "reversed_sum", arch, num_stages=2, **SUM_PARAMS)
    assert full_check(twin, arch)["unneeded_sync"] == []


_SYNC_CALLS = ("tvm_storage_sync", "ptx_wait_group", "mbarrier_wait_parity")


def _sync_statements(after: dict[str, Any]) -> list[tuple[str, int]]:
    """Every synchronisation statement of the final device code: (call, its place among
    those calls)."""
    device = ir_facts.device_function(after["final"])
    found: list[tuple[str, int]] = []

    def visit(node: Any) -> None:
        if type(node).__name__ == "Call":
            name = str(node.op.name).rsplit(".", 1)[-1]
            if name in _SYNC_CALLS:
                found.append((name, sum(1 for n, _ in found if n == name)))

    post_order_visit(device.body, visit)
    return found


def test_the_seed_gemm_needs_every_synchronisation_on_sm80(gemm80: dict[str, Any]) -> None:
    """Nothing is named, and deleting any one synchronisation statement of the code (a
    ``__syncthreads``, a ``cp_async_wait``) is a hazard: each is needed, by the check."""
    assert full_check(gemm80, "sm_80")["unneeded_sync"] == []
    statements = _sync_statements(gemm80)
    assert len(statements) >= 4, statements
    for name, n in statements:
        found = check(mutated(gemm80, _nth(name, n, _no_op)(), loop_only=False))
        assert found["verdict"] == "hazard", (name, n, found)


def test_the_seed_gemm_needs_every_synchronisation_on_sm90a(
        gemm90: tuple[dict[str, Any], str, int]) -> None:
    """The ring's waits and the barrier after its initialisation: nothing is named, and
    each one deleted is a hazard."""
    after, arch, _ = gemm90
    assert full_check(after, arch)["unneeded_sync"] == []
    statements = _sync_statements(after)
    assert statements, statements
    for name, n in statements:
        found = check(mutated(after, _nth(name, n, _no_op)(), loop_only=False), arch)
        assert found["verdict"] == "hazard", (name, n, found)


# How a row names an unneeded barrier: its CUDA line, and the kernel line it came from.
BARRIER_AT = r"__syncthreads at CUDA line \d+ \((?:from kernel line \d+|no #line[^)]*)\)"


def test_tlstages_lower_names_the_unneeded_barrier(tmp_path: Path) -> None:
    """``tlstages lower`` prints it as a row of the Hazards table, with its CUDA line."""
    kernel = tmp_path / "extra.py"
    kernel.write_text(HEADER + EXTRA_BARRIER)
    done = subprocess.run([sys.executable, "-m", "sphinx_tlstages", "lower", str(kernel),
                           "--params", "N=512", "K=16", "--num-stages", "2", "--target",
                           "sm_80"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    rows = [line for line in done.stdout.splitlines() if "not needed by any" in line]
    assert len(rows) == 1, done.stdout
    assert re.search(BARRIER_AT + r": not needed by any shared-memory dependence the check "
                     r"models; it may still order global memory or registers", rows[0]), rows


@pytest.mark.parametrize("buildername", ["html", "text", "latex"])
def test_the_unneeded_barrier_is_a_row_of_the_hazards_table(build, buildername: str) -> None:
    """Under the verdicts, a row names the barrier with its CUDA line, in every builder;
    its twin without the barrier has no such row."""
    extra = rst(EXTRA_BARRIER, num_stages="2", params="N=512 K=16", name="extra")
    twin = rst(REVERSED_SUM, num_stages="2", params="N=512 K=16", name="twin")
    result = build({"index.rst": HEAD + extra + "\n" + twin}, buildername)
    if buildername == "html":
        words = ("): not needed by any shared-memory dependence the check models; it may "
                 "still order global memory or registers")
        rows = hazard_rows(result, 0)
        assert rows[1] == ["2", "none found: RAW and WAR on S over 2 slots; 16 cp.async "
                                "groups"], rows
        assert rows[2][0] == "2" and words in rows[2][1], rows
        assert re.search(BARRIER_AT, rows[2][1]), rows
        assert len(hazard_rows(result, 1)) == 2
        return
    out = next(result.outdir.glob("*.txt" if buildername == "text" else "*.tex"))
    # A text table wraps a cell over rows between "|" borders: the cell's words, in order.
    text = " ".join(out.read_text(encoding="utf-8").replace("|", " ").split())
    if buildername == "latex":
        text = text.replace(r"\_", "_").replace(r"\sphinxhyphen{}", "-").replace(r"\#", "#")
    assert text.count("not needed by any") == 1, text[-3000:]
    assert re.search(BARRIER_AT + r": not needed by any .{0,120}it may still order global "
                     r"memory or registers", text), text[-3000:]


# --- a symbolic trip count: every value covered, checked against each value ---------------

# Column totals of a matrix whose row count is only known at launch (``T.dynamic``).
COLUMN_TOTALS = read("hazards/column_totals.py")
TOTALS_ROWS = 16  # the kernel's block_rows


def _when(after: dict[str, Any], name: str, replace: Any, when: Any) -> dict[str, Any]:
    """``after`` with every call ``name`` of each loop of a symbolic extent that issues no
    TMA copy (the pipelined loop; on sm_90a, the consumer's) replaced by ``replace`` in the
    iterations where ``when(k, trips)`` holds (k the loop variable, trips its extent): a
    defect of some trip counts only."""

    def in_loop(node: Any) -> Any:
        if type(node).__name__ != "For" or type(node.extent).__name__ == "IntImm":
            return None
        copies: list[Any] = []
        post_order_visit(node.body, lambda n: copies.append(n) if type(n).__name__ == "Call"
                         and str(n.op.name).endswith("tma_load") else None)
        if copies:
            return None
        def change(stmt: Any) -> Any:
            if not _calls(stmt, name):
                return None
            return tvm.tirx.IfThenElse(when(node.loop_var, node.extent), replace(stmt), stmt)

        body = ir_transform(node.body, None, change, ["tirx.Evaluate"])
        return tvm.tirx.For(node.loop_var, node.min, node.extent, node.kind, body,
                            node.thread_binding, node.annotations)

    return _rewritten(after, in_loop, ["tirx.For"])


def _eq(a: Any, b: int) -> Any:
    return tvm.tirx.EQ(a, tvm.tirx.IntImm("int32", b))


# When a defect shows: in some iterations (k the loop variable, n its trip count) only.
WHEN = {
    "in the first iteration": lambda k, n: _eq(k, 0),
    "after the ring wrapped four times": lambda k, n: _eq(k, 9),
    "when the loop runs once": lambda k, n: _eq(n, 1),
    "in the last iteration of an even count": lambda k, n: tvm.tirx.And(
        tvm.tirx.EQ(k + 1, n), _eq(tvm.tirx.floormod(n, 2), 0)),
}
# The defect, per target: a cp.async wait deleted, a barrier deleted (sm_80); a ring's
# wait with the wrong parity (sm_90a).
DEFECTS = {"sm_80": {"the wait deleted": ("ptx_wait_group", _no_op),
                     "the barriers deleted": ("tvm_storage_sync", _no_op)},
           "sm_90a": {"the parity flipped": ("mbarrier_wait_parity", _flip)}}
TOTALS = [("sm_80", 1), ("sm_80", 2), ("sm_90a", 2)]
COUNT_CASES = [(arch, stages, mutation) for arch, stages in TOTALS
               for mutation in ["clean", *[f"{defect} {when}" for defect in DEFECTS[arch]
                                           for when in WHEN]]]
_TOTALS: dict[tuple[str, int], dict[str, Any]] = {}


@pytest.mark.parametrize(("arch", "num_stages", "mutation"), COUNT_CASES,
                         ids=[f"{a}-ns{n}-{m}" for a, n, m in COUNT_CASES])
def test_a_symbolic_trip_count_is_checked_for_every_count(arch: str, num_stages: int,
                                                          mutation: str) -> None:
    """The verdict for every row count (one answer, from the periodic argument) equals
    what each row count gives on its own, for every count up to far past the argument's
    bound (every row count, not one per trip count)."""
    if (arch, num_stages) not in _TOTALS:
        _TOTALS[arch, num_stages], _ = lowered(COLUMN_TOTALS, "column_totals", arch, N=64,
                                               num_stages=num_stages)
    after = _TOTALS[arch, num_stages]
    spec = next(((*change, when) for defect, change in DEFECTS[arch].items()
                 for name, when in WHEN.items() if mutation == f"{defect} {name}"), None)
    if spec is not None:
        after = _when(after, *spec)
    found = check(after, arch)
    assert found["verdict"] in ("none", "hazard"), found
    each = {rows: hazard_check.at_sizes(after, ir_facts.main_function,
                                        ir_facts.device_function, {"rows": rows})["verdict"]
            for rows in range(0, TOTALS_ROWS * 24 + 1)}
    racy = sorted(rows for rows, said in each.items() if said == "hazard")
    assert set(each.values()) <= {"none", "hazard", "not checked"}
    assert "not checked" not in {v for r, v in each.items() if r > 0}, each
    if spec is None:
        assert found["verdict"] == "none" and not racy, (found, racy)
        assert "for every rows" in found["text"]
        return
    # Each defect shows for some counts only, and the one verdict says so.
    assert racy and len(racy) < len(each), (mutation, racy)
    assert found["verdict"] == "hazard", (mutation, found, racy[:5])
    shown = int(re.search(r"with rows = (\d+)", found["text"]).group(1))
    assert each[shown] == "hazard"


# --- TileLang's reduction template and its shared workspace -----------------------------

# Row norms: tiles streamed through shared memory, then a sum across the 64 threads of a
# row, which goes through ``tl::AllReduce`` and a workspace sharing the tile's bytes.
ROW_NORMS = read("hazards/row_norms.py")
NORM_ARGS = {"M": 1024, "N": 1024, "block_M": 2, "block_N": 256, "num_stages": 2}


def _workspace_at(element: int) -> Any:
    """A mutation: the reduction's workspace pointer moved ``element`` floats on."""

    def change(stmt: Any) -> Any:
        if type(stmt).__name__ != "BufferStore" or type(stmt.value).__name__ != "Call" \
                or not str(stmt.value.args[0]).strip('"').startswith("tl::AllReduce<"):
            return None
        args = list(stmt.value.args)
        load = args[2].args[0]
        args[2] = tvm.tirx.address_of(tvm.tirx.BufferLoad(
            load.buffer, [tvm.tirx.IntImm("int32", element)]))
        return tvm.tirx.BufferStore(stmt.buffer, tvm.tirx.Call(stmt.value.dtype,
                                                               stmt.value.op, args),
                                    stmt.indices)

    return change




def test_a_reduction_workspace_is_followed_into_the_template() -> None:
    """The workspace pointer passed to ``tl::AllReduce`` is read as the template reads it:
    the kernel is checked (it was "not checked: a pointer into workspace is passed on"),
    and a workspace over bytes a copy still fills is a RAW on it."""
    after, code = lowered(ROW_NORMS, "row_norms", "sm_80", **NORM_ARGS)
    assert "tl::AllReduce" in code
    assert check(after)["verdict"] == "none", check(after)
    # The workspace over the second slot of the tile, whose last copy the epilogue's
    # wait<0> completes: still clean; with that wait raised to 1, the template's read races
    # the copy.
    moved = _rewritten(after, _workspace_at(256), ["tirx.BufferStore"])
    assert check(moved)["verdict"] == "none", check(moved)
    seen = [0]

    def epilogue_wait(stmt: Any) -> Any:
        if not _calls(stmt, "ptx_wait_group") or stmt.value.args[0].value != 0:
            return None
        seen[0] += 1
        return _wait_more(stmt)

    racy = _rewritten(moved, epilogue_wait, ["tirx.Evaluate"])
    assert seen[0] == 1
    found = check(racy)
    assert found["verdict"] == "hazard", found
    assert any(f["buffer"] == "workspace" and f["kind"] == "RAW" for f in found["findings"]), \
        found


# --- a ring whose slot and phase come from a counter the kernel keeps -------------------

# A loader and a math warpgroup, each counting the tiles it has handled in a
# ``T.alloc_var``; slot and phase follow from the count (``T.wait_wgmma`` retires the math).
COUNTED_RING = read("hazards/counted_ring.py")


def _count_by(step: int) -> Any:
    """A mutation: the math side's counter advanced by ``step`` per tile."""

    def change(stmt: Any) -> Any:
        if type(stmt).__name__ != "BufferStore" or stmt.buffer.name != "uses" \
                or type(stmt.value).__name__ != "Add":
            return None
        return tvm.tirx.BufferStore(stmt.buffer, stmt.value.a + step, stmt.indices)

    return change


def test_a_phase_from_a_counter_is_followed_on_sm90a() -> None:
    """A wait's parity and a slot from a counter the kernel increments are known at each
    iteration (they were "not checked"): the ring is clean; a counter that skips tiles, or
    a flipped parity on the math side, is flagged."""
    after, code = lowered(COUNTED_RING, "counted_ring", "sm_90a", M=1024, N=1024, K=1024)
    assert "uses" in code
    found = check(after, "sm_90a")
    assert found["verdict"] == "none", found
    skipping = check(_rewritten(after, _count_by(2), ["tirx.BufferStore"]), "sm_90a")
    assert skipping["verdict"] == "hazard", skipping
    flipped = check(mutated(after, _nth("mbarrier_wait_parity", 1, _flip)(), loop_only=False),
                    "sm_90a")
    assert flipped["verdict"] == "hazard", flipped


# --- a trip count read from memory -------------------------------------------------------

# Packed sequences of different lengths: each block's row count is ``starts[b + 1] -
# starts[b]``, read from memory (each role of the sm_90a kernel reads it again).
RAGGED_TOTALS = read("hazards/ragged_totals.py")
RAGGED_CASES = [("sm_80", "clean"), ("sm_80", "the wait deleted in the first iteration"),
                ("sm_80", "the barriers deleted when the loop runs once"),
                ("sm_90a", "clean"), ("sm_90a", "the parity flipped when the loop runs once")]


@pytest.mark.parametrize(("arch", "mutation"), RAGGED_CASES,
                         ids=[f"{a}-{m}" for a, m in RAGGED_CASES])
def test_a_trip_count_read_from_memory_is_checked_for_every_count(arch: str,
                                                                  mutation: str) -> None:
    """A length read from memory is a size like ``T.dynamic``'s (it was "not checked: a
    synchronisation under the condition 0 < rows"): one verdict, equal to what each row
    count gives on its own."""
    after, _ = lowered(RAGGED_TOTALS, "ragged_totals", arch, batch=4, total_rows=4096, N=64,
                       num_stages=2)
    spec = next(((*change, when) for defect, change in DEFECTS[arch].items()
                 for name, when in WHEN.items() if mutation == f"{defect} {name}"), None)
    if spec is not None:
        after = _when(after, *spec)
    found = check(after, arch)
    each = {rows: hazard_check.at_sizes(after, ir_facts.main_function,
                                        ir_facts.device_function,
                                        {"rows": rows, "first": 0})["verdict"]
            for rows in range(0, TOTALS_ROWS * 24 + 1)}
    racy = [rows for rows, said in each.items() if said == "hazard"]
    if spec is None:
        assert found["verdict"] == "none" and not racy, (found, racy)
        assert "for every first, rows" in found["text"]
    else:
        assert racy and len(racy) < len(each), racy
        assert found["verdict"] == "hazard", found


# --- the search's shortcuts answer as the full check (benchmarks/hazard_check_cost) ---------

def _records(after: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The sized records and buffers of one walk of ``after``'s final device function."""
    from sphinx_tlstages.worker.hazards.trace import Trace

    func = ir_facts.device_function(after["final"])
    trace = Trace(func, hazard_check._boxes(after))
    buffers = hazard_check._buffers(trace.bases,
                                    hazard_check._shapes(after, ir_facts.main_function))
    return hazard_check._sized(trace.records, buffers), buffers


def _finds(records: list[dict[str, Any]], first: bool) -> bool:
    from sphinx_tlstages.core.hazards.rings import Unchecked, check_rings

    try:
        return bool(check_rings(records, first=first)[0])
    except Unchecked:
        return True


def test_the_ring_check_stopped_at_its_first_finding_answers_as_the_whole(
        gemm90: tuple[dict[str, Any], str, int]) -> None:
    """``check_rings(first=True)`` (the search asks only whether there is a finding) finds
    one exactly where the whole check does: on each mutation of the ring, and with each
    synchronisation statement of the clean ring deleted."""
    from sphinx_tlstages.core.hazards import needed
    from sphinx_tlstages.core.hazards.rings import init_findings

    after, _, _ = gemm90
    answers = []
    for mutation in sorted(RING_MUTATIONS):
        records, _ = _records(mutated(after, RING_MUTATIONS[mutation](), loop_only=False))
        answers.append((mutation, _finds(records, True), _finds(records, False)))
    records, _ = _records(after)
    sites = {(r["op"], r["site"]) for r in records if r["op"] in needed.KINDS}
    assert any(op == "sync" for op, _ in sites), sites
    for op, site in sorted(sites, key=str):
        trial = needed._without(records, op, site, None)
        whole = _finds(trial, False)
        answers.append(((op, site), _finds(trial, True), whole))
        if op == "sync":  # no cp.async here: only the initialisation rule reads a barrier
            assert bool(init_findings(trial)) == whole, (op, site)
    assert all(first == whole for _, first, whole in answers), answers
    assert any(whole for _, _, whole in answers) and not _finds(records, False), answers


# --- three warp groups: each branch of ``if tx < 128: ... elif tx < 256: ... else: ...`` a
# role of its own, run beside the others ---------------------------------------------------

SPLIT_ARGS = {"M": 512, "N": 512, "K": 512}


def test_three_warp_groups_sharing_a_release_barrier_are_clean_on_sm90a() -> None:
    after, code = lowered(SPLIT_ROWS_GEMM, "split_rows_gemm", "sm_90a", **SPLIT_ARGS)
    assert "if (((int)threadIdx.x) < 256) {" in code  # the math groups' split, nested
    found = check(after, "sm_90a")
    assert found["text"] == ("none found: RAW and WAR on a_bottom, a_top, b_tile over 1 slot; "
                             "4 barriers, phases and arrivals, bytes"), found


def test_two_math_groups_copying_into_one_tile_race_on_sm90a() -> None:
    """The bottom group's TMA copy into the top group's tile (a name mistyped): its copy
    and the top group's reads are ordered by no barrier the two share."""
    source = SPLIT_ROWS_GEMM.replace("a_bottom, barrier=bottom_full", "a_top, barrier=bottom_full")
    after, _ = lowered(source, "split_rows_gemm", "sm_90a", **SPLIT_ARGS)
    found = check(after, "sm_90a")
    assert found["verdict"] == "hazard", found
    assert {f["kind"] for f in found["findings"]} == {"RAW", "WAR"}, found
    assert all(f["buffer"] == "a_top" and "threads 128-255" in f["text"]
               for f in found["findings"]), found


def test_one_math_group_that_does_not_release_the_shared_tile_races_on_sm90a() -> None:
    """The bottom group's arrive on B's release barrier dropped: the loader's wait then
    completes on the top group's arrivals of two iterations, while the bottom group may
    still read the tile."""
    bottom = SPLIT_ROWS_GEMM.rindex("T.barrier_arrive(b_free)")
    source = SPLIT_ROWS_GEMM[:bottom] + "pass" + SPLIT_ROWS_GEMM[bottom + 24:]
    after, _ = lowered(source, "split_rows_gemm", "sm_90a", **SPLIT_ARGS)
    found = check(after, "sm_90a")
    assert found["verdict"] == "hazard", found
    assert any(f["kind"] == "WAR" and f["buffer"] == "b_tile" and "threads 256-383" in f["text"]
               for f in found["findings"]), found



def test_a_release_barrier_whose_phases_cannot_be_told_is_not_called_clean() -> None:
    """The loader's wait on B's release barrier deleted: nothing then orders a math
    group's arrival after the phase before it, so which phase each counts towards is not
    known; the verdict is not "none"."""
    after, _ = lowered(SPLIT_ROWS_GEMM, "split_rows_gemm", "sm_90a", **SPLIT_ARGS)
    found = check(mutated(after, _on_barrier("b_free", "mbarrier_wait_parity"),
                          loop_only=False), "sm_90a")
    assert found["verdict"] != "none", found
    assert "b_free[0]" in found["text"], found


# --- Blackwell: tcgen05 MMAs read shared memory until the commit that tracks them
# completes its barrier's phase --------------------------------------------------------------

TMEM_ARGS = {"M": 512, "N": 512, "K": 512}


@pytest.fixture(scope="module", params=[1, 2, 3])
def tmem_gemm(request: pytest.FixtureRequest) -> tuple[dict[str, Any], str, int]:
    after, code = lowered(SCALED_TMEM_GEMM, "scaled_tmem_gemm", "sm_100a",
                          num_stages=request.param, **TMEM_ARGS)
    return after, code, request.param


def _on_barrier(name: str, op: str) -> Any:
    """A mutation: every call ``op`` whose barrier (first argument) is ``name`` deleted."""

    def change(stmt: Any) -> Any:
        if not _calls(stmt, op):
            return None
        bar = stmt.value.args[0]
        bar = bar.args[0] if isinstance(bar, tvm.tirx.Call) else bar
        return _no_op(stmt) if str(bar.buffer.name) == name else None

    return change


def test_a_tmem_gemm_is_clean_on_sm100a(tmem_gemm: tuple[dict[str, Any], str, int]) -> None:
    after, code, num_stages = tmem_gemm
    assert "tl::tcgen05_mma_arrive((&(mma_finished[" in code
    found = check(after, "sm_100a")
    assert found["text"] == (f"none found: RAW and WAR on a_tile, b_tile over {num_stages} "
                             f"slot{'s' if num_stages > 1 else ''}; {3 * num_stages} barriers, "
                             "phases and arrivals, bytes"), found


def test_releasing_a_stage_before_the_mma_commit_completes_is_flagged(
        tmem_gemm: tuple[dict[str, Any], str, int]) -> None:
    """The math threads' wait on the MMA's commit barrier deleted: they release the stage
    while the MMA may still read it, and the loader's next copy into it races the read."""
    after, _, _ = tmem_gemm
    found = check(mutated(after, _on_barrier("mma_finished", "mbarrier_wait_parity"),
                          loop_only=False), "sm_100a")
    assert found["verdict"] == "hazard", found
    assert found["findings"][0]["kind"] == "WAR", found
    assert found["findings"][0]["buffer"] in ("a_tile", "b_tile"), found


def test_a_dropped_mma_commit_is_a_hang(tmem_gemm: tuple[dict[str, Any], str, int]) -> None:
    """Without the commit nothing arrives on the barrier the math threads wait on."""
    after, _, _ = tmem_gemm
    found = check(mutated(after, _on_barrier("mma_finished", "tcgen05_mma_arrive"),
                          loop_only=False), "sm_100a")
    assert found["verdict"] == "hazard", found
    assert {f["kind"] for f in found["findings"]} >= {"HANG"}, found


@pytest.mark.parametrize("num_stages", [1, 2])
def test_a_cp_async_refill_before_the_mma_commit_is_flagged_on_sm100a(num_stages: int) -> None:
    """A __syncthreads does not wait for an asynchronous tcgen05 MMA: the cp.async that
    follows it into the MMA's stage races its reads (the code TileLang 0.1.15 emits for
    ``T.tcgen05_gemm(..., mbar=)`` with the wait at the iteration's end); with the wait
    moved before that __syncthreads the stage is free."""
    after, code = lowered(COPIED_TMEM_GEMM, "copied_tmem_gemm", "sm_100a",
                          num_stages=num_stages, **TMEM_ARGS)
    found = check(after, "sm_100a")
    if "cp_async" not in code or "tcgen05_mma_arrive" not in code:
        pytest.skip("this TileLang does not lower the kernel to cp.async and tcgen05")
    assert found["verdict"] == "hazard" and found["findings"][0]["kind"] == "WAR", found
    assert "tcgen05 MMA" in found["findings"][0]["text"], found
    kept: list[Any] = []

    def take(stmt: Any) -> Any:  # the wait on the commit barrier, kept where it is
        if _calls(stmt, "mbarrier_wait_parity") and not kept:
            kept.append(stmt)
        return None

    seen = [0]

    def put(stmt: Any) -> Any:  # a copy of it before the loop's second __syncthreads
        if not _calls(stmt, "tvm_storage_sync"):
            return None
        seen[0] += 1
        return tvm.tirx.SeqStmt([kept[0], stmt]) if seen[0] == 2 else None

    mutated(after, take)
    fixed = check(mutated(after, put), "sm_100a")
    assert fixed["verdict"] == "none", fixed


# --- a synchronisation under a condition read from memory: every mask pattern ----------

# A block-sparse GEMM: ``if keep[by, k] != 0:`` around the copies and the product. On
# sm_90a TileLang keeps a phase counter per role that counts the tiles run; on sm_80 the
# copies under the condition are plain loads and stores (no cp.async).
SKIPPED_TILES = read("hazards/skipped_tiles.py")
# Every tile fetched, the product of a gated-off one skipped (cp.async on sm_80).
GATED_TILES = read("hazards/gated_tiles.py")
MASK_ARGS = {"M": 256, "N": 256, "K": 128}  # 4 tiles along K: 16 patterns
_MASKED: dict[tuple[str, str, int], dict[str, Any]] = {}


def _masked(name: str, arch: str, num_stages: int) -> dict[str, Any]:
    if (name, arch, num_stages) not in _MASKED:
        source = SKIPPED_TILES if name == "skipped_tiles" else GATED_TILES
        _MASKED[name, arch, num_stages], _ = lowered(source, name, arch, num_stages=num_stages,
                                                     **MASK_ARGS)
    return _MASKED[name, arch, num_stages]


def _mask_loop(after: dict[str, Any], change: Any, consumer: bool = False) -> dict[str, Any]:
    """``after`` with ``change`` applied to the statements of each loop whose body has a
    condition reading ``keep`` or ``gate`` (with ``consumer``: only a loop that issues no
    TMA copy)."""

    def reads_mask(node: Any) -> bool:
        found: list[bool] = []
        post_order_visit(node, lambda n: found.append(True) if type(n).__name__ ==
                         "BufferLoad" and str(n.buffer.name).startswith(("keep", "gate"))
                         else None)
        return bool(found)

    def in_loop(node: Any) -> Any:
        if type(node).__name__ != "For" or not reads_mask(node.body):
            return None
        if consumer and _calls_anywhere(node.body, "tma_load"):
            return None
        body = ir_transform(node.body, None, lambda s: change(s, node), ["tirx.Evaluate"])
        return tvm.tirx.For(node.loop_var, node.min, node.extent, node.kind, body,
                            node.thread_binding, node.annotations)

    return _rewritten(after, in_loop, ["tirx.For"])


# --- a bound read from a shared array, a block's work under a condition read from memory --

# Row groups of different sizes: each block finds its group in a table of tile counts it
# builds in shared memory (``tiles[group[0]]``: an index the data sets), and runs its
# pipeline only under ``if by < tiles[groups]`` (a block past the data's tiles skips it).
GROUPED_ROWS = read("hazards/grouped_rows.py")
GROUPED_ARGS = {"groups": 4, "total_rows": 1024, "N": 256, "K": 256, "num_stages": 2}


def _rebased(after: dict[str, Any], name: str, onto: str) -> dict[str, Any]:
    """``after`` with the shared buffer ``name`` placed at ``onto``'s bytes (its byte
    offset in the dynamic allocation replaced by the other's)."""
    device = ir_facts.device_function(after["final"])
    offsets: dict[str, Any] = {}

    def find(node: Any) -> None:
        if type(node).__name__ == "Bind" and str(node.var.name) == onto:
            offsets[onto] = node.value.args[1]

    post_order_visit(device.body, find)

    def change(node: Any) -> Any:
        if type(node).__name__ != "Bind" or str(node.var.name) != name:
            return None
        value = tvm.tirx.call_intrin("handle", "tirx.handle_add_byte_offset",
                                     node.value.args[0], offsets[onto])
        return tvm.tirx.Bind(node.var, value)

    return _rewritten(after, change, ["tirx.Bind"])


def _calls_anywhere(stmt: Any, name: str) -> bool:
    found: list[bool] = []
    post_order_visit(stmt, lambda n: found.append(True) if type(n).__name__ == "Call"
                     and str(n.op.name).endswith(name) else None)
    return bool(found)


def _wait_by_k(stmt: Any, loop: Any) -> Any:
    """The consumer's waits with their barrier and parity from the loop's variable instead
    of the counter of tiles run: right when every tile runs, wrong after a skipped one."""
    if not _calls(stmt, "mbarrier_wait_parity"):
        return None

    def by_k(expr: Any) -> Any:
        return ir_transform(tvm.tirx.Evaluate(expr), None,
                            lambda n: loop.loop_var if str(n.buffer.scope()) == "local"
                            and str(n.buffer.name).startswith("consumer") else None,
                            ["tirx.BufferLoad"]).value

    return _call(stmt, [by_k(arg) for arg in stmt.value.args])


def _first_sync_under_gate() -> Any:
    """The loop's first ``__syncthreads`` (the one before the next tile's cp.async) put
    under the product's condition: a skipped tile after a run one lets the copy into the
    slot it read land while other threads may still read it."""
    done: list[bool] = []

    def change(stmt: Any, loop: Any) -> Any:
        if done or not _calls(stmt, "tvm_storage_sync"):
            return None
        done.append(True)
        gates: list[Any] = []
        post_order_visit(loop.body, lambda n: gates.append(n.condition)
                         if type(n).__name__ == "IfThenElse" and not gates else None)
        return tvm.tirx.IfThenElse(gates[0], stmt, None)

    return change


def _verdicts(after: dict[str, Any]) -> list[tuple[dict[str, bool], str]]:
    each = hazard_check.at_patterns(after, ir_facts.main_function, ir_facts.device_function,
                                    {})
    # A pattern that runs no tile copies nothing: nothing can race ("none" for the
    # comparison with the one verdict, which covers it).
    return [(masks, "none" if "no asynchronous copy" in found["text"] else found["verdict"])
            for masks, found in each]


@pytest.mark.parametrize("num_stages", [2, 3])
def test_a_block_sparse_ring_is_checked_for_every_mask_pattern(num_stages: int) -> None:
    """sm_90a: the producer and the consumer skip a tile together (their counters count
    the tiles run); the one verdict, from the walks of each number of tiles run, equals
    the brute force over all 16 patterns of the 4 tiles."""
    after = _masked("skipped_tiles", "sm_90a", num_stages)
    found = check(after, "sm_90a")
    assert found["verdict"] == "none", found
    assert "for every pattern of the mask" in found["text"], found
    each = _verdicts(after)
    assert len(each) == 16 and {said for _, said in each} == {"none"}, each


@pytest.mark.parametrize("num_stages", [2, 3])
def test_a_wait_by_the_loop_variable_races_after_a_skipped_tile(num_stages: int) -> None:
    """The consumer's waits computed from k, not from the tiles run: every pattern that
    skips a tile before a run one races, all-true does not; the check flags it."""
    after = _mask_loop(_masked("skipped_tiles", "sm_90a", num_stages), _wait_by_k,
                       consumer=True)
    each = _verdicts(after)
    racy = [masks for masks, said in each if said == "hazard"]
    assert len(each) == 16 and racy and len(racy) < len(each), each
    assert all(not all(masks.values()) for masks in racy)
    found = check(after, "sm_90a")
    assert found["verdict"] == "hazard", found
    assert "(with the mask " in found["text"] or "(with every element" in found["text"]


def test_masked_copies_on_sm80_are_no_asynchronous_copies() -> None:
    """On sm_80 TileLang 0.1.15 lowers the copies under the condition to plain loads and
    stores: nothing asynchronous to check, and the verdict says so."""
    after, code = lowered(SKIPPED_TILES, "skipped_tiles", "sm_80", num_stages=2, **MASK_ARGS)
    assert "cp_async" not in code
    assert check(after)["text"] == "not checked: no asynchronous copy into shared memory"


def test_a_gated_product_on_sm80_is_clean_for_every_pattern() -> None:
    """cp.async copies of every tile, the product under the gate: clean, and so is each of
    the 16 patterns."""
    after = _masked("gated_tiles", "sm_80", 2)
    assert check(after)["verdict"] == "none"
    each = _verdicts(after)
    assert len(each) == 16 and {said for _, said in each} == {"none"}, each


def test_a_barrier_under_the_gate_is_flagged_on_sm80() -> None:
    """The barrier before the next tile's cp.async put under the gate: a WAR for the
    patterns where a run tile is followed by a skipped one, and only those."""
    after = _mask_loop(_masked("gated_tiles", "sm_80", 2), _first_sync_under_gate())
    each = _verdicts(after)
    racy = [masks for masks, said in each if said == "hazard"]
    assert len(each) == 16 and racy and len(racy) < len(each), each
    for masks, said in each:
        held = {int(m.group(1) or 0): value for key, value in masks.items()
                if (m := re.search(r"gate\[by \* 4(?: \+ (\d))?\]", key))}
        # The loop runs k = 0, 1, 2 (the last tile is the epilogue's): the barrier of
        # iteration k orders the reads of iteration k - 1.
        fall = any(held[k - 1] and not held[k] for k in (1, 2))
        assert (said == "hazard") == fall, (masks, said)
    found = check(after)
    assert found["verdict"] == "hazard" and "WAR" in found["text"], found


def test_a_condition_on_the_thread_index_is_no_mask() -> None:
    """A condition that reads memory and a thread index may differ between threads: it
    is not walked as a mask (and a synchronisation under it stays "not checked")."""
    from sphinx_tlstages.worker.hazards.masks import Masks

    func = ir_facts.device_function(_masked("skipped_tiles", "sm_90a", 2)["final"])
    conds: list[Any] = []
    post_order_visit(func.body, lambda n: conds.append(n.condition)
                     if type(n).__name__ == "IfThenElse" else None)
    masks = Masks(func)
    mask = next(c for c in conds if masks.mask(c) is not None)
    thread = next(iter(masks.threads))
    assert masks.mask(tvm.tirx.And(mask, thread < 64)) is None
    assert masks.mask(thread < 64) is None



# A query tile loaded before a block-sparse loop: on sm_90a TileLang 0.1.15 loads it by
# TMA before the roles split and waits for it only inside the loop, under the mask (and
# ``if consumer_phase_cnt[0] == 0``), and the scores' tile shares its bytes: a row block
# that keeps no key block never waits, and the copy may land over the scores it stores.
SPARSE_SCORES = read("hazards/sparse_scores.py")


def test_a_load_waited_for_under_the_mask_races_when_no_tile_runs() -> None:
    after, _ = lowered(SPARSE_SCORES, "sparse_scores", "sm_90a", M=256, N=256, D=64,
                       num_stages=2)
    each = _verdicts(after)
    racy = [masks for masks, said in each if said == "hazard"]
    if not racy:  # a TileLang that waits for the load outside the loop: no defect left
        assert check(after, "sm_90a")["verdict"] == "none"
        return
    assert len(each) == 16 and len(racy) == 1 and not any(racy[0].values()), each
    found = check(after, "sm_90a")
    assert found["verdict"] == "hazard" and "S_s" in found["text"], found
    assert "every element of the mask" in found["text"] and "false" in found["text"]


GROUPED_CASES = [(arch, mutation) for arch in ("sm_80", "sm_90a")
                 for mutation in ("clean", "the table placed over A_s")] + [
    ("sm_80", "the wait deleted"), ("sm_90a", "the parity flipped")]


@pytest.mark.parametrize(("arch", "mutation"), GROUPED_CASES,
                         ids=[f"{a}-{m}" for a, m in GROUPED_CASES])
def test_a_group_found_in_a_shared_table_is_checked(arch: str, mutation: str) -> None:
    """A shared read at an index read from memory reads any element of its buffer, and a
    synchronisation under a condition every thread of the block decides alike from memory
    is walked with the condition false and true (both were "not checked: tiles cannot be
    bounded", "a synchronisation under the condition"). The table moved over the pipelined
    tile is raced by the copies in flight; the pipeline's defects under the condition are
    found with it true."""
    after, _ = lowered(GROUPED_ROWS, "grouped_rows", arch, **GROUPED_ARGS)
    if mutation == "the table placed over A_s":
        after = _rebased(after, "tiles", "A_s")
    elif mutation == "the wait deleted":
        after = mutated(after, _nth("ptx_wait_group", 0, _no_op)())
    elif mutation == "the parity flipped":
        after = mutated(after, _nth("mbarrier_wait_parity", 0, _flip)(), loop_only=False)
    found = check(after, arch)
    if mutation == "clean":
        assert found["verdict"] == "none", found
        assert "for the condition by < tiles[4] true and false" in found["text"], found
        assert "trip count" not in found["text"], found
        return
    assert found["verdict"] == "hazard", found
    assert "(with the condition by < tiles[4] true)" in found["text"], found
    if mutation == "the table placed over A_s":
        assert any(f["buffer"] in ("A_s", "tiles") for f in found["findings"]), found


def test_a_read_at_an_index_from_memory_spans_its_buffer() -> None:
    """The read of ``tiles[group[0]]`` (the group a loop found: unknown to the walk) is
    every byte of ``tiles``; with the condition false the block copies nothing."""
    from sphinx_tlstages.worker.hazards.trace import Trace
    from sphinx_tlstages.worker.hazards.undecided import Forked

    after, _ = lowered(GROUPED_ROWS, "grouped_rows", "sm_80", **GROUPED_ARGS)
    func = ir_facts.device_function(after["final"])
    with pytest.raises(Forked) as fork:
        Trace(func)
    records = Trace(func, trips={fork.value.key: 1}).records
    table = {(r["lo"], r["hi"]) for r in records if r["op"] == "read"
             and r["buffer"] == "tiles" and r["how"] == "load"}
    assert (0, 4 * 5 - 1) in table, table  # five int32: tiles[0 .. groups]
    assert not [r for r in Trace(func, trips={fork.value.key: 0}).records
                if r["op"] in ("copy", "commit", "wait")]


# --- a loop whose first iteration depends on the block ------------------------------------

# Local attention scores: block ``bx`` reads the key blocks ``max(0, bx - 2) .. bx``.
WINDOW_SCORES = read("hazards/window_scores.py")
WINDOW_ARGS = {"seq": 512, "dim": 64, "window": 3, "num_stages": 2}


def _at_key_block(k: Any, n: Any) -> Any:
    """Key block 3 only: read by blocks 3, 4 and 5 (first, second, third iteration)."""
    return _eq(k, 3)


WINDOW_CASES = [("sm_80", "clean"), ("sm_80", "the wait deleted"),
                ("sm_80", "the barriers deleted"), ("sm_90a", "clean"),
                ("sm_90a", "the parity flipped")]


@pytest.mark.parametrize(("arch", "mutation"), WINDOW_CASES,
                         ids=[f"{a}-{m}" for a, m in WINDOW_CASES])
def test_a_loop_starting_where_the_block_says_is_checked_per_block(arch: str,
                                                                   mutation: str) -> None:
    """A synchronised loop starting at ``max(0, bx - 2)`` is walked once per block index
    (it was "not checked: the loop over k is not known"); a defect at one key block shows
    in the blocks whose window holds it, and the verdict names one of them."""
    after, _ = lowered(WINDOW_SCORES, "window_scores", arch, **WINDOW_ARGS)
    if mutation != "clean":
        name, replace = DEFECTS[arch][mutation]
        after = _when(after, name, replace, _at_key_block)
    found = check(after, arch)
    if mutation == "clean":
        assert found["verdict"] == "none", found
        assert found["text"].endswith("; for bx from 0 to 7"), found
        return
    assert found["verdict"] == "hazard", found
    block = int(re.search(r"with bx = (\d+)", found["text"]).group(1))
    assert block in (3, 4, 5), found


# --- three warp groups: a role split again, a barrier two roles arrive on ----------------

# A producer copying with cp.async and two consumers, each multiplying one half of the
# tile; the second hears of the tile from the first (``pair``), both free the slot
# (``free``: 128 arrivals each of 256), and the one proxy fence is the first's.
SPLIT_CONSUMERS = read("hazards/split_consumers.py")
CONSUMERS_ARGS = {"M": 256, "N": 256, "K": 512}
# The mutations, by the mbarrier wait or fence deleted (in the order the code runs them:
# the first's wait on ready, its wait on pair, the second's wait on pair, the producer's
# wait on free), and the finding each must give.
SPLIT_MUTATIONS = {
    "the first's wait on ready deleted": (("mbarrier_wait_parity", 0), "RAW", "reads xs"),
    "the producer's wait on free deleted": (("mbarrier_wait_parity", 3), "WAR",
                                            "may overwrite what the consumer"),
    "the first's proxy fence deleted": (("fence_proxy_async", 0), "PROXY", "wgmma reads xs"),
}


@pytest.mark.parametrize("mutation", ["clean", *SPLIT_MUTATIONS])
def test_three_warp_groups_with_a_shared_barrier_are_checked(mutation: str) -> None:
    """``if tx < 128: ... elif tx < 256: ... else: ...`` is three roles (it was "not
    checked: a synchronisation under the condition tx < 256"); a barrier both consumers
    arrive on gives each arrival the phase its role knows the ones before it completed:
    the second never waits on ``free``, and knows its earlier phases complete because the
    first's arrivals on ``pair`` tell it the first's arrivals on ``free`` were made (and
    its own, through its own arrivals on ``pair``). The second consumer is ordered after
    the copies through the first's arrival, and so is the first's proxy fence (a fence on
    the path: "Causality Order"), so the clean kernel has no PROXY finding. Each deletion
    is flagged."""
    after, _ = lowered(SPLIT_CONSUMERS, "split_consumers", "sm_90a", **CONSUMERS_ARGS)
    if mutation != "clean":
        (name, n), kind, words = SPLIT_MUTATIONS[mutation]
        after = mutated(after, _nth(name, n, _no_op)(), loop_only=False)
    found = check(after, "sm_90a")
    if mutation == "clean":
        assert found["verdict"] == "none", found
        return
    assert found["verdict"] == "hazard", found
    assert any(f["kind"] == kind and words in f["text"] for f in found["findings"]), found


def test_a_consumer_that_runs_a_phase_ahead_is_not_checked() -> None:
    """Without a consumer's wait on ``pair``, it may arrive on ``pair`` for the next tile
    before the other arrives for this one: the arrivals' phases are not known, and the
    check says so rather than guess. The barriers not settled are named, ``pair`` among
    them (``free``'s phases, learnt through ``pair``, are not settled either)."""
    after, _ = lowered(SPLIT_CONSUMERS, "split_consumers", "sm_90a", **CONSUMERS_ARGS)
    for n in (1, 2):
        found = check(mutated(after, _nth("mbarrier_wait_parity", n, _no_op)(),
                              loop_only=False), "sm_90a")
        assert found["verdict"] == "not checked", found
        assert "arrivals from several roles" in found["text"], found
        assert "pair[0]" in found["text"].split(" arrivals")[0], found


# Two warp groups handing a tile over by a named barrier: the copying group's one-sided
# arrive (T.named_barrier_arrive, bar.arrive 1, 256) meets the summing group's
# bar.sync 1, 256.
HANDED_OVER = read("hazards/handed_over.py")


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_a_tile_handed_over_by_a_named_barrier_is_ordered_by_it(arch: str) -> None:
    """The trace walks the summing role's code before the copying role's, which orders
    nothing between them: the named barrier does (the copying role arrives once its copy
    is complete, the summing role waits before it reads), and the check follows it: "none
    found" (it was "hazard"). Without the handoff nothing orders the copy and the read: a
    race, flagged (TileLang's own barrier over the copying group alone changes nothing).
    Read before the wait, the barrier orders nothing the check can tell: "not checked",
    saying why, never "none"."""
    after, code = lowered(HANDED_OVER, "handed_over", arch, M=256)
    assert "__named_barrier_arrive(1, 256)" in code and "__sync_thread_partial(1, 256)" in code
    found = check(after, arch)
    assert found["verdict"] == "none", found
    assert found["text"].endswith("over 1 slot; 1 cp.async group"), found
    after, code = lowered(HANDED_OVER, "handed_over", arch, M=256, handoff=False)
    assert "__named_barrier_arrive" not in code
    found = check(after, arch)
    assert found["verdict"] == "hazard", found
    assert found["findings"][0]["buffer"] == "tile", found
    after, code = lowered(HANDED_OVER, "handed_over", arch, M=256, wait_first=False)
    assert code.index("total = (total + tile") < code.index("__sync_thread_partial(1, 256)")
    found = check(after, arch)
    assert found["verdict"] == "not checked", found
    assert "run in two roles that meet at named barriers" in found["text"], found
    assert "(the producer)" in found["text"] and "(the consumer)" in found["text"], found


def test_an_access_outside_the_loops_is_placed_by_its_own_roles_loops() -> None:
    """Where an access outside every loop is: the loop it comes before or after, counted
    among its own role's loops in a warp-specialised kernel (a reader sees one loop over
    k in the source, the producer's and the consumer's in the code), an ordinal only where
    one role has two loops of one name, nothing where there is no loop to place it by."""
    from sphinx_tlstages.worker.hazards.trace import outside

    roles = [("k", "producer"), ("k", "consumer")]
    assert outside(roles, 0, "producer") == "before the producer's loop over k"
    assert outside(roles, 1, "consumer") == "before the consumer's loop over k"
    assert outside(roles, 2, "consumer") == "after the consumer's loop over k"
    assert outside(roles, 0, "all") == "before the producer's loop over k"
    two = [("k", "all"), ("k", "all")]
    assert [outside(two, n) for n in range(3)] == [
        "before the first loop over k", "before the second loop over k",
        "after the second loop over k"]
    assert outside([("ko", "all"), ("k", "all")], 1) == "before the loop over k"
    assert outside([], 0) == outside([("k", "producer")], 1, "consumer") == ""


# --- atomics and extern functions on shared memory ---------------------------------------

# A histogram of each streamed tile counted with T.atomic_add into shared memory (the bin
# an element of the tile picks); each tile scanned in place by a device function of the
# author's own, handed a pointer to it.
TILE_COUNTS = read("hazards/tile_counts.py")
SCANNED_TILES = read("hazards/scanned_tiles.py")


@pytest.mark.parametrize("num_stages", [1, 2, 3])
def test_atomics_and_extern_functions_on_shared_memory_get_a_verdict(num_stages: int) -> None:
    """An atomic add is a read and a write of its element by one thread at a time (a bin
    the data picks: any of them); a function handed a pointer may touch any byte of the
    tile it points to. Both kernels are clean as lowered; the steady-state wait deleted
    is a race (the threads' own reads of a copy in flight), and the barrier before the
    scan deleted is "not checked" naming the function, never "hazard": whether it reads
    the copy's bytes only its code knows."""
    counts, _ = lowered(TILE_COUNTS, "tile_counts", "sm_80", N=4096, num_stages=num_stages)
    found = check(counts)
    assert found["verdict"] == "none", found
    raced = check(mutated(counts, MUTATIONS["the steady-state wait deleted"]()))
    assert num_stages == 1 or raced["verdict"] == "hazard", raced

    scanned, _ = lowered(SCANNED_TILES, "scanned_tiles", "sm_80", N=4096,
                         num_stages=num_stages)
    assert check(scanned)["verdict"] == "none", check(scanned)
    if num_stages > 1:
        waited = check(mutated(scanned, MUTATIONS["the steady-state wait deleted"]()))
        assert waited["verdict"] == "hazard" and "RAW on x_s" in waited["text"], waited
    unordered = check(mutated(scanned, MUTATIONS["the second __syncthreads deleted"]()))
    assert unordered["verdict"] == "not checked", unordered
    assert "block_scan is handed a pointer into x_s" in unordered["text"], unordered


# --- long loops and loops around the pipelined loop, checked by their period -------------

HEAD_SUMS = read("hazards/head_sums.py")


@pytest.mark.parametrize("num_stages", [1, 2, 3])
def test_a_long_loop_and_a_loop_around_it_are_checked_by_their_period(num_stages: int) -> None:
    """5,000 tiles, and 48 heads of 96 tiles each (more iterations than the walk unrolls):
    each walked until its iterations repeat, then on to its last ones, with the verdict
    of the whole loop (every cp.async group counted); the steady-state wait deleted is
    still a race."""
    long, _ = lowered(FETCH_FIRST, "fetch_first", "sm_80", N=512, K=5000,
                      num_stages=num_stages)
    found = check(long)
    assert found["verdict"] == "none", found
    assert "; 5000 cp.async groups" in found["text"], found
    heads, _ = lowered(HEAD_SUMS, "head_sums", "sm_80", heads=48, N=512, K=96,
                       num_stages=num_stages)
    found = check(heads)
    assert found["verdict"] == "none" and "; 4608 cp.async groups" in found["text"], found
    if num_stages > 1:
        for after in (long, heads):
            raced = check(mutated(after, MUTATIONS["the steady-state wait deleted"]()))
            assert raced["verdict"] == "hazard" and "RAW on S" in raced["text"], raced


def test_a_synchronous_cp_async_says_so_beside_the_copies_it_counts() -> None:
    """gfx950's TileLang copies with cp_async_gs, a plain store in its HIP templates: the
    verdict says why there is nothing to check in words that agree with the summary's
    count of cp.async calls; gfx942, which emits none, says no pipeline."""
    said = {}
    for mcpu in ("gfx950", "gfx942"):
        with kernel_module(HEADER + FETCH_FIRST, "hazard_kernel.py", None) as module:
            func, configs = prim_func(module.namespace["fetch_first"],
                                      {"N": 512, "K": 64, "num_stages": 2})
            target = {"kind": "hip", "mcpu": mcpu}
            after, code = lower_kept(func, configs, target)
        said[mcpu] = (hazard_check.hazards(after, target, ir_facts.main_function,
                                           ir_facts.device_function)["text"],
                      "cp_async_gs" in code)
    text, copies = said["gfx950"]
    assert copies, said  # TileLang 0.1.15 pipelines on gfx950 with cp_async_gs
    assert text == ("not checked: cp.async on gfx950 is a synchronous store in TileLang's "
                    "HIP templates (tl_templates/hip/copy.h): no asynchronous pipeline to "
                    "check"), said
    assert said["gfx942"] == ("not checked: no asynchronous pipeline on gfx942", False), said
