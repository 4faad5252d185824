"""The ``sync`` part, "Synchronisation and async operations": each counter as the
generated code spells it, per variant."""

from __future__ import annotations

from collections.abc import Callable

from docutils import nodes

from ...core.plan.spec import DirectiveSpec, VariantSpec
from ...core.plan.targets import Target
from ...core.results.kernels import kernels
from ...core.results.result import Result
from .parts import Context, Drawn, Rows, renders
from .shared import NOT_RECORDED
from .summary import code_name
from .tables import Cell, Span, code, table


def _cuda(target: Target) -> bool:
    return target.kind == "cuda"


def _any(target: Target) -> bool:
    return True


def _tensor_memory(target: Target) -> bool:
    return target.has_tensor_memory


def _hip(target: Target) -> bool:
    return target.kind == "hip"


def _metal(target: Target) -> bool:
    return target.kind == "metal"


def _asynchronous(target: Target) -> bool:
    """CUDA and HIP: where TileLang's copies may be asynchronous (on Metal they never are,
    and the absence of cp.async there says nothing)."""
    return target.asynchronous


# (counter, its spelling in the generated code, the targets on which its absence is
# worth saying). TileLang's HIP headers keep the CUDA names of barriers and async copies.
SYNC_ROWS: tuple[tuple[str, str, Callable[[Target], bool]], ...] = (
    ("syncthreads", "__syncthreads()", _asynchronous),
    ("threadgroup_barrier", "threadgroup_barrier(mem_flags::mem_threadgroup)", _metal),
    ("simdgroup_barrier", "simdgroup_barrier(…)", _metal),
    ("cp_async", "tl::cp_async_gs<N>", _asynchronous),
    ("cp_async_commit", "tl::cp_async_commit()", _asynchronous),
    ("cp_async_wait", "tl::cp_async_wait<N>()", _asynchronous),
    ("mbarrier_init", "mbarrier[i].init()", _cuda),
    ("mbarrier_wait", "mbarrier[i].wait()", _cuda),
    ("mbarrier_arrive", "mbarrier[i].arrive()", _cuda),
    ("mbarrier_expect_tx", "mbarrier[i].expect_transaction()", _cuda),
    ("mbarrier_arrive_expect_tx", "mbarrier[i].arrive_and_expect_tx()", _cuda),
    ("tma_load", "tl::tma_load", _cuda),
    ("tma_store", "tl::tma_store", _cuda),
    ("mma", "tl::mma_sync", _cuda),
    ("wgmma", "tl::wgmma_ss / _rs", _cuda),
    ("tcgen05_mma", "tl::tcgen05mma_ss / _ts", _tensor_memory),
    ("tcgen05_commit", "tl::tcgen05_mma_arrive()", _tensor_memory),
    ("tmem_alloc", "tl::tmem_allocate()", _tensor_memory),
    ("tmem_dealloc", "tl::tmem_deallocate()", _tensor_memory),
    ("tmem_load", "tl::tcgen05_ld_*<N, …>", _tensor_memory),
    ("tmem_store", "tl::tcgen05_st_*<N, …>", _tensor_memory),
    ("tcgen05_fence_before", "tl::tcgen05_before_thread_sync()", _tensor_memory),
    ("tcgen05_fence_after", "tl::tcgen05_after_thread_sync()", _tensor_memory),
    ("mfma", "__builtin_amdgcn_mfma_*()", _hip),
    ("simdgroup_mma", "simdgroup_multiply_accumulate()", _metal),
    ("matmul2d", "__pct_op.run() (mpp::tensor_ops::matmul2d)", _metal),
)


def _count(value: object) -> str:
    if value is None:
        return NOT_RECORDED  # a counter added after the snapshot was taken
    return " ".join(f"<{n}>" for n in value) if isinstance(value, list) else str(value)


def sync_part(rows: list[tuple[VariantSpec, Result]]) -> list[nodes.Node]:
    ok = [(v, r) for v, r in rows if r.get("ok")]
    body: list[list[Cell | Span]] = []
    omitted = []
    for key, spelling, applies in SYNC_ROWS:
        values = [r["sync"].get(key) for _, r in ok]
        applicable = any(applies(v.target) for v, _ in ok)
        recorded = any(value is not None for value in values)
        if not any(values) and (recorded or not applicable):
            if applicable:
                omitted.append(spelling)
            continue
        body.append([code(spelling), *(_count(v) for v in values)])
    language = code_name([v.target for v, _ in ok])
    # "in the CUDA", "in the HIP"; Metal is no noun alone.
    where = f"in the {language}" + (" code" if language == "Metal" else "")
    headers: list[Cell] = [where, *(v.heading for v, _ in ok)]
    result: list[nodes.Node] = [table(headers, body, ["tl-table"], widths=[30, *[14] * len(ok)],
                                       key_columns=1)]
    tcgen05 = [spelling for _, spelling, applies in SYNC_ROWS if applies is _tensor_memory]
    if all(spelling in omitted for spelling in tcgen05):  # said as one, not eight
        omitted = [s for s in omitted if s not in tcgen05]
        omitted.append("the tcgen05 and tensor-memory operations (tl::tcgen05*, tl::tmem_*)")
    if omitted:
        result.append(nodes.paragraph(
            text="Absent from every variant: " + ", ".join(omitted) + ".", classes=["tl-note"]))
    if any(not v.target.asynchronous for v, _ in ok):
        result.append(nodes.paragraph(classes=["tl-note", "tl-synchronous"], text=(
            "Metal has no asynchronous copies in TileLang's code: each T.copy into shared "
            "memory is loads from device memory and stores into threadgroup memory, and "
            "threadgroup_barrier(mem_flags::mem_threadgroup) orders them against the reads "
            "that follow.")))
    several = max((len(kernels(r["cuda"], v.source_name)) for v, r in ok), default=0)
    if several > 1:
        # The summary gives each kernel a row: said here, so that its numbers and these
        # add up rather than disagree.
        result.append(nodes.paragraph(
            text=f"Counted over each variant's whole code, its {several} kernels together; "
                 "the summary counts each kernel's own.", classes=["tl-note", "tl-kernels"]))
    return result


@renders("sync")
def _sync(spec: DirectiveSpec, rows: Rows, context: Context) -> Drawn | None:
    return Drawn(sync_part(rows)) if any(r.get("ok") for _, r in rows) else None
