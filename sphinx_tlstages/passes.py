"""The compiler's pass pipeline, pass by pass: what each run changed in the IR.

:class:`PassLog` is fed by the lowering's pass instrument (in the worker) with each pass
run and, when the IR changed, its new text; it keeps per run the lines added and removed
and a digest of exactly which lines, plus full before/after diffs for the runs that
``:passes:`` asked for. :func:`responding` then compares variants: the passes that
change nothing, or change every variant the same way, are not where num_stages acts.

A run is named ``name#run``: Simplify runs many times, and its third run is
``tir.Simplify#3`` wherever it sits in the pipeline.
"""

from __future__ import annotations

import difflib
import hashlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

Record = dict[str, Any]
# The loop's own num_stages annotation is in the IR from the first pass on: a pass that
# merely moves that line (re-indents it, say) changes every variant alike, so the
# comparison between variants reads the value as N.
_NUM_STAGES = re.compile(r"""(num_stages["']?\s*[:=]\s*)\d+""")


def run_id(name: str, run: int) -> str:
    return f"{name}#{run}"


def matches(selector: str, name: str, run: int) -> bool:
    """``InjectSoftwarePipeline``, ``tl.InjectSoftwarePipeline`` or ``Simplify#3``."""
    wanted, _, number = selector.partition("#")
    if number and int(number) != run:
        return False
    return wanted == name or wanted == name.rsplit(".", 1)[-1]


def _changed_lines(diff: list[str]) -> list[str]:
    return [line for line in diff[2:] if line[:1] in "+-"]


def _digest(text: str) -> str:
    return hashlib.sha256(_NUM_STAGES.sub(r"\1N", text).encode()).hexdigest()[:16]


class PassLog:
    """What each pass run did to the IR of one variant."""

    def __init__(self, wanted: Sequence[str] = ()) -> None:
        self.wanted = tuple(wanted)
        self.records: list[Record] = []
        self.diffs: dict[str, str] = {}
        self._text: str | None = None
        self._state = ""  # digest of the IR as it stands, num_stages read as N
        self._runs: dict[str, int] = {}

    def start(self, text: str) -> None:
        """The IR before the first pass."""
        self._text = text
        self._state = _digest(text)

    def after(self, name: str, changed: bool, text: Callable[[], str]) -> None:
        """One pass ran; ``text`` is called (printing IR costs) only if it ``changed``."""
        run = self._runs[name] = self._runs.get(name, 0) + 1
        # "input" tells, between variants, where a difference starts: a run whose input
        # is the same everywhere but whose change is not is where the variants part ways.
        record: Record = {"name": name, "run": run, "position": len(self.records) + 1,
                          "added": 0, "removed": 0, "digest": "", "input": self._state}
        if changed and self._text is not None:
            new = text()
            diff = list(difflib.unified_diff(self._text.splitlines(), new.splitlines(),
                                             "before", "after", n=3, lineterm=""))
            lines = _changed_lines(diff)
            record["added"] = sum(1 for line in lines if line.startswith("+"))
            record["removed"] = len(lines) - record["added"]
            if lines:
                record["digest"] = _digest("\n".join(lines))
            # Every run of a chosen name: which run is "#3" is decided when the
            # variants' pipelines are lined up (see align), not here.
            if any(matches(s.split("#")[0], name, run) for s in self.wanted):
                before = f"IR before {run_id(name, run)}"
                self.diffs[run_id(name, run)] = "\n".join(
                    [f"--- {before}", f"+++ IR after {run_id(name, run)}", *diff[2:]])
            self._text = new
            self._state = _digest(new)
        elif changed:
            self._text = text()
            self._state = _digest(self._text)
        self.records.append(record)


@dataclass(frozen=True)
class Row:
    """One pass run, lined up across variants."""

    id: str  # ``name#run``, counted in the longest pipeline
    position: str  # its place there: ``19``, or ``after 27`` for a run some variants add
    changes: tuple[Record | None, ...]  # per variant; None where the run did not happen

    @property
    def origin(self) -> bool:
        """Its input was the same in every variant: the difference starts here."""
        return None not in self.changes and len({c["input"] for c in self.changes if c}) == 1


def align(logs: Sequence[Sequence[Record]]) -> list[Row]:
    """Every pass run of every variant, lined up by position in the pipeline.

    Counting runs by name is not enough: a variant whose pipeline runs one extra
    Simplify early shifts every later ``Simplify#k``. So each variant's sequence of pass
    names is aligned with the longest one; runs it lacks are None, runs only it has get
    rows of their own, between their neighbours.
    """
    if not logs:
        return []
    ref = max(logs, key=len)
    names = [r["name"] for r in ref]
    main: list[list[Record | None]] = [[None] * len(logs) for _ in ref]
    extra: dict[tuple[int, str, int], list[Record | None]] = {}
    for i, log in enumerate(logs):
        matcher = difflib.SequenceMatcher(None, names, [r["name"] for r in log], autojunk=False)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag == "equal":
                for k in range(i2 - i1):
                    main[i1 + k][i] = log[j1 + k]
                continue
            seen: dict[str, int] = {}
            for record in log[j1:j2]:
                seen[record["name"]] = seen.get(record["name"], 0) + 1
                extra.setdefault((i1, record["name"], seen[record["name"]]),
                                 [None] * len(logs))[i] = record
    rows = [(float(k), Row(run_id(r["name"], r["run"]), str(k + 1), tuple(main[k])))
            for k, r in enumerate(ref)]
    for (at, _, _), changes in extra.items():
        first = next(c for c in changes if c)
        rows.append((at - 0.5, Row(run_id(first["name"], first["run"]), f"after {at}",
                                   tuple(changes))))
    return [row for _, row in sorted(rows, key=lambda pair: pair[0])]


def responding(logs: Sequence[Sequence[Record]]) -> tuple[list[Row], int, int]:
    """The runs whose effect differs between variants (in pipeline order), and how many
    changed nothing anywhere and how many changed every variant alike."""
    found, idle, alike = [], 0, 0
    for row in align(logs):
        digests = {c["digest"] if c else None for c in row.changes}
        if digests == {""}:
            idle += 1
        elif len(digests) == 1:
            alike += 1
        else:
            found.append(row)
    return found, idle, alike


def unmatched(selectors: Sequence[str], logs: Sequence[Sequence[Record]]) -> list[str]:
    """Selectors of ``:passes:`` that name no run of any variant."""
    runs = {(r["name"], r["run"]) for log in logs for r in log}
    return [s for s in selectors if not any(matches(s, name, run) for name, run in runs)]
