"""The SASS listing a page shows, read off the ``nvdisasm -gi`` output the part already
reads its line table from.

The listing is ``cuobjdump -sass``'s, without its encodings (what the part showed since
it began), and it is made from the same disassembly as the SASS by kernel line: each
instruction line of ``nvdisasm`` is the same text as ``cuobjdump``'s but for branch
targets, which ``nvdisasm`` names by label (`` BRA `(.L_x_3) ``, a call of the
compiler's fp32 division subroutine `` CALL.REL.NOINC `($__internal_0_$__cuda_...) ``,
its return to the kernel `` RET.REL.NODEC R2 `(main_kernel) ``) and ``cuobjdump`` by
address (``BRA 0x250``, ``CALL.REL.NOINC 0x60f0``, ``RET.REL.NODEC R2 0x0``), and for
the annotations ``nvdisasm`` adds (a spill's ``(*"SpillRefill"*)``), which ``cuobjdump``
does not print. A label names the instruction
that follows it, so each is given its address back; the annotations are left out. What
``nvdisasm`` does not print is ``cuobjdump``'s ``.headerflags`` line (the ELF header's
flags), left out too. One disassembler run per compile instead of two: each costs
0.3-0.5 s of CPU, most of it the tool's start, whatever the cubin.
``tests/test_sass_listing.py`` holds the two tools' listings equal on recorded output and,
where both are installed, on cubins compiled for each target the part knows; it held
on 166 variants of 61 kernels from TileLang's examples and four other repositories
(``sm_80``, ``sm_90a``, ``sm_100a``), once the subroutines' labels were read too.

Plain text in, plain text out.
"""

from __future__ import annotations

import functools
import re

# nvdisasm's header of a function's code: ``//----- .text.main_kernel -----``.
_SECTION = re.compile(r"^//-+ \.text\.(?P<name>\S+)\s+-+\s*$")
# The end of the code sections (the symbol table follows).
_END = re.compile(r"^//-+ (?!\.text\.)")
# Every label: branch targets (``.L_x_3``), the compiler's own subroutines
# (``$__internal_0_$__cuda_sm3x_div_rn_noftz_f32_slowpath``, an fp32 division's slow
# path, which ``CALL.REL.NOINC`` calls) and the kernel itself (a subroutine's ``RET``
# names it).
_LABEL = re.compile(r"^(?P<label>\S+):\s*$")
_INSTRUCTION = re.compile(r"^\s*/\*(?P<address>[0-9a-f]+)\*/\s")
_TARGET = re.compile(r"`\((?P<label>[^()`\s]+)\)")
# nvdisasm's annotations (``STL [R1+0xa0], R19    (*"SpillRefill"*);``), which cuobjdump
# does not print; padded to a column set by the longest instruction of the whole cubin,
# so a kernel compiled in a group would not be listed as compiled alone.
_ANNOTATION = re.compile(r'(?:\s*\(\*"[^"]*"\*\))+\s*;')


# A group's disassembly is read once per variant for its listing and once for its SASS
# by kernel line (:mod:`.sass_lines`): split once. Shared: read it, never change it.
@functools.lru_cache(maxsize=2)
def functions(disassembly: str) -> dict[str, list[str]]:
    """Each function's lines of ``nvdisasm`` output (its section's, in order), by name."""
    found: dict[str, list[str]] = {}
    lines: list[str] | None = None
    for text in disassembly.splitlines():
        section = _SECTION.match(text)
        if section:
            lines = found.setdefault(section["name"], [])
        elif _END.match(text):
            lines = None
        elif lines is not None:
            lines.append(text)
    return found


def _instructions(lines: list[str]) -> list[str]:
    """The instruction lines of one function, branch targets given as addresses."""
    addresses: dict[str, str] = {}
    waiting: list[str] = []  # labels read, waiting for the instruction they name
    for text in lines:
        label = _LABEL.match(text)
        if label:
            waiting.append(label["label"])
            continue
        instruction = _INSTRUCTION.match(text)
        if instruction:
            for name in waiting:
                addresses[name] = f"0x{int(instruction['address'], 16):x}"
            waiting = []

    def address(match: re.Match[str]) -> str:
        # A label no instruction follows (the function's end) keeps its name: never met
        # in a branch, and not guessed at if it were.
        return addresses.get(match["label"], match[0])

    return [_ANNOTATION.sub(" ;", _TARGET.sub(address, text)).rstrip() for text in lines
            if _INSTRUCTION.match(text)]


def listing(disassembly: str, arch: str, kernel: str, name: str | None = None) -> str | None:
    """The listing of ``kernel`` (its name in the cubin) as ``cuobjdump -sass`` prints a
    cubin of that kernel alone, without encodings or ``.headerflags``; ``name``: the name
    to give it (a kernel renamed in a group's shared file gets its own back). None where
    the disassembly has no such function."""
    lines = functions(disassembly).get(kernel)
    if lines is None:
        return None
    head = [f"\tcode for {arch}", f"\t.target\t{arch}", "", f"\t\tFunction : {name or kernel}"]
    return "\n".join([*head, *_instructions(lines), "\t\t.........."]) + "\n"
