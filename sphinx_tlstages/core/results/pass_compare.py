"""Comparing the pass records of several variants: lining runs up, finding responders.

A pass run "responds" when its change (see :mod:`.passes`) differs between variants; the
run where the variants part ways is the first whose input was the same everywhere. Runs
that change nothing, or change every variant alike, are not where the variants differ.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .passes import Record, matches, run_id


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
    names is aligned with the longest one (see :func:`pairs`); runs it lacks are None,
    runs only it has get rows of their own, between their neighbours.
    """
    if not logs:
        return []
    ref = max(logs, key=len)
    main: list[list[Record | None]] = [[None] * len(logs) for _ in ref]
    extra: dict[tuple[int, str, int], list[Record | None]] = {}
    for i, log in enumerate(logs):
        matched = dict(pairs(ref, log))
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


def pairs(ref: Sequence[Record], log: Sequence[Record]) -> list[tuple[int, int]]:
    """(index in ``log``, index in ``ref``) of the runs that line up.

    The longest common subsequence of pass names, where two runs that also share their
    run number weigh a little more: between ``S B S`` and ``S L S B S`` the first S is
    the first S, not the second (plain difflib takes the longest block and gets it wrong).
    """
    # Pipelines mostly agree: pair the common head and tail at once, align the middle.
    head = 0
    while head < min(len(ref), len(log)) and ref[head]["name"] == log[head]["name"]:
        head += 1
    tail = 0
    while tail < min(len(ref), len(log)) - head \
            and ref[-1 - tail]["name"] == log[-1 - tail]["name"]:
        tail += 1
    middle = _align_middle(ref[head:len(ref) - tail], log[head:len(log) - tail])
    return ([(j, j) for j in range(head)]
            + [(head + j, head + k) for j, k in middle]
            + [(len(log) - tail + t, len(ref) - tail + t) for t in range(tail)])


def _align_middle(ref: Sequence[Record], log: Sequence[Record]) -> list[tuple[int, int]]:
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


def responding(rows: Sequence[Row]) -> tuple[list[Row], int, int]:
    """Of lined-up runs (:func:`align`), those whose effect differs between variants, and
    how many changed nothing anywhere and how many changed every variant alike."""
    found, idle, alike = [], 0, 0
    for row in rows:
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


# ``passes["tl.Simplify#3"]`` in an :assert: expression.
_IN_ASSERT = re.compile(r"""passes\[\s*(["'])([^"'#\s]+#\d+)\1\s*\]""")


def numbered(passes: Iterable[str], asserts: Iterable[str]) -> list[str]:
    """The selectors that name one run by number (``Simplify#3``), from ``:passes:`` and
    from ``passes[...]`` in ``:assert:`` expressions, in order, once each."""
    found = [s for s in passes if "#" in s]
    found += [m.group(2) for e in asserts for m in _IN_ASSERT.finditer(e)]
    return list(dict.fromkeys(found))


def longest(logs: Iterable[Sequence[Record]]) -> list[str]:
    """The pass names of the longest pipeline: the one ``#N`` is counted in."""
    return [r["name"] for r in max(logs, key=len, default=[])]


def _as_records(names: Sequence[str]) -> list[Record]:
    runs: dict[str, int] = {}
    records = []
    for name in names:
        runs[name] = runs.get(name, 0) + 1
        records.append({"name": name, "run": runs[name]})
    return records


def moved(selector: str, recorded: Sequence[str], now: Sequence[str]) -> str | None:
    """When ``selector`` (``Simplify#3``) names another run in pipeline ``now`` than it did in
    pipeline ``recorded`` (pass names, in order), the sentence that says so; else None.

    The two pipelines are lined up as the variants' are (:func:`pairs`): a release that
    adds a run before the one meant shifts every later number.
    """
    new, old = _as_records(now), _as_records(recorded)
    at_new = next((k for k, r in enumerate(new) if matches(selector, r["name"], r["run"])), None)
    at_old = next((j for j, r in enumerate(old) if matches(selector, r["name"], r["run"])), None)
    if at_new is None and at_old is None:
        return None
    lined = pairs(new, old)  # (index in old, index in new)
    old_of = {k: j for j, k in lined}
    new_of = {j: k for j, k in lined}
    if at_new is not None and at_old is not None and old_of.get(at_new) == at_old:
        return None
    said = []
    if at_new is not None:
        j = old_of.get(at_new)
        said.append(f"now names the run that was {run_id(old[j]['name'], old[j]['run'])}"
                    if j is not None else "now names a run that pipeline did not have")
    if at_old is not None:
        k = new_of.get(at_old)
        said.append(f"the run it named then is now {run_id(new[k]['name'], new[k]['run'])}"
                    if k is not None else "the run it named then is gone")
    return "; ".join(said)
