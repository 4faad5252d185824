"""The core's pure rules, on the book's committed snapshots as recorded results: lowering
keys, which variants lowered alike (one rule for the page and the snapshots), snapshot
comparison in words, and the CUDA diffs between variants. No TileLang, no Sphinx build."""

from __future__ import annotations

import copy
import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from sphinx_tlstages.core.plan.spec import KernelOrigin, VariantSpec
from sphinx_tlstages.core.plan.targets import parse_target
from sphinx_tlstages.core.plan.variants import alike_group, lowered_alike, merge_unchanged
from sphinx_tlstages.core.records import snapshot_compare
from sphinx_tlstages.core.results.diffs import diff, pairs
from sphinx_tlstages.core.results.result import RESULT_SCHEMA

SNAPSHOTS = Path(__file__).resolve().parent.parent / "book" / "_tlstages" / "snapshots"
SOURCE = "def matmul(M, num_stages):\n    return M\n"


def snapshot(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((SNAPSHOTS / f"{name}.json").read_text("utf-8"))
    return data


def spec(**change: Any) -> VariantSpec:
    base = VariantSpec(SOURCE, "kernel.py", "matmul", (("M", "1024"),), 2,
                       parse_target("sm_80"))
    return dataclasses.replace(base, **change)


# Keys -----------------------------------------------------------------------------------

def test_a_key_is_its_inputs_and_nothing_else() -> None:
    key = spec().key("tl")
    assert key == spec().key("tl") and len(key) == 64
    assert spec(params=(("N", "8"), ("M", "1024"))).key("tl") \
        == spec(params=(("M", "1024"), ("N", "8"))).key("tl")  # keyword order is noise
    for changed in (spec(num_stages=3), spec(target=parse_target("sm_90a")),
                    spec(source=SOURCE + "\n"), spec(factory="other"),
                    spec(ir_passes=("tl.Simplify",)), spec(record_passes=True),
                    spec(depth_param="stages")):
        assert changed.key("tl") != key
    assert spec().key("another TileLang") != key
    # Names and page-only fields are not inputs; absolute folders are machine-specific.
    assert spec(axes=(("num_stages", "2"),), merged=(1, 2)).key("tl") == key
    here = KernelOrigin(folders=("/home/a/book",), where=("kernels",))
    there = KernelOrigin(folders=("/srv/b/book",), where=("kernels",))
    assert spec(origin=here).key("tl") == spec(origin=there).key("tl") != key


def test_key_parts_name_every_input_readably() -> None:
    parts = spec().key_parts("0.1.15+abc")
    assert parts["num_stages"] == "2" and parts["target"] == spec().target.canonical
    assert parts["result schema"] == str(RESULT_SCHEMA)
    assert parts["kernel source"].endswith("(2 lines)")


# Lowered alike: the page and the snapshots agree ---------------------------------------

def rows_of(name: str) -> list[tuple[VariantSpec, dict[str, Any]]]:
    """The snapshot's variants as the page's rows: specs with their axes, and the
    recorded facts as results."""
    rows = []
    for vid, facts in snapshot(name)["variants"].items():
        axes = tuple(tuple(part.split("=", 1)) for part in vid.split(",")) \
            if "=" in vid else (("num_stages", vid),)
        values = dict(axes)
        target = parse_target(values.get("target", "sm_80"))
        variant = spec(num_stages=int(values["num_stages"]), target=target, axes=axes)
        rows.append((variant, {"ok": "error" not in facts, **facts}))
    return rows


@pytest.mark.parametrize("name", sorted(p.stem for p in SNAPSHOTS.glob("*.json")))
def test_the_page_and_the_snapshot_merge_the_same_variants(name: str) -> None:
    rows = rows_of(name)
    shown, merged = merge_unchanged(rows)  # type: ignore[arg-type]
    page = sorted(",".join(v.id for v, _ in rows if v.target == m.target
                           and v.num_stages in m.merged
                           and alike_group(v.id) == alike_group(m.id)) for m in merged)
    variants = snapshot(name)["variants"]
    said = snapshot_compare._alike(variants, list(variants))
    assert said is not None
    assert sorted(said.split("; ")) == (page or ["none"])
    assert len(shown) == len(rows) - sum(len(m.merged) - 1 for m in merged)


def test_num_stages_had_no_effect_on_gfx942_only() -> None:
    _, merged = merge_unchanged(rows_of("gemm-amd"))  # type: ignore[arg-type]
    assert [(m.target.arch, m.merged) for m in merged] == [("gfx942", (1, 2, 3, 4))]


def test_the_rule_wants_every_member_lowered_and_two_of_them() -> None:
    one = {"ok": True, "planned_ir": "ab", "cuda": "x"}
    assert lowered_alike([one, dict(one)])
    assert not lowered_alike([one])
    assert not lowered_alike([one, {**one, "ok": False}])
    assert not lowered_alike([one, {"error": "boom", "planned_ir": "ab", "cuda": "x"}])
    assert not lowered_alike([one, {**one, "cuda": "y"}])
    assert not lowered_alike([{**one, "planned_ir": None}] * 2)
    assert alike_group("target=sm_80,block_K=64,num_stages=2") == "target=sm_80,block_K=64"
    assert alike_group("3") == ""


# Snapshot comparison, in words -----------------------------------------------------------

def test_a_visible_change_is_said_in_words_and_provenance_is_not() -> None:
    old = snapshot("gemm-sm80")
    new = copy.deepcopy(old)
    new["tilelang"] = "0.1.99"
    new["schema"] = old["schema"] + 1
    assert snapshot_compare.changes(old, new) == []
    assert snapshot_compare.version_change(old, new) == f"TileLang {old['tilelang']} -> 0.1.99"
    shared = new["variants"]["3"]["shared"]
    a = next(b for b in shared if b["name"] == "A_shared")
    a["shape"] = [4, *a["shape"][1:]]
    new["variants"]["3"]["sync"]["cp_async_wait"] = [3, 2, 1, 0]
    found = snapshot_compare.changes(old, new)
    assert {(c.variant, c.fact) for c in found} == {("3", "shared"), ("3", "sync")}
    words = " | ".join(c.words for c in found)
    assert "A_shared (3, 128, 64) -> (4, 128, 64) float16" in words
    assert "cp_async_wait 2,1,0 -> 3,2,1,0" in words


def test_a_fact_one_side_did_not_keep_is_not_a_change() -> None:
    old = snapshot("gemm-sm80")
    new = copy.deepcopy(old)
    for facts in old["variants"].values():
        facts.pop("gemm", None)
    assert snapshot_compare.changes(old, new) == []


def test_merging_that_changes_is_a_change() -> None:
    old = snapshot("gemm-amd")
    new = copy.deepcopy(old)
    new["variants"]["target=gfx942,num_stages=4"]["planned_ir"] = "0000"
    said = [c.words for c in snapshot_compare.changes(old, new) if c.fact == "planned_ir"]
    assert len(said) == 1 and "shown as one" in said[0]


# Diffs ---------------------------------------------------------------------------------

def test_pairs_follow_the_innermost_varying_axis() -> None:
    variants = [(f"k{k}-ns{n}", (("block_K", str(k)), ("num_stages", str(n))))
                for k in (32, 64) for n in (2, 3, 4)]
    assert [t for _, _, t in pairs(variants, "consecutive")] == [
        "block_K=32: num_stages 2 → 3", "block_K=32: num_stages 3 → 4",
        "block_K=64: num_stages 2 → 3", "block_K=64: num_stages 3 → 4"]
    assert [(o, n) for o, n, _ in pairs(variants, "baseline")][:2] == [
        ("k32-ns2", "k32-ns3"), ("k32-ns2", "k32-ns4")]
    assert pairs(variants, "none") == [] and pairs(variants[:1], "consecutive") == []


def test_a_diff_counts_what_it_caps_and_ignores_line_directives() -> None:
    cuda = snapshot("gemm-sm80")["variants"]
    old, new = "\n".join(cuda["2"]["cuda"]), "\n".join(cuda["3"]["cuda"])
    full = diff("ns2", old, "ns3", new, 10_000)
    assert full.added > 0 and full.removed > 0 and full.hidden_lines == 0
    assert full.counts == f"+{full.added} -{full.removed} lines"
    assert "#line" not in full.text
    capped = diff("ns2", old, "ns3", new, 10)
    assert capped.text.count("\n") == 9 and capped.hidden_lines == len(
        full.text.splitlines()) - 10
    assert (capped.added, capped.removed) == (full.added, full.removed)


# Benchmark numbers: what makes them stale ---------------------------------------------

def test_numbers_go_stale_with_the_code_shown_not_with_template_headers() -> None:
    from sphinx_tlstages.core.records.bench_data import (
        code_fingerprint,
        cuda_fingerprint,
        fingerprint,
        headers_changed,
        is_stale,
    )

    variant = spec()
    timed = {"ok": True, "cuda": "__global__ void k() {}\n", "templates": "headers-a"}
    numbers = {"fingerprint": fingerprint(variant), "code": code_fingerprint(timed),  # type: ignore[arg-type]
               "cuda": cuda_fingerprint(timed)}  # type: ignore[arg-type]
    other_headers = {**timed, "templates": "headers-b"}
    other_code = {**timed, "cuda": "__global__ void k() { __syncthreads(); }\n"}
    assert not is_stale(variant, numbers, "0.1.15", timed)  # type: ignore[arg-type]
    assert not is_stale(variant, numbers, "0.1.15", other_headers)  # type: ignore[arg-type]
    assert headers_changed(numbers, other_headers)  # type: ignore[arg-type]
    assert not headers_changed(numbers, timed)  # type: ignore[arg-type]
    assert is_stale(variant, numbers, "0.1.15", other_code)  # type: ignore[arg-type]
    assert is_stale(spec(num_stages=3), numbers, "0.1.15", timed)  # type: ignore[arg-type]
    # A file written before the code's own fingerprint compares the code with its headers.
    older = {k: v for k, v in numbers.items() if k != "cuda"}
    assert is_stale(variant, older, "0.1.15", other_headers)  # type: ignore[arg-type]


def test_a_known_tilelang_failure_gets_its_hint_only_where_the_kernel_has_the_pattern() -> None:
    from sphinx_tlstages.core.results import known_failures

    from .kernels import GEMM
    from .test_author_loop import TWO_LOOPS
    said = ("TileLang's pass tl.LayoutInference#1 failed: InternalError: Check failed: "
            "(az->CanProveEqual(input_shape_product * rescale_num, ...)) is false")
    known = known_failures.explain(said, TWO_LOOPS, "matmul")
    assert known is not None and known.line == 21  # the second T.Pipelined loop
    assert known.hint.startswith("A_shared, B_shared are used by the T.Pipelined loops of "
                                 "lines 17 and 21")
    assert known_failures.explain(said, GEMM, "matmul") is None  # one loop: no such cause
    assert known_failures.explain("TileLang's pass tl.Simplify#1 failed: x", TWO_LOOPS,
                                  "matmul") is None
    assert known_failures.explain(said, "def (", "matmul") is None


def test_some_depths_alike_are_named() -> None:
    """Two of four depths lowered alike: the group is not merged, and a sentence says
    which two."""
    from sphinx_tlstages.core.plan.variants import alike_within

    def row(stages: int, ir: str) -> tuple[VariantSpec, dict[str, Any]]:
        return (spec(num_stages=stages, axes=(("num_stages", str(stages)),)),
                {"ok": True, "planned_ir": ir, "cuda": ir})

    rows = [row(1, "a"), row(2, "b"), row(3, "c"), row(4, "c")]
    assert merge_unchanged(rows)[1] == []  # type: ignore[arg-type]
    assert alike_within(rows) == [  # type: ignore[arg-type]
        "On sm_80, num_stages 3 and 4 lower to the same IR after pipeline planning and to "
        "the same CUDA code; the other values differ."]
    assert alike_within([row(1, "a"), row(2, "b"), row(3, "c")]) == []  # type: ignore[arg-type]


def test_keys_a_snapshot_did_not_record_are_not_a_change() -> None:
    """Schema 6 added each loop's line and trips, and the split's slots: an older
    snapshot without them does not drift."""
    from sphinx_tlstages.core.records.snapshot_compare import variant_changes

    ws = {"threads": 256, "producer_threads": 128, "roles": [], "barriers": []}
    loop = {"num_stages": 2, "stage": [0, 1], "order": [0, 1], "statements": []}
    old = {"warp_specialized": ws, "pipeline": [loop]}
    new = {"warp_specialized": {**ws, "line": 17, "slots": 2, "trips": 8},
           "pipeline": [{**loop, "line": 17, "trips": 8}]}
    assert variant_changes("2", old, new) == []
    assert [c.fact for c in variant_changes(
        "2", old, {**new, "warp_specialized": {**ws, "threads": 384}})] == ["warp_specialized"]


# One voice: merged labels, kernels and loops told apart --------------------------------

def _swept(sweep: dict[str, list[object]], stages: list[int]) -> tuple[VariantSpec, ...]:
    from sphinx_tlstages.core.plan.variants import matrix

    return matrix(SOURCE, "kernel.py", "matmul", {"M": 1024}, sweep, stages,
                  [parse_target("sm_80")])


def test_a_merged_row_label_reads_as_one_set() -> None:
    from sphinx_tlstages.core.plan.variants import set_label

    plain = _swept({}, [2, 3, 4])
    assert set_label(plain[:1]) == "2" and set_label(plain) == "2, 3 and 4"
    grid = _swept({"block_N": [64, 128]}, [1, 2])
    ones = [v for v in grid if v.num_stages == 1]
    assert set_label(ones) == "num_stages=1, block_N 64 and 128"
    assert set_label(grid) == "block_N 64 and 128, num_stages 1 and 2"
    # Not every combination: each heading, one by one.
    diagonal = [grid[0], grid[3]]
    assert set_label(diagonal) == "block_N=64, num_stages=1; block_N=128, num_stages=2"


# Two kernels, the second with two loops: TileLang's spelling, cut to what is read.
TWO_KERNELS = """\
#include <tl_templates/cuda/copy.h>
extern "C" __global__ void main_kernel(half_t* A);
extern "C" __global__ void main_kernel_1(float* C);
extern "C" __global__ void __launch_bounds__(128, 1) main_kernel(half_t* A) {
#line 5 "k.py"
  for (int k = 0; k < 3; ++k) {
    tl::cp_async_gs<16>(A, A);
    tl::cp_async_wait<1>();
    __syncthreads();
  }
  tl::cp_async_wait<0>();
}

extern "C" __global__ void __launch_bounds__(64, 1) main_kernel_1(float* C) {
#line 9 "k.py"
  for (int j = 0; j < 3; ++j) {
#line 10 "k.py"
    tl::cp_async_wait<1>();
  }
  tl::cp_async_wait<0>();
#line 11 "k.py"
  for (int i = 0; i < 3; ++i) {
#line 12 "k.py"
    tl::cp_async_wait<2>();
  }
  tl::cp_async_wait<0>();
  __syncthreads();
}
"""
KERNEL = "".join(f"line{n}\n" for n in range(1, 9)) + (
    "    for j in T.Pipelined(3):\n        T.copy(A, S)\n"
    "    for i in T.Pipelined(3):\n        T.copy(A, S)\n")


def test_the_kernels_of_a_code_are_told_apart() -> None:
    from sphinx_tlstages.core.results.cuda import source_map, sync_counts
    from sphinx_tlstages.core.results.kernels import kernel_at, kernels

    found = kernels(TWO_KERNELS, "k.py")
    assert [(k.name, k.threads, k.first) for k in found] == [
        ("main_kernel", 128, 4), ("main_kernel_1", 64, 13)]
    listing = [m.text for m in source_map(TWO_KERNELS, "k.py")]
    assert listing[found[1].last - 1] == "}" and found[1].last == len(listing)
    assert [k.sync["syncthreads"] for k in found] == [1, 1]
    assert sync_counts(TWO_KERNELS)["syncthreads"] == 2  # the fact: both together
    assert kernel_at(found, 11) is found[1] and kernel_at(found, 5) is found[0]
    assert kernel_at(found, None) is found[0]


def test_each_pipelined_loop_has_its_own_waits() -> None:
    from sphinx_tlstages.core.results.cuda import source_map
    from sphinx_tlstages.core.results.kernels import kernels
    from sphinx_tlstages.core.results.loop_waits import waits_by_loop

    second = kernels(TWO_KERNELS, "k.py")[1]
    mapped = source_map(TWO_KERNELS, "k.py")[second.first - 1:second.last]
    # The drain after each loop (no #line) is the loop the code last entered.
    assert waits_by_loop(mapped, KERNEL, [9, 11]) == [(9, [1, 0]), (11, [2, 0])]
    # A wait before any loop of those named fits none: said together instead.
    whole = source_map(TWO_KERNELS, "k.py")
    assert waits_by_loop(whole, KERNEL, [9, 11]) is None


def test_an_unneeded_barrier_of_the_first_kernel_is_placed_in_it() -> None:
    """The check numbers the first kernel's barriers only; the whole code prints more, so
    the worker could not place it: the page places it in the first kernel's lines."""
    from sphinx_tlstages.core.results.kernels import placed_in_first

    entry = {"op": "sync", "site": 0, "of": 1, "cuda_lines": [], "line": None,
             "what": "__syncthreads", "text": "__syncthreads: not needed"}
    placed = placed_in_first(entry, TWO_KERNELS, KERNEL, "k.py")
    assert placed["cuda_lines"] == [8] and placed["line"] == 5
    assert entry["cuda_lines"] == []  # the recorded fact is left as it was
    assert placed_in_first({**entry, "of": 2}, TWO_KERNELS, KERNEL, "k.py")["cuda_lines"] == []


# --- drift that says what changed ---------------------------------------------------------

GEMM_CALL = {"form": "m16n8k16", "instruction": "mma_sync", "line": 40,
             "operands": ["A_shared", "B_shared", "C_local"],
             "text": "T.gemm(A_shared, B_shared, C_local, transpose_B=True)"}
ROLES = [{"inserted": False, "line": 35, "role": "producer", "text": "T.copy(K[k], K_shared)"},
         {"inserted": False, "line": 37, "role": "consumer",
          "text": "T.gemm(Q_shared, K_shared, scores)"}]


def _said(fact: str, old: Any, new: Any) -> list[str]:
    return [c.words for c in snapshot_compare.variant_changes("2", {fact: old}, {fact: new})]


@pytest.mark.quick
def test_a_drift_says_the_line_a_statement_moved_to() -> None:
    """A gemm call or a role's row that moved says from which line to which; a role's
    new row says which role gained it and where; CUDA whose code is the same but whose
    #line directives name other lines says so; and a drift made only of such changes is
    recognised as one."""
    moved = {**GEMM_CALL, "line": 39}
    assert _said("gemm", [GEMM_CALL], [moved]) == [
        "T.gemm(A_shared, B_shared, ...) moved from line 40 to 39"]
    assert _said("gemm", [GEMM_CALL], [{**GEMM_CALL, "instruction": "wgmma"}]) == [
        "T.gemm(A_shared, B_shared, ...) at line 40: mma_sync -> wgmma"]
    shifted = [{**row, "line": row["line"] + 1} for row in ROLES]
    gained = [*ROLES, {"inserted": False, "line": 41, "role": "consumer",
                       "text": "T.copy(scores, probs)"}]
    warp = {"line": 34, "roles": ROLES, "consumer_threads": 128}
    assert _said("warp_specialized", warp, {**warp, "roles": shifted}) == [
        "T.copy(K[k], K_shared) moved from line 35 to 36",
        "T.gemm(Q_shared, K_shared, scores) moved from line 37 to 38"]
    assert _said("warp_specialized", warp, {**warp, "roles": gained}) == [
        "the consumer's role gained a row at line 41: T.copy(scores, probs)"]
    cuda = ['#line 12 "k.py"', "  tl::cp_async_commit();", '#line 13 "k.py"', "  x = 1;"]
    later = ['#line 13 "k.py"', "  tl::cp_async_commit();", '#line 14 "k.py"', "  x = 1;"]
    assert _said("cuda", cuda, later) == [
        "the CUDA's #line directives moved to other kernel lines (its code is the same)"]
    assert _said("cuda", cuda, [*later, "  y = 2;"]) == ["CUDA +3 -2 lines"]
    moves = [("2", said) for said in _said("gemm", [GEMM_CALL], [moved])
             + _said("cuda", cuda, later)]
    assert snapshot_compare.only_moved(moves)
    assert not snapshot_compare.only_moved([*moves, ("2", "threads 128 -> 256")])


# --- named barriers between roles (core.hazards.named) -----------------------------------

def _handoff(*, count: int = 256, arrive_after_wait: bool = True, arrivals: int = 1,
             skipped: bool = False, barrier: bool = True) -> list[dict[str, Any]]:
    """A trace as the walk makes it of a tile handed from a copying role to a reading one,
    the reading role's code first (the trace's order of roles is the code's): the reader
    waits at named barrier 1 (``bar.sync 1, count`` by its 128 threads), then reads; the
    copier copies, commits, waits for its own group and arrives (``bar.arrive 1, count``)."""
    reader = {"role": "consumer", "threads": (0, 127)}
    copier = {"role": "producer", "threads": (128, 255)}
    arrive = [{"op": "barrive", "id": 1, "count": count, **copier}] * arrivals
    wait = [{"op": "wait", "n": 0, **copier}]
    return [
        *([{"op": "sync", "named": True, "id": 1, "count": count, **reader}] if barrier else []),
        {"op": "read", "buffer": "tile", "root": "tile", "lo": 0, "hi": 1023, **reader},
        {"op": "copy", "buffer": "tile", "root": "tile", "lo": 0, "hi": 1023, **copier},
        {"op": "commit", **copier},
        *(wait if not barrier else (wait + arrive) if arrive_after_wait else (arrive + wait)),
        *([{"op": "skipped", "commits": 0, **copier}] if skipped else []),
    ]


def test_a_named_barrier_between_roles_orders_a_completed_copy_before_the_wait() -> None:
    from sphinx_tlstages.core.hazards.check import check_cp_async

    assert check_cp_async(_handoff(), {}) == []
    # Nothing between the roles: the copy and the read race.
    [race] = check_cp_async(_handoff(barrier=False), {})
    assert race["kind"] == "WAR" and race["buffer"] == "tile", race
    # Each of these leaves the phases unpaired or the copy incomplete at the arrival:
    # "not checked" (UNSURE), never a race and never ordered.
    for trace in (_handoff(count=384), _handoff(arrivals=2), _handoff(skipped=True),
                  _handoff(arrive_after_wait=False)):
        found = check_cp_async(trace, {})
        assert [f["kind"] for f in found] == ["UNSURE"], found
        assert "run in two roles that meet at named barriers" in found[0]["text"]
        assert "(the producer)" in found[0]["text"] and "(the consumer)" in found[0]["text"]
