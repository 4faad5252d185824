"""SASS by kernel line: the compiler's line table, read off ``nvdisasm -gi``.

The cubin the ``resources`` part compiles carries a line table (``-lineinfo``) that maps
each instruction to a line of the CUDA compiled, and the chain of inlined calls it came
through (a TileLang header such as ``copy.h``, inlined at the CUDA line that calls it).
The CUDA is compiled with its ``#line`` directives left empty (:func:`compiled_text`), so
the table names the CUDA's own lines, and each of those has the kernel line the page's
listing links it to (:func:`cuda_places`): the kernel statement whose ``#line`` region
it is in or, marked inferred, the one tile operation that explains a region of
TileLang's own files (``T.gemm``'s MMA macro). An instruction on a CUDA line with no
kernel line (what the pipeliner inserted outside every region) is counted as
unattributed, never guessed at. Per class, the lines' counts plus the unattributed equal
the kernel's whole count (:func:`class_counts` on the listing the page shows, which
:mod:`.sass_listing` makes from the same disassembly and a test holds equal to
``cuobjdump -sass``'s).

Plain text in, plain data out (tested on recorded output, ``tests/fixtures/nvcc``); the
worker runs ``nvdisasm``.
"""

from __future__ import annotations

import re
from typing import Any

from ..results.cuda import source_map
from ..results.line_links import attribute
from .sass_listing import functions

# The classes a reader of a pipeline asks about, in the order the page shows them.
CLASSES = ("mma", "global", "shared", "async", "sync", "spill")

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
# One frame of the line table: ``//## File "path", line 12`` and, for an inlined one,
# `` inlined at "path", line 30``. A block of them precedes the instructions it covers,
# innermost first; its last frame is the function's own.
_FRAME = re.compile(r'^\s*//## File "(?P<path>[^"]*)", line (?P<line>\d+)')


def class_counts(sass: str, kernel: str | None = None) -> dict[str, int]:
    """Per-class counts and ``total`` of a listing (``cuobjdump -sass``'s text): the kernel's
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


# (kernel line or None, inferred, the TileLang file the listing infers it through) of one
# line of the CUDA compiled.
Place = tuple[int | None, bool, str | None]

_DIRECTIVE = re.compile(r"^\s*#line\s")


def compiled_text(cuda: str) -> str:
    """The CUDA as the part compiles it: each ``#line`` directive an empty line.

    The directives say only where a line came from: the SASS is the same with or
    without them (``tests/test_resources.py`` holds it so), but with them the line table
    numbers the lines after a directive on from it (``#line 17`` before a loop makes the
    loop's next statement "line 18"), which no reader can tell from the real line 18.
    Empty, the table gives the CUDA's own line numbers, the same as the page's listing
    with its directives, which :func:`cuda_places` maps to kernel lines exactly."""
    return "".join("\n" if _DIRECTIVE.match(line) else line
                   for line in cuda.splitlines(True))


def cuda_places(cuda: str, source: str, source_name: str) -> dict[int, Place]:
    """Each line of the CUDA (numbered with its directives, as :func:`compiled_text`
    keeps them) and the kernel line it comes from: the listing's line links
    (:func:`..results.line_links.attribute`: the kernel region TileLang's ``#line``
    directives open or, marked inferred, the one tile operation that explains a region
    of TileLang's own files, such as ``T.gemm``'s MMA macro)."""
    links = attribute(source_map(cuda, source_name), source)
    places: dict[int, Place] = {}
    index = 0  # among the lines that are no directive, as source_map counts them
    for physical, text in enumerate(cuda.splitlines(), start=1):
        if _DIRECTIVE.match(text):
            continue
        link = links[index]
        places[physical] = (link.line, link.inferred, link.template)
        index += 1
    return places


def _relative(path: str, root: str) -> str:
    return path[len(root):].lstrip("/") if root and path.startswith(root + "/") else path


def by_line(listing: str, kernel: str, places: dict[int, Place], root: str = "",
            unit: str = "kernel.cu") -> dict[str, Any]:
    """The kernel's instructions by kernel line, from ``nvdisasm -gi`` (``listing``).

    ``kernel``: the entry function's name (the cubin may hold several); ``places``: what
    :func:`cuda_places` makes of the CUDA compiled, ``unit`` (in ``root``, the folder nvcc
    ran in). Returns ``{"lines": {line: counts}, "inferred": {line:
    counts}, "templates": {line: {template: counts}}, "unattributed": counts,
    "unattributed_files": {file: counts}}``, each ``counts`` by class with ``total``:
    ``inferred``, the part of a line's counts given to it through a TileLang template's
    region, as the listing infers it; ``templates``, through which header (inlined) or
    TileLang file a line's instructions came; ``unattributed_files``, where the table
    puts those no kernel line takes. Lines are JSON keys (strings), the kernel's own numbers.
    """
    lines: dict[str, dict[str, int]] = {}
    inferred: dict[str, dict[str, int]] = {}
    templates: dict[str, dict[str, dict[str, int]]] = {}
    unattributed = _zero()
    loose: dict[str, dict[str, int]] = {}
    code = functions(listing).get(kernel)
    if code is None:
        raise ValueError(f"nvdisasm listed no function {kernel!r}")
    frames: list[tuple[str, int]] = []  # the block being read, innermost first
    at: tuple[str | None, bool, str] = (None, False, "no line")  # in force
    reading_block = False
    for text in code:
        frame = _FRAME.match(text)
        if frame:
            if not reading_block:
                frames, reading_block = [], True
            frames.append((_relative(frame["path"], root), int(frame["line"])))
            continue
        match = _INSTRUCTION.match(text)
        if match is None:
            continue
        if reading_block:
            at, reading_block = _attribute(frames, places, unit), False
        line, guessed, template = at
        if line is None:
            _add(unattributed, match["op"])
            _add(loose.setdefault(template, _zero()), match["op"])
            continue
        _add(lines.setdefault(line, _zero()), match["op"])
        if guessed:
            _add(inferred.setdefault(line, _zero()), match["op"])
        if template:
            _add(templates.setdefault(line, {}).setdefault(template, _zero()), match["op"])
    order = sorted(lines, key=int)
    return {"lines": {k: lines[k] for k in order},
            "inferred": {k: inferred[k] for k in order if k in inferred},
            "templates": {k: dict(sorted(templates[k].items())) for k in order
                          if k in templates},
            "unattributed": unattributed,
            "unattributed_files": dict(sorted(loose.items()))}


def _name(path: str) -> str:
    return path.rsplit("/", 1)[-1]


def _attribute(frames: list[tuple[str, int]], places: dict[int, Place],
               unit: str) -> tuple[str | None, bool, str]:
    """(kernel line, inferred, template) of one block of frames, innermost first: the
    outermost frame is the line of the CUDA compiled, the one inside it the header the
    instruction was inlined from."""
    if not frames or frames[-1][0] != unit:
        return None, False, _name(frames[-1][0]) if frames else "no line"
    line, inferred, through = places.get(frames[-1][1], (None, False, None))
    inner = frames[-2][0] if len(frames) > 1 else None
    template = _name(inner) if inner else _name(through) if through else ""
    if line is None:
        return None, False, template or "generated CUDA"
    return str(line), inferred, template


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


# How a tooltip or a table cell names the classes.
SHORT = {"mma": "MMA", "global": "global", "shared": "shared", "async": "async/TMA",
         "sync": "sync", "spill": "spill"}


def in_words(counts: dict[str, int]) -> str:
    """``678 SASS instructions (MMA 512, shared 128)``: the counted classes not zero."""
    said = [f"{SHORT[c]} {counts[c]:,}" for c in CLASSES if counts.get(c)]
    whole = f"{counts['total']:,} SASS instruction{'' if counts['total'] == 1 else 's'}"
    return f"{whole} ({', '.join(said)})" if said else whole


def sass_words(found: dict[str, Any] | None) -> dict[int, str]:
    """Each kernel line's SASS counts in words (the listing's tooltips), none without."""
    if not found:
        return {}
    return {int(line): in_words(counts) for line, counts in found["lines"].items()}
