"""SASS by kernel line: the compiler's line table, read off ``nvdisasm -gi``.

The cubin the ``resources`` part compiles carries a line table (``-lineinfo``) that maps
each instruction to a source line, and the chain of inlined calls it came through. The
generated CUDA carries TileLang's ``#line`` directives, so that table names the kernel's
own file and line for the statements TileLang lowered, and TileLang's headers
(``gemm_sm80.h``) for the templates those statements call: the frame such a header is
inlined at is the kernel line of the call site. An instruction is given to the outermost
frame of its chain that is in the kernel's own file, and to the first template frame
called from there; one whose chain never reaches the kernel's file (code outside every
``#line`` region, or a region TileLang's own Python macro generators claim) is counted as
unattributed, never guessed at. Per class, the lines' counts plus the unattributed equal
the kernel's whole count (:func:`class_counts` on the ``cuobjdump -sass`` listing; a test
holds the two tools equal).

Plain text in, plain data out (tested on recorded output, ``tests/fixtures/nvcc``); the
worker runs ``nvdisasm``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

# The classes a reader of a pipeline asks about, in the order the page shows them.
CLASSES = ("mma", "global", "shared", "async", "sync", "spill")
# How the page and the CLI name them.
CLASS_WORDS = {"mma": "tensor-core MMA", "global": "global loads/stores",
               "shared": "shared loads/stores", "async": "async copies and TMA",
               "sync": "barriers and syncs", "spill": "spill loads/stores (local memory)"}

_GLOBAL = frozenset({"LDG", "STG", "ATOMG", "RED", "REDG"})
_SHARED = frozenset({"LDS", "STS", "LDSM", "STSM", "ATOMS"})
_SYNC = frozenset({"BAR", "SYNCS", "DEPBAR", "LDGDEPBAR", "MEMBAR", "ARRIVES", "WARPSYNC",
                   "FENCE", "ERRBAR", "CCTL"})
_SPILL = frozenset({"LDL", "STL"})


def classify(op: str) -> str | None:
    """The class of a SASS opcode (before its first dot), None for the rest."""
    if op.endswith("MMA"):  # HMMA, HGMMA (Hopper), UTCHMMA (Blackwell), IMMA...
        return "mma"
    if op == "LDGSTS" or op.startswith(("UTMA", "UBLK")):  # cp.async, TMA
        return "async"
    if op in _GLOBAL:
        return "global"
    if op in _SHARED:
        return "shared"
    if op in _SYNC:
        return "sync"
    if op in _SPILL:
        return "spill"
    return None


def _zero() -> dict[str, int]:
    return {**{name: 0 for name in CLASSES}, "total": 0}


def _add(counts: dict[str, int], op: str) -> None:
    kind = classify(op)
    if kind is not None:
        counts[kind] += 1
    counts["total"] += 1


# An instruction line, of ``cuobjdump -sass`` or ``nvdisasm``: ``/*0ab0*/  @!P0 HMMA...``.
_INSTRUCTION = re.compile(r"^\s*/\*[0-9a-f]+\*/\s+(?:@!?U?P[0-9T]\s+)?(?P<op>[A-Z][A-Z0-9_]*)")
_SECTION = re.compile(r"^//-+ \.text\.(?P<name>\S+)\s+-+")
# One frame of the line table: ``//## File "path", line 12`` and, for an inlined one,
# `` inlined at "path", line 30``. A block of them precedes the instructions it covers,
# innermost first; its last frame is the function's own.
_FRAME = re.compile(r'^\s*//## File "(?P<path>[^"]*)", line (?P<line>\d+)')


def class_counts(sass: str, kernel: str | None = None) -> dict[str, int]:
    """Per-class counts and ``total`` of a listing (``cuobjdump -sass``): the kernel's
    whole count, which its lines' and the unattributed add up to."""
    counts = _zero()
    inside = kernel is None
    for line in sass.splitlines():
        if kernel is not None and "Function : " in line:
            inside = line.split("Function : ", 1)[1].strip() == kernel
        match = _INSTRUCTION.match(line)
        if match and inside:
            _add(counts, match["op"])
    return counts


def _is_kernel(path: str, number: int, root: str, kernel_files: frozenset[str],
               length: int | None) -> bool:
    relative = path[len(root):].lstrip("/") if root and path.startswith(root) else path
    # A row past the file's end (seen inside TileLang's macro-generated regions) is no
    # line of the kernel.
    return relative in kernel_files and (length is None or 0 < number <= length)


def _template(path: str) -> str:
    return path.rsplit("/", 1)[-1]


def by_line(listing: str, kernel: str, kernel_files: Iterable[str],
            root: str = "", length: int | None = None) -> dict[str, Any]:
    """The kernel's instructions by kernel line, from ``nvdisasm -gi`` (``listing``).

    ``kernel``: the entry function's name (the cubin may hold several); ``kernel_files``:
    the kernel's own file names as its ``#line`` directives spell them (relative to
    ``root``, the folder nvcc ran in), ``length`` the kernel file's lines. Returns
    ``{"lines": {line: counts}, "templates": {line: {template: counts}}, "unattributed":
    counts, "unattributed_files": {file: counts}}`` (the file the table names for the
    unattributed), each ``counts`` by class with ``total``; lines are JSON keys
    (strings), the kernel's own numbers.
    """
    files = frozenset(kernel_files)
    lines: dict[str, dict[str, int]] = {}
    templates: dict[str, dict[str, dict[str, int]]] = {}
    unattributed = _zero()
    loose: dict[str, dict[str, int]] = {}  # the unattributed, by the file the table names
    inside, found = False, False
    frames: list[tuple[str, int]] = []  # the block being read, innermost first
    # (kernel line, template) in force; for no kernel line, (None, the file the table names)
    at: tuple[str | None, str | None] = (None, None)
    reading_block = False
    for text in listing.splitlines():
        section = _SECTION.match(text)
        if section:
            inside = section["name"] == kernel
            found = found or inside
            at, frames, reading_block = (None, None), [], False
            continue
        if not inside:
            continue
        frame = _FRAME.match(text)
        if frame:
            if not reading_block:
                frames, reading_block = [], True
            frames.append((frame["path"], int(frame["line"])))
            continue
        match = _INSTRUCTION.match(text)
        if match is None:
            continue
        if reading_block:
            at, reading_block = _attribute(frames, root, files, length), False
        line, template = at
        if line is None:
            _add(unattributed, match["op"])
            _add(loose.setdefault(template or "no line", _zero()), match["op"])
            continue
        _add(lines.setdefault(line, _zero()), match["op"])
        if template is not None:
            _add(templates.setdefault(line, {}).setdefault(template, _zero()), match["op"])
    if not found:
        raise ValueError(f"nvdisasm listed no function {kernel!r}")
    order = sorted(lines, key=int)
    return {"lines": {k: lines[k] for k in order},
            "templates": {k: dict(sorted(templates[k].items())) for k in order
                          if k in templates},
            "unattributed": unattributed,
            "unattributed_files": dict(sorted(loose.items()))}


def _attribute(frames: list[tuple[str, int]], root: str, files: frozenset[str],
               length: int | None) -> tuple[str | None, str | None]:
    """(kernel line, template) of one block of frames, innermost first: the outermost
    frame in the kernel's file, and the frame it inlined (a TileLang header)."""
    for index in range(len(frames) - 1, -1, -1):
        path, number = frames[index]
        if _is_kernel(path, number, root, files, length):
            inner = frames[index - 1] if index > 0 else None
            template = None if inner is None \
                or _is_kernel(*inner, root, files, length) else _template(inner[0])
            return str(number), template
    # No kernel line: the outermost file, named as a reader knows it (the generated CUDA
    # nvcc compiled, or TileLang's file).
    if not frames:
        return None, None
    outer = frames[-1][0]
    return None, "generated CUDA" if outer.endswith(".cu") else _template(outer)


def summed(found: dict[str, Any]) -> dict[str, int]:
    """The lines' counts plus the unattributed, per class: the kernel's whole count."""
    total = dict(found["unattributed"])
    for counts in found["lines"].values():
        for name, n in counts.items():
            total[name] = total.get(name, 0) + n
    return total


def differing(per_variant: list[dict[str, Any] | None]) -> list[str]:
    """Kernel lines (keys) whose counts differ between the variants, then the rest with
    any counted class, in line order within each group."""
    keys = sorted({k for f in per_variant if f for k in f["lines"]}, key=int)

    def counts(found: dict[str, Any] | None, key: str) -> dict[str, int]:
        return (found or {}).get("lines", {}).get(key) or _zero()

    changed = [k for k in keys if len({tuple(sorted(counts(f, k).items()))
                                       for f in per_variant if f}) > 1]
    same = [k for k in keys if k not in changed
            and any(counts(f, k)[c] for f in per_variant if f for c in CLASSES)]
    return changed + same


def gained(before: dict[str, Any], after: dict[str, Any]) -> list[tuple[int, dict[str, int]]]:
    """Kernel lines with more instructions of a class in ``after`` than in ``before``:
    ``(line, {class: gain})``, gains of the counted classes and ``total``."""
    out = []
    for key in sorted(set(before["lines"]) | set(after["lines"]), key=int):
        old = before["lines"].get(key) or _zero()
        new = after["lines"].get(key) or _zero()
        gain = {c: new[c] - old[c] for c in (*CLASSES, "total") if new[c] > old[c]}
        if gain:
            out.append((int(key), gain))
    return out
