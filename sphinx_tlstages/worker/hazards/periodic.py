"""A synchronised loop of many iterations, walked until its iterations repeat.

The argument of :mod:`.sizes`: the check's state at the start of iteration ``k`` of a
synchronised loop (the last copy into each slot, the open cp.async groups, each barrier's
phase) is the same at ``k`` and ``k + P`` once ``k >= K0``, and a later comparison of the
loop's variable with a constant is part of ``K0``. So a loop of known trip count need not
be unrolled to its end: once it has walked ``K0 + 2p`` iterations (``p`` is ``P`` or
``2P``: a barrier's parity may repeat only every other period), where the last ``p``
iterations recorded what the ``p`` before them did and left the walk's state (its
scalars, descriptors and pointers) as they found it, the walk skips ahead a multiple of
``p`` and walks the last ``p`` to ``2p`` iterations with their own values. The premise is
checked on the walk, never assumed: iterations that do not repeat are all walked, up to
:data:`.undecided.MAX_STEPS` in all. This is what checks a loop of thousands of
iterations, and a loop around a pipelined loop (a loop over heads or chunks), by its
period rather than by unrolling it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..ir.walk import kind

if TYPE_CHECKING:
    from .trace import Trace

# What differs between iterations that repeat: where the record was made, and what names
# a statement or a thread's bytes (the same statement's, computed again).
_IGNORED = frozenset({"at", "outside", "own", "node", "site"})


# Loops of at most this many iterations are walked whole: the words of a verdict (how
# many cp.async groups, how many accesses race) count what was walked.
LONG = 128


class Repeats:
    """One loop's iterations as the walk makes them, to tell when they repeat."""

    def __init__(self, trace: Trace, warmup: int, cycle: int) -> None:
        self.trace, self.warmup, self.cycle = trace, warmup, cycle
        # Per iteration walked: where its records start, and the state it started from.
        self.starts: list[tuple[int, Any]] = []

    def start(self) -> None:
        """An iteration begins."""
        self.starts.append((len(self.trace.records), _state(self.trace)))

    def skip(self, left: int) -> int:
        """How many of the ``left`` iterations still to walk to skip now (a multiple of
        the period, leaving one period at least), where the last ones repeat; the
        skipped iterations are said by a ``skipped`` record (how many, and the cp.async
        groups they commit, which a clean verdict counts)."""
        walked = len(self.starts)
        for period in (self.cycle, 2 * self.cycle):
            if walked < self.warmup + 2 * period or left <= 2 * period:
                continue
            if self._repeats(period):
                skipped = (left - period) // period * period
                last = self.trace.records[self.starts[-period][0]:]
                commits = sum(1 for r in last if r["op"] == "commit")
                self.trace.emit({"op": "skipped", "iterations": skipped,
                                 "commits": commits * (skipped // period)})
                return skipped
        return 0

    def _repeats(self, period: int) -> bool:
        trace, starts = self.trace, self.starts
        if _state(trace) != starts[-period][1]:
            return False
        ends = [start for start, _ in starts[1:]] + [len(trace.records)]
        walked = len(starts)
        for i in range(walked - period, walked):
            j = i - period
            now = trace.records[starts[i][0]:ends[i]]
            then = trace.records[starts[j][0]:ends[j]]
            if len(now) != len(then) or any(_said(a) != _said(b) for a, b in zip(
                    now, then, strict=True)):
                return False
        return True


def _said(record: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in record.items() if key not in _IGNORED}


def _state(trace: Trace) -> Any:
    """What an iteration leaves besides its records: the scalars the kernel keeps, the
    wgmma descriptors and batch, the pointers bound, the tcgen05 reads and commits."""
    scalars = {key: value for key, value in trace.env.items() if kind(key) != "Var"}
    return (scalars, {var: list(region) for var, region in trace.descriptors.items()},
            frozenset(trace.batch), dict(trace.bases), len(trace.umma), trace.commits)
