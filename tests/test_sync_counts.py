"""The sync counts skip the scan of a spelling the CUDA does not hold: they must count
exactly what a scan of every spelling counts, whichever spellings are there."""

from __future__ import annotations

import re

import pytest

from sphinx_tlstages.core.results import cuda

# One line per spelling (variants of a pattern's optional parts included), and lines
# that are near misses of them.
LINES = [
    "__syncthreads();", "tl::cp_async_gs<16>(a, b);", "tl::cp_async_gs_conditional<16>(a, b, c);",
    "tl::cp_async_commit();", "tl::cp_async_wait<2>();", "tl::cp_async_wait<0>();",
    "bar[0].init(128);", "bar[1].wait(0);", "bar[2].arrive();", "bar[0].expect_transaction(64);",
    "bar[3].arrive_and_expect_tx(64);", "tl::tma_load(d, bar, s);", "tl::tma_load_im2col(d, s);",
    "tl::tma_store(d, s);", "tl::mma_sync<f16>(c, a, b);", "tl::wgmma_ss<1>(a);",
    "tl::wgmma_rs<1>(a);", "tl::tcgen05mma_ss<1>(a);", "tl::tcgen05_mma_arrive(b);",
    "tl::tcgen05_ld_32dp32bNx<8>(t);", "tl::tcgen05_st_32dp32bNx<8>(t);",
    "tl::tmem_allocate(p, 64);", "tl::tmem_deallocate(p, 64);",
    "tl::tcgen05_before_thread_sync();", "tl::tcgen05_after_thread_sync();",
    "__builtin_amdgcn_mfma_f32_16x16x16f16(a, b, c, 0, 0, 0);",
    # near misses: what a careless literal test would take for a match, or miss
    "my_tl::mma_sync<f16>(c);", "tl::wgmma_xx<1>(a);", "bar.init(1);", "__syncthreads ();",
    '#line 12 "kernel.py"', "tl::tma_load_im2colx(d);",
    # Metal's, then their near misses
    "threadgroup_barrier(mem_flags::mem_threadgroup);",
    "simdgroup_barrier(mem_flags::mem_threadgroup);",
    "simdgroup_multiply_accumulate(C_local[0], A_local[0], B_local[0], C_local[0]);",
    "__pct_op.run(__ct_a, __ct_b, __pct_c0);",
    "my_threadgroup_barrier(x);", "__pct_op.runner(x);",
]


def scanned(code: str) -> dict[str, object]:
    """Every spelling scanned, as the counts were taken before the literal test."""
    text = cuda.without_line_directives(code)
    counts: dict[str, object] = {name: len(re.findall(p, text))
                                 for name, p in cuda.COUNTED.items()}
    counts["cp_async_wait"] = [int(n) for n in re.findall(r"\btl::cp_async_wait<(\d+)>\(\)",
                                                           text)]
    return counts


@pytest.mark.parametrize("picked", [range(len(LINES)), range(0, len(LINES), 2),
                                    range(1, len(LINES), 3), range(0), [4, 25, 26, 27],
                                    range(32, 38)])
def test_counts_as_a_scan_of_every_spelling(picked: range | list[int]) -> None:
    code = "\n".join(f"  {LINES[i]}" for i in picked) + "\n"
    assert cuda.sync_counts(code) == scanned(code)


def test_every_spelling_has_a_line_above() -> None:
    """Each counted spelling is present above, so the first case checks them all."""
    counts = cuda.sync_counts("\n".join(LINES))
    assert all(counts[name] for name in cuda.COUNTED)
