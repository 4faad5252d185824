"""Edits of a variant's CUDA before it is compiled for a run under compute-sanitizer, pure.

:func:`only_blocks` keeps the blocks a run checks: every other block returns before its
first statement, so the tool reports each hazard of the blocks kept once, not once per
block of the grid (racecheck's reports grow with the blocks, and so does its time). All
threads of a block return together, before any barrier, so the blocks kept run as they
would in the whole grid. A kernel launched in clusters is left whole: its blocks wait on
each other.

:func:`delete_wait` deletes one ``cp_async_wait``: a race made on purpose, which the tool
must observe (the test of the check itself; a record says which edits its run made).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

# A kernel's definition: ``extern "C" __global__ void __launch_bounds__(128, 1) k(...) {``.
_DEFINITION = re.compile(r'^(?:extern "C" )?__global__ [^;]*\{\s*$')
_WAIT = re.compile(r"^\s*tl::cp_async_wait<\d+>\(\);\s*$")

LINEAR = "blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z)"
COUNT = "gridDim.x * gridDim.y * gridDim.z"


class EditError(ValueError):
    """The code does not have what an edit changes."""


def _guard(blocks: Sequence[int]) -> str:
    kept = " && ".join(f"tl_hw_block != {COUNT} - 1u" if b == -1 else f"tl_hw_block != {b}u"
                       for b in blocks)
    return (f"  {{ const unsigned tl_hw_block = {LINEAR};\n"
            f"    if ({kept}) return; }}  // tlstages hardware: only the blocks checked\n")


def clustered(code: str) -> bool:
    """Whether the kernel is launched in clusters (its blocks then wait on each other)."""
    return "__cluster_dims__" in code or "cluster_sync" in code or "barrier.cluster" in code


def only_blocks(code: str, blocks: Sequence[int]) -> str:
    """``code`` with every kernel's blocks other than ``blocks`` (linear indices, -1 the
    last) returning at once; unchanged for a clustered kernel (see :func:`clustered`)."""
    if clustered(code):
        return code
    lines = code.splitlines(keepends=True)
    found = [i for i, line in enumerate(lines) if _DEFINITION.match(line)]
    if not found:
        raise EditError("no __global__ kernel definition in the code")
    for index in reversed(found):
        lines.insert(index + 1, _guard(blocks))
    return "".join(lines)


def delete_wait(code: str, occurrence: int) -> str:
    """``code`` without its ``occurrence``-th ``tl::cp_async_wait<N>();`` (from 1)."""
    lines = code.splitlines(keepends=True)
    waits = [i for i, line in enumerate(lines) if _WAIT.match(line)]
    if not 1 <= occurrence <= len(waits):
        raise EditError(f"the code has {len(waits)} cp_async_wait call(s); "
                        f"there is no #{occurrence}")
    index = waits[occurrence - 1]
    lines[index] = f"  // tlstages hardware: deleted {lines[index].strip()}\n"
    return "".join(lines)


def parse_edit(text: str) -> tuple[str, int]:
    """``delete-wait:2`` -> (``delete-wait``, 2): an edit as the command line names it."""
    name, _, number = text.partition(":")
    if name != "delete-wait" or not number.isdigit() or int(number) < 1:
        raise EditError(f"{text!r}: the one edit is delete-wait:N (N from 1)")
    return name, int(number)


def apply(code: str, blocks: Sequence[int] | None, edits: Sequence[str]) -> str:
    """Each of ``edits`` (:func:`parse_edit`), then :func:`only_blocks` where given."""
    for edit in edits:
        _, number = parse_edit(edit)
        code = delete_wait(code, number)
    return only_blocks(code, blocks) if blocks else code
