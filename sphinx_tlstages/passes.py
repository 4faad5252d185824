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
# The variant's own inputs are in the IR from the start: the loop's num_stages
# annotation, and the target's arch once BindTarget has written it. A pass that merely
# carries those lines along (re-indents them, say) changes every variant alike, and
# writing the target down is not where the variants behave differently; so the
# comparison between variants reads both values as placeholders.
_OWN_INPUTS = (
    (re.compile(r"""(num_stages["']?\s*[:=]\s*)\d+"""), r"\1N"),
    (re.compile(r'("arch":\s*")[^"]*(")'), r"\1ARCH\2"),
)


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
    for pattern, placeholder in _OWN_INPUTS:
        text = pattern.sub(placeholder, text)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


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
    names is aligned with the longest one (see :func:`_pairs`); runs it lacks are None,
    runs only it has get rows of their own, between their neighbours.
    """
    if not logs:
        return []
    ref = max(logs, key=len)
    main: list[list[Record | None]] = [[None] * len(logs) for _ in ref]
    extra: dict[tuple[int, str, int], list[Record | None]] = {}
    for i, log in enumerate(logs):
        matched = dict(_pairs(ref, log))
        seen: dict[tuple[int, str], int] = {}
        at = 0  # how many runs of the longest pipeline come before this one
        for j, record in enumerate(log):
            k = matched.get(j)
            if k is not None:
                main[k][i] = record
                at = k + 1
                continue
            n = seen[(at, record["name"])] = seen.get((at, record["name"]), 0) + 1
            extra.setdefault((at, record["name"], n), [None] * len(logs))[i] = record
    rows = [(float(k), Row(run_id(r["name"], r["run"]), str(k + 1), tuple(main[k])))
            for k, r in enumerate(ref)]
    for (at, _, _), changes in extra.items():
        first = next(c for c in changes if c)
        rows.append((at - 0.5, Row(run_id(first["name"], first["run"]), f"after {at}",
                                   tuple(changes))))
    return [row for _, row in sorted(rows, key=lambda pair: pair[0])]


def _pairs(ref: Sequence[Record], log: Sequence[Record]) -> list[tuple[int, int]]:
    """(index in ``log``, index in ``ref``) of the runs that line up.

    The longest common subsequence of pass names, where two runs that also share their
    run number weigh a little more: between ``S B S`` and ``S L S B S`` the first S is
    the first S, not the second (plain difflib takes the longest block and gets it wrong).
    """
    n, m = len(ref), len(log)
    score = [[0.0] * (m + 1) for _ in range(n + 1)]
    for a in range(n - 1, -1, -1):
        for b in range(m - 1, -1, -1):
            best = max(score[a + 1][b], score[a][b + 1])
            if ref[a]["name"] == log[b]["name"]:
                bonus = 0.5 if ref[a]["run"] == log[b]["run"] else 0.0
                best = max(best, 1.0 + bonus + score[a + 1][b + 1])
            score[a][b] = best
    pairs, a, b = [], 0, 0
    while a < n and b < m:
        same = ref[a]["name"] == log[b]["name"]
        bonus = 0.5 if same and ref[a]["run"] == log[b]["run"] else 0.0
        if same and score[a][b] == 1.0 + bonus + score[a + 1][b + 1]:
            pairs.append((b, a))
            a, b = a + 1, b + 1
        elif score[a + 1][b] >= score[a][b + 1]:
            a += 1
        else:
            b += 1
    return pairs


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
