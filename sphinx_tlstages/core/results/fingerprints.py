"""Per pass run, a fingerprint of the IR after it: why a page changed, not what.

A variant keeps one short line per pass run of TileLang's lowering,
``tl.InjectSoftwarePipeline#1 0123456789ab``, the first one ``(input)``: the IR as traced,
before any pass. When a snapshot drifts, lining the recorded lines up with the new
ones names the first pass whose output differs (:mod:`..records.first_pass`).

The fingerprint is TVM's structural hash of the module, free variables mapped by
position (by identity they are hashed by address, which differs between processes). It
was chosen over a digest of the printed IR as measured in ``benchmarks/pass_fingerprints``:
+2 % of a variant's lowering against +13 %, and the same for the same IR in every process
and under both ends of the supported TileLang range. It is provenance: it explains a
drift and never fails a build by itself.
"""

from __future__ import annotations

import hashlib
import re

# The first line's name: the IR before the first pass.
INPUT = "(input)"
# 48 bits: a collision between two IRs of one variant's pipeline is not a concern, and
# a snapshot keeps ~90 of these per variant.
CHARS = 12
_MASK = (1 << (4 * CHARS)) - 1


def from_hash(value: int) -> str:
    """A structural hash (a 64-bit integer, signed or not) as a fingerprint."""
    return f"{value & _MASK:0{CHARS}x}"


class Fingerprints:
    """The fingerprint after each pass run of one lowering, in order."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self._runs: dict[str, int] = {}

    def start(self, fingerprint: str) -> None:
        """The IR before the first pass."""
        self.lines = [f"{INPUT} {fingerprint}"]

    def after(self, name: str, fingerprint: str) -> None:
        """Pass ``name`` ran and left IR with ``fingerprint``."""
        run = self._runs[name] = self._runs.get(name, 0) + 1
        self.lines.append(f"{name}#{run} {fingerprint}")


_LINE = re.compile(r"^(?P<name>\S+?)(?:#(?P<run>\d+))? (?P<fp>[0-9a-f]+)$")


def parse(lines: object) -> list[tuple[str, int, str]] | None:
    """(pass name, run, fingerprint) per line; None when ``lines`` is not such a list
    (a snapshot recorded before fingerprints, or edited by hand)."""
    if not isinstance(lines, list) or not lines:
        return None
    found = []
    for line in lines:
        match = _LINE.match(line) if isinstance(line, str) else None
        if match is None:
            return None
        found.append((match["name"], int(match["run"] or 0), match["fp"]))
    return found


# What the printed IR may hold that depends on the machine or the process: absolute
# paths (site-packages, the kernel's folder) and the addresses some nodes print.
_PATH = re.compile(r'"/[^"\n]*/(?:site-packages|dist-packages)/([^"\n]*)"')
_ABSOLUTE = re.compile(r'"/[^"\n]*/([^"/\n]+)"')
_ADDRESS = re.compile(r"0x[0-9a-f]{6,16}")


def from_text(text: str) -> str:
    """The printed IR's fingerprint: its digest once paths and addresses are masked."""
    text = _PATH.sub(r'"\1"', text)
    text = _ABSOLUTE.sub(r'"\1"', text)
    text = _ADDRESS.sub("0x_", text)
    return hashlib.sha256(text.encode()).hexdigest()[:CHARS]
