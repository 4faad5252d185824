"""The kernels of a variant's code, told apart, so that a page can say which one a fact is
about.

A ``prim_func`` with two ``T.Kernel`` blocks (a split-KV decode and its combine kernel)
becomes one CUDA file holding two ``__global__`` functions, ``main_kernel`` and
``main_kernel_1``. The counts of :func:`.cuda.sync_counts` and the line count run over
the whole file; the threads, the shared-memory sizes and the hazard check are read off
the first device function the worker finds (``worker/ir/facts.py`` ``device_function``),
which is the first kernel the code defines. Read here, from the code every result and
snapshot keeps, so no recorded fact changes: each kernel's name, its threads (its
``__launch_bounds__``), the lines of the listing it spans (numbered as the page numbers
them: ``#line`` directives left out, from 1), the kernel lines its ``#line`` directives
name, and its own counts.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from . import line_links
from .cuda import (
    PRINTED_SYNC,  # how the code prints what the check numbers
    source_map,
    sync_counts,
)

# ``extern "C" __global__ void __launch_bounds__(128, 1) main_kernel(...) {`` as TileLang
# writes a definition, for CUDA and HIP alike (a declaration ends in ``;``).
_DEFINITION = re.compile(r'^extern\s+"C"\s+__global__\s+void\s+'
                         r"(?:__launch_bounds__\((?P<threads>\d+)[^)]*\)\s+)?"
                         r"(?P<name>\w+)\s*\(.*\{\s*$")


@dataclass(frozen=True)
class Kernel:
    """One ``__global__`` function of a variant's code."""

    name: str
    threads: int | None  # its __launch_bounds__; None where the code gives none
    first: int  # the listing line of its definition (1-based, no #line directives)
    last: int  # the listing line of its closing brace
    code: str  # its lines, as listed
    lines: frozenset[int]  # the kernel (Python) lines its #line directives name

    def holds(self, listing_line: int) -> bool:
        """Whether a line of the listing is this kernel's."""
        return self.first <= listing_line <= self.last

    @property
    def sync(self) -> dict[str, object]:
        """Its own counts, as :func:`.cuda.sync_counts` counts the whole code."""
        return sync_counts(self.code)

    @property
    def length(self) -> int:
        return self.last - self.first + 1


def kernels(cuda: str, source_name: str = "") -> list[Kernel]:
    """Every kernel the code defines, in order (empty where none is found: then the
    page says nothing of kernels). ``source_name``: the kernel file's name in the
    ``#line`` directives, for :attr:`Kernel.lines`."""
    mapped = source_map(cuda, source_name)
    found: list[Kernel] = []
    start: tuple[int, str, int | None] | None = None
    depth = 0
    for number, item in enumerate(mapped, 1):
        if start is None:
            match = _DEFINITION.match(item.text)
            if match is None:
                continue
            threads = match["threads"]
            start = (number, match["name"], int(threads) if threads else None)
            depth = 0
        depth += item.text.count("{") - item.text.count("}")
        if depth <= 0 and start is not None:
            first, name, threads_of = start
            body = mapped[first - 1:number]
            found.append(Kernel(name, threads_of, first, number,
                                "".join(m.text + "\n" for m in body),
                                frozenset(m.line for m in body if m.line is not None)))
            start = None
    return found


def kernel_of(found: list[Kernel], listing_line: int) -> Kernel | None:
    """The kernel a line of the listing is in (None: outside every kernel)."""
    return next((k for k in found if k.holds(listing_line)), None)


def kernel_at(found: list[Kernel], line: int | None) -> Kernel | None:
    """The kernel whose code a kernel (Python) line became; the first where the code
    does not say (a loop the ``#line`` directives name in no kernel)."""
    if not found:
        return None
    return next((k for k in found if line is not None and line in k.lines), found[0])


def shared_of(kernel: Kernel, buffers: Sequence[Mapping[str, Any]]) -> tuple[int, list[str]]:
    """Bytes and names of the shared buffers (a result's ``shared``) that a kernel's code
    names: what it declares, before TileLang merges them into one allocation."""
    names = [str(b.get("name")) for b in buffers
             if re.search(rf"\b{re.escape(str(b.get('name')))}\b", kernel.code)]
    total = sum(int(b.get("bytes") or 0) for b in buffers if str(b.get("name")) in names)
    return total, names


def placed_in_first(entry: dict[str, Any], cuda: str, source: str, source_name: str
                    ) -> dict[str, Any]:
    """An unneeded synchronisation (a result's ``unneeded_sync`` entry) with its CUDA and
    kernel lines, where the worker could not say them because the code holds several
    kernels: the check numbers the statements of the first kernel only, so its n-th is
    the n-th printing line of the first kernel's code (where it prints as many). The
    entry as it was otherwise; the recorded fact is never changed."""
    if entry.get("cuda_lines") or entry.get("of") is None:
        return entry
    found = kernels(cuda, source_name)
    pattern = PRINTED_SYNC.get(str(entry.get("op")))
    if len(found) < 2 or pattern is None:
        return entry
    mapped = source_map(cuda, source_name)
    first = found[0]
    printing = [n for n in range(first.first, first.last + 1)
                if pattern.search(mapped[n - 1].text)]
    site = entry.get("site")
    if len(printing) != entry["of"] or not isinstance(site, int) \
            or not 0 <= site < len(printing):
        return entry
    at = printing[site]
    link = line_links.attribute(mapped, source)[at - 1] if source_name else None
    return {**entry, "cuda_lines": [at], "line": link.line if link else None}


__all__ = ["Kernel", "kernel_at", "kernel_of", "kernels", "placed_in_first", "shared_of"]
