"""Generated CUDA as text: normalised once at the source, then counted and shown.

Normalising removes what depends on the machine: ``#line`` directives name absolute
paths (the kernel's file made absolute against the worker's folder, TileLang's own
site-packages files). Line numbers stay relative to the kernel's own first line.
"""

from __future__ import annotations

import re

_LINE = re.compile(r'^(\s*#line\s+\d+\s+)"([^"]*)"', re.MULTILINE)

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
}
_WAIT = re.compile(r"\btl::cp_async_wait<(\d+)>\(\)")


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
    text = _LINE.sub(lambda m: f'{m.group(1)}"{_portable(m.group(2), source_name)}"', text)
    return text if text.endswith("\n") else text + "\n"


def without_line_directives(cuda: str) -> str:
    """The CUDA as a reader wants it in a listing or diff."""
    return "".join(line for line in cuda.splitlines(True) if not line.lstrip().startswith("#line"))


def code_lines(cuda: str) -> int:
    """Lines of CUDA, ``#line`` directives not counted."""
    return sum(1 for line in cuda.splitlines() if not line.lstrip().startswith("#line"))


def sync_counts(cuda: str) -> dict[str, object]:
    """Counts of each synchronisation/async/MMA spelling, and the N of each cp_async_wait."""
    code = without_line_directives(cuda)
    counts: dict[str, object] = {name: len(re.findall(p, code)) for name, p in COUNTED.items()}
    counts["cp_async_wait"] = [int(n) for n in _WAIT.findall(code)]
    return counts

