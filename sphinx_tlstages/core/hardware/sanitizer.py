"""NVIDIA's compute-sanitizer around one variant's launches: the command, and its output
read as counts, pure.

``racecheck`` reports shared-memory hazards (with ``--racecheck-memcpy-async yes`` a read
of bytes whose ``cp.async`` no wait has covered yet: "invalid memcpy_async
synchronization"); ``synccheck`` reports barriers misused (it does not track ``cp.async``
completion). racecheck finds a hazard per byte and per access: a racy tile of one block is tens of
thousands of them. So a variant is launched with few blocks, without backtraces, and
racecheck reports in its analysis mode: one report per pair of instructions that race,
each with the hazards it stands for ("Race reported between Write access at
tl::cp_async_gs<16> ... in copy.h:32 and Read access at tl::ptx_ldmatrix_x4 ... in ldsm.h:32
[1024 hazards]"). Its summary line counts the reports ("RACECHECK SUMMARY: 32 hazards
displayed (32 errors, 0 warnings)"), with no limit on how many are printed; the bracketed
counts are added up as the lines stream by, and only the first reports are kept, never
the whole output. Everything here reads text, so it is tested on output recorded on an
H100.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

TOOLS = ("racecheck", "synccheck")
SANITIZER = "compute-sanitizer"
# What the launched program prints, one line, once its launches returned: the JSON after it.
LAUNCHED = "TLSTAGES-LAUNCHED "
SAMPLE = 6  # report lines kept, for the kinds of hazard and where they were
TAIL = 12  # the output's last lines kept, to say why a run failed

_RACECHECK = re.compile(r"RACECHECK SUMMARY: (\d+) hazards? displayed "
                        r"\((\d+) errors?, (\d+) warnings?\)")
_ERRORS = re.compile(r"ERROR SUMMARY: (\d+) errors?")
# "Error: Potential RAW hazard detected at __shared__ ..." (a hazard report), "Error: Race
# reported between Write access at ... and Read access at ..." (an analysis report),
# "Error: Barrier error detected. ..." (synccheck), "Warning: ...".
_REPORT = re.compile(r"^=+\s+(Error|Warning):\s+(.*)$")
_KIND = re.compile(r"\b(RAW|WAR|WAW)\b")
_AGGREGATED = re.compile(r"\[(\d+) hazards?\]")


def command(tool: str, program: Sequence[str]) -> list[str]:
    """``compute-sanitizer`` running ``program`` under ``tool``, without backtraces (they
    multiply the output), asynchronous copies tracked by racecheck."""
    if tool not in TOOLS:
        raise ValueError(f"unknown tool {tool!r}")
    options = ["--tool", tool, "--show-backtrace", "no", "--print-limit", "0"]
    if tool == "racecheck":
        options += ["--racecheck-memcpy-async", "yes", "--racecheck-report", "analysis"]
    return [SANITIZER, *options, *program]


@dataclass
class Tally:
    """What one tool's run printed, read line by line as it comes: the summary's counts,
    the first reports, the launched program's own line, and the last lines."""

    tool: str
    hazards: int | None = None  # racecheck's "N hazards displayed": its reports
    aggregated: int = 0  # the hazards its reports stand for ("[1024 hazards]"), added up
    errors: int | None = None
    warnings: int | None = None
    reports: int = 0  # report lines seen (counted, not kept)
    sample: list[str] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)  # RAW/WAR/WAW, as the sample says
    launched: str | None = None  # the JSON the program printed after its launches
    tail: list[str] = field(default_factory=list)

    def read(self, line: str) -> None:
        """One line of the run's output (stdout and stderr together)."""
        text = line.rstrip("\n")
        if text.startswith(LAUNCHED):
            self.launched = text[len(LAUNCHED):]
            return
        self.tail = [*self.tail[-(TAIL - 1):], text]
        if (found := _RACECHECK.search(text)) is not None:
            self.hazards, self.errors, self.warnings = map(int, found.groups())
            return
        if (found := _ERRORS.search(text)) is not None:
            if self.errors is None or self.tool != "racecheck":
                self.errors = int(found.group(1))
            return
        self.aggregated += sum(int(n) for n in _AGGREGATED.findall(text))
        report = _REPORT.match(text)
        if report is None:
            return
        self.reports += 1
        if len(self.sample) < SAMPLE:
            self.sample.append(f"{report.group(1)}: {report.group(2)}"[:300])
            for kind in _KIND.findall(report.group(2)):
                if kind not in self.kinds:
                    self.kinds.append(kind)

    def read_all(self, lines: Iterable[str]) -> Tally:
        for line in lines:
            self.read(line)
        return self

    @property
    def counted(self) -> bool:
        """Whether the tool printed its summary (it ran to the end)."""
        return (self.hazards if self.tool == "racecheck" else self.errors) is not None

    @property
    def found(self) -> int:
        """What the tool reported: racecheck's hazards, synccheck's errors (0 unread)."""
        return (self.hazards if self.tool == "racecheck" else self.errors) or 0


def _last_error(lines: Sequence[str]) -> str:
    """The last line of ``lines`` that names an error, else the last one with text (the
    tool's summary aside)."""
    kept = [line.strip(" =\t") for line in lines
            if line.strip(" =\t") and "SUMMARY" not in line]
    named = [line for line in kept if "rror" in line]
    return (named or kept or [""])[-1][:300]


def outcome(tally: Tally, returncode: int | None, seconds: float,
            timeout: float) -> dict[str, Any]:
    """One tool's entry of a hardware record: ``ran`` with its counts, or why not.

    A run counts only where the tool printed its summary and the program got through its
    launches (it prints :data:`LAUNCHED`): a launch that failed (no binary for this GPU,
    an illegal address) checked nothing."""
    entry: dict[str, Any] = {"seconds": round(seconds, 1)}
    if returncode is None:
        entry.update(ran=False, why=f"stopped after {timeout:g} s")
    elif tally.launched is None:
        said = _last_error(tally.tail)
        entry.update(ran=False, why="the launch failed" + (f": {said}" if said else ""))
    elif not tally.counted:
        entry.update(ran=False, why=f"{tally.tool} printed no summary (exit {returncode})")
    else:
        entry["ran"] = True
        if tally.tool == "racecheck":
            entry.update(hazards=tally.hazards, errors=tally.errors, warnings=tally.warnings,
                         aggregated=tally.aggregated)
        else:
            entry["errors"] = tally.errors
        if tally.sample:
            entry.update(kinds=tally.kinds, sample=tally.sample)
    return entry
