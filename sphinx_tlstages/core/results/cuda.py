"""Generated CUDA (or HIP, or Metal) as text: normalised once at the source, then counted and shown.

Normalising removes what depends on the machine: ``#line`` directives name absolute
paths (the kernel's file made absolute against the worker's folder, TileLang's own
site-packages files). Line numbers stay relative to the kernel's own first line.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

# A ``#line N "path"`` directive, as TileLang writes it; normalising and the source map
# both read it through this one spelling.
_LINE = re.compile(r'^(?P<head>\s*#line\s+(?P<number>\d+)\s+)"(?P<path>[^"]*)"',
                   re.MULTILINE)

# What the synchronisation table counts, spelled as TileLang 0.1.15 emits it.
COUNTED: dict[str, str] = {
    "syncthreads": r"__syncthreads\(\)",
    "cp_async": r"\btl::cp_async_gs(?:_conditional)?<",
    "cp_async_commit": r"\btl::cp_async_commit\(\)",
    "mbarrier_init": r"\]\.init\(",
    "mbarrier_wait": r"\]\.wait\(",
    "mbarrier_arrive": r"\]\.arrive\(",
    "mbarrier_expect_tx": r"\]\.expect_transaction\(",
    "mbarrier_arrive_expect_tx": r"\]\.arrive_and_expect_tx\(",
    "tma_load": r"\btl::tma_load(?:_im2col)?\(",
    "tma_store": r"\btl::tma_store\(",
    "mma": r"\btl::mma_sync<",
    "wgmma": r"\btl::wgmma_(?:ss|rs)<",
    # Blackwell's tensor cores (tcgen05) and tensor memory.
    "tcgen05_mma": r"\btl::tcgen05mma_\w+<",
    "tcgen05_commit": r"\btl::tcgen05_mma_arrive\(",
    "tmem_load": r"\btl::tcgen05_ld_\w+<",
    "tmem_store": r"\btl::tcgen05_st_\w+<",
    "tmem_alloc": r"\btl::tmem_allocate\(",
    "tmem_dealloc": r"\btl::tmem_deallocate\(",
    "tcgen05_fence_before": r"\btl::tcgen05_before_thread_sync\(",
    "tcgen05_fence_after": r"\btl::tcgen05_after_thread_sync\(",
    # AMD (HIP): the matrix cores. Synchronisation keeps the CUDA spellings there
    # (__syncthreads, and the cp_async names, which TileLang's HIP headers define).
    "mfma": r"\b__builtin_amdgcn_mfma_\w+\(",
    # Apple (Metal): barriers over a threadgroup's threadgroup memory (TileLang writes a
    # simdgroup_barrier where it wants a warp's), 8x8 simdgroup matrix multiplies, and
    # Metal 4's cooperative-tensor matmul2d, run through the operation TileLang names.
    "threadgroup_barrier": r"\bthreadgroup_barrier\(",
    "simdgroup_barrier": r"\bsimdgroup_barrier\(",
    "simdgroup_mma": r"\bsimdgroup_multiply_accumulate\(",
    "matmul2d": r"\b__pct_op\.run\(",
}
_WAIT = re.compile(r"\btl::cp_async_wait<(\d+)>\(\)")


def _literal(pattern: str) -> str:
    """The longest run of plain characters every match of ``pattern`` contains: its
    text before the first regex operator, escapes undone (``\\]\\.init\\(`` gives
    ``].init(``). Where it is absent the pattern cannot match, and the scan is skipped:
    most spellings (Hopper's, Blackwell's, AMD's) are absent from a variant's CUDA."""
    plain = re.match(r"(?:\\b)?((?:\\[\]\.\(\)\[<>]|[\w:<>_])+)", pattern)
    text = plain.group(1) if plain else ""
    # A quantifier after the run applies to its last character, which may be absent.
    if re.match(r"[?*{]", pattern[plain.end():] if plain else ""):
        text = text[:-1]
    return re.sub(r"\\(.)", r"\1", text)


_COUNTED = {name: (_literal(pattern), re.compile(pattern)) for name, pattern in COUNTED.items()}


def _portable(path: str, source_name: str) -> str:
    marker = "/site-packages/"
    if marker in path:
        return path.rsplit(marker, 1)[1]
    if "/tilelang/" in path:
        return "tilelang/" + path.rsplit("/tilelang/", 1)[1]
    return path.rsplit("/", 1)[-1] or source_name


def normalise(cuda: str, source_name: str) -> str:
    """Make ``#line`` paths portable and line endings plain."""
    text = cuda.replace("\r\n", "\n")
    text = _LINE.sub(lambda m: f'{m["head"]}"{_portable(m["path"], source_name)}"', text)
    return text if text.endswith("\n") else text + "\n"


# Packages whose own source files TileLang's #line directives may point into (paths are
# normalised relative to site-packages): where a template line sits inside TileLang is
# provenance, it moves between releases while the code a reader sees does not.
_PROVENANCE_LINES = re.compile(r'^(\s*#line\s+)\d+(\s+"(?:tilelang|tvm|tvm_ffi)/)')


def visible_cuda(lines: Iterable[str]) -> list[str]:
    """The CUDA as compared: ``#line`` numbers into TileLang's own files masked; the
    kernel's own ``#line`` mapping, which the page shows, kept."""
    return [_PROVENANCE_LINES.sub(r"\1_\2", line) for line in lines]


def without_line_directives(cuda: str) -> str:
    """The CUDA as a reader wants it in a listing or diff."""
    return "".join(line for line in cuda.splitlines(True) if not line.lstrip().startswith("#line"))


def code_lines(cuda: str) -> int:
    """Lines of CUDA, ``#line`` directives not counted."""
    return sum(1 for line in cuda.splitlines() if not line.lstrip().startswith("#line"))


def sync_counts(cuda: str) -> dict[str, object]:
    """Counts of each synchronisation/async/MMA spelling, and the N of each cp_async_wait."""
    code = without_line_directives(cuda)
    counts: dict[str, object] = {name: len(pattern.findall(code)) if literal in code else 0
                                 for name, (literal, pattern) in _COUNTED.items()}
    counts["cp_async_wait"] = [int(n) for n in _WAIT.findall(code)] \
        if "cp_async_wait<" in code else []
    return counts


@dataclass(frozen=True)
class Mapped:
    """One CUDA line and where ``#line`` says it came from."""

    text: str
    line: int | None  # the kernel line, when the innermost region is the kernel's
    template: str | None  # TileLang's own file, when the innermost region is one of those
    within: int | None  # the kernel line of the innermost enclosing kernel region


def source_map(cuda: str, source_name: str) -> list[Mapped]:
    """Each CUDA line (``#line`` directives left out) with the region it belongs to.

    TileLang writes ``#line N "file"`` before each statement it lowered: the next line
    and, when that line opens a block (a ``for``, after any ``#pragma``), the block
    through its closing brace. Nested directives take over inside and hand back when
    their region ends. Tile operations (``T.gemm``, TMA copies) expand from TileLang's
    own templates, whose directives name TileLang's files; lines outside every region
    (a ``cp_async_commit`` the pipeliner inserted) come from no line at all.
    """
    mapped: list[Mapped] = []
    start: tuple[int | None, str | None] | None = None  # a directive awaiting its line
    blocks: list[list[Any]] = []  # [kernel line, template, open braces] per region

    def within() -> int | None:
        return next((b[0] for b in reversed(blocks) if b[0] is not None), None)

    for text in cuda.splitlines():
        found = _LINE.match(text)
        if found:
            ours = found["path"] == source_name
            start = (int(found["number"]) if ours else None, None if ours else found["path"])
            continue
        balance = text.count("{") - text.count("}")
        if start is not None:
            line, template = start
            if not text.lstrip().startswith("#pragma"):
                start = None
                if balance > 0:
                    blocks.append([line, template, balance])
        elif blocks:
            line, template = blocks[-1][0], blocks[-1][1]
            blocks[-1][2] += balance
            if blocks[-1][2] <= 0:
                blocks.pop()
        else:
            line, template = None, None
        # Pushing or popping a region of TileLang's own (line None) leaves within() as it
        # was, so asking only now, for lines outside the kernel's regions, is the same.
        mapped.append(Mapped(text, line, template, line if line is not None else within()))
    return mapped


# How the code generator prints each synchronisation the hazard check numbers
# (worker/hazards/verdict.py ``sites``): ``__syncthreads``, a named barrier, a cluster
# sync; ``cp_async_wait<N>``; an mbarrier's ``.wait(parity)``.
PRINTED_SYNC = {"sync": re.compile(r"__syncthreads\(\)|tl::__sync_thread_partial\(|"
                                   r"tl::cluster_sync\(\)"),
                "wait": re.compile(r"cp_async_wait<\d+>|cp\.async\.wait_group"),
                "bwait": re.compile(r"\.wait\(")}
