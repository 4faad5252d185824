"""What a variant costs the hardware, read off NVIDIA's compiler output.

Plain text in, plain data out: ptxas's ``--verbose`` report (registers, spills, stack
frame, static shared memory, barriers), SASS listings in ``cuobjdump -sass``'s text
(made from ``nvdisasm``'s by :mod:`.sass_listing`: a static count of
the instruction families a pipeline chapter talks about, the ``setmaxnreg`` budgets), and
the occupancy those allow (:mod:`.occupancy`). The worker runs the compiler; everything
that reads what it printed is here, so that it is tested on recorded output.

The readers (:func:`parse_ptxas`, :func:`sass_counts`, :func:`register_budgets`,
:func:`strip_encodings`) are tested on recorded output (``tests/fixtures/nvcc``, nvcc
13.5.37). The budgets the page shows come from the CUDA (:func:`cuda_register_budgets`),
so they need no disassembler; a test holds the two equal. Record the fixtures again when the
pinned release changes, and check that the seed GEMM's numbers in
``tests/test_resources.py`` still hold (they did from 13.0 to 13.5 for registers, spills
and shared memory; the SASS changed on sm_90a).
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from .occupancy import limits_for, occupancy

# The instruction families the part counts, by the SASS opcode (before its first dot):
# tensor-core multiplies (Ampere, Hopper warp-group, Blackwell tensor-memory), async
# copies and TMA loads, shared-to-register matrix loads, and the waits and barriers.
FAMILIES = ("HMMA", "HGMMA", "UTCHMMA", "LDGSTS", "UTMALDG", "LDSM", "DEPBAR", "SYNCS", "BAR")

_ENTRY = re.compile(r"Compiling entry function '(?P<name>[^']+)' for '(?P<arch>[^']+)'")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers")
_BARRIERS = re.compile(r"used (\d+) barriers")
_SMEM = re.compile(r"(\d+) bytes smem")
# An instruction line of a listing: ``/*0ab0*/  @!P0 HMMA.16816.F32 R4, ...``.
_INSTRUCTION = re.compile(r"^\s*/\*[0-9a-f]+\*/\s+(?:@!?U?P[0-9T]\s+)?(?P<op>[A-Z][A-Z0-9_]*)",
                          re.M)
_MAXNREG = re.compile(r"\bUSETMAXREG\.(?P<kind>\w+)[.\w]*\s+(?:U?P\w+,\s*)?(?P<n>0x[0-9a-f]+|\d+)")


class ReportError(ValueError):
    """Compiler output that does not say what the part needs."""


def parse_ptxas(report: str) -> dict[str, int]:
    """The kernel's figures from ptxas's ``--verbose`` report (TileLang's device code has
    one entry function; a report naming several is refused rather than guessed at)."""
    entries = list(_ENTRY.finditer(report))
    if len(entries) > 1:
        names = ", ".join(entry["name"] for entry in entries)
        raise ReportError(f"its CUDA holds {len(entries)} kernels ({names}): the part reads "
                          "the figures of one kernel and does not pick one of several")
    if not entries:
        raise ReportError("ptxas reported no entry function")
    body = report[entries[0].end():]
    frame, used = _FRAME.search(body), _USED.search(body)
    if frame is None or used is None:
        raise ReportError("ptxas's report has no register or stack-frame line")
    barriers, smem = _BARRIERS.search(body), _SMEM.search(body)
    return {"registers": int(used[1]), "stack": int(frame[1]),
            "spill_stores": int(frame[2]), "spill_loads": int(frame[3]),
            "static_shared": int(smem[1]) if smem else 0,
            "barriers": int(barriers[1]) if barriers else 0}


def sass_counts(sass: str) -> dict[str, int]:
    """Static counts of :data:`FAMILIES` (every family, zero included) and ``total``."""
    ops = Counter(match["op"] for match in _INSTRUCTION.finditer(sass))
    counts = {family: ops.get(family, 0) for family in FAMILIES}
    counts["total"] = sum(ops.values())
    return counts


def register_budgets(sass: str) -> dict[str, int]:
    """The ``setmaxnreg`` budgets a warp-specialised kernel sets (``USETMAXREG``):
    ``{"alloc": 240, "dealloc": 24}`` on Hopper, empty where there are none."""
    found: dict[str, int] = {}
    for match in _MAXNREG.finditer(sass):
        kind = "alloc" if "ALLOC" in match["kind"] and "DEALLOC" not in match["kind"] \
            else "dealloc"
        found.setdefault(kind, int(match["n"], 0))
    return found


_WARPGROUP_REGS = re.compile(r"\btl::warpgroup_reg_(?P<kind>alloc|dealloc)<(?P<n>\d+)>")


def cuda_register_budgets(cuda: str) -> dict[str, int]:
    """The same budgets as TileLang's CUDA asks for them (``tl::warpgroup_reg_alloc<240>``):
    what the part shows, so that it does not depend on a disassembler being installed."""
    found: dict[str, int] = {}
    for match in _WARPGROUP_REGS.finditer(cuda):
        found.setdefault(match["kind"], int(match["n"]))
    return found


def strip_encodings(sass: str) -> str:
    """The listing without the hexadecimal encodings (half of every line), as shown."""
    lines = []
    for line in sass.splitlines():
        text = re.sub(r"\s*/\* 0x[0-9a-f]{16} \*/\s*$", "", line)
        if text.strip() or not line.strip():
            lines.append(text.rstrip())
    return "\n".join(lines).strip("\n") + "\n"


def resources(report: str, sass: str | None, arch: str, threads: int,
              dynamic_shared: int, cuda: str = "", tensor_memory: int = 0) -> dict[str, Any]:
    """The ``resources`` fact of one variant (see :mod:`..results.fact_table`); ``sass`` None
    where no ``nvdisasm`` was found (no counts then); ``tensor_memory``: the columns its
    tensor-memory buffers take (a limit of their own on Blackwell)."""
    found: dict[str, Any] = dict(parse_ptxas(report))
    found["register_budgets"] = cuda_register_budgets(cuda)
    found["dynamic_shared"] = dynamic_shared
    limits = limits_for(arch)
    found["occupancy"] = None if limits is None else occupancy(
        limits, threads, found["registers"], found["static_shared"], dynamic_shared,
        tensor_memory)
    found["sass"] = sass_counts(sass) if sass is not None else None
    return found


def spill_sentence(found: dict[str, Any]) -> str | None:
    """Words for what a reader must not miss: spills or a stack frame."""
    spills = found.get("spill_stores", 0) + found.get("spill_loads", 0)
    if spills:
        return (f"spills {found['spill_stores']} bytes to local memory and loads "
                f"{found['spill_loads']} back: the registers did not hold the tile")
    if found.get("stack"):
        return f"has a {found['stack']}-byte stack frame in local memory"
    return None
