"""The redundant-synchronisation search (core/hazards/needed.py) against a reference that
shares nothing with the hazard check: every interleaving of a few threads running tiny
pipelines, enumerated.

Each case is written twice: as the records the trace gives the check (every access a
byte interval over all threads) and as one program per thread (thread t copies byte t of
a two-byte slot, every thread reads both bytes, as an ``ldmatrix`` reads what other
threads copied). The reference runs the programs under every schedule: a ``cp.async``
lands at any moment between its issue and the ``cp_async_wait`` that covers its group,
``__syncthreads`` holds every thread until all arrive, memory is sequentially
consistent. A read that sees a value other than in the lock-step run where every copy
lands at once is a race. A statement is needed exactly when deleting it (every instance)
lets the reference find one.
"""

from __future__ import annotations

import functools
from typing import Any

import pytest

from sphinx_tlstages.core.hazards.check import check_cp_async
from sphinx_tlstages.core.hazards.needed import UNNEEDED, unneeded

THREADS = 2
SLOT = 2  # bytes per slot: thread t copies byte t of it

Op = tuple[Any, ...]  # (op, site, argument): a statement of a thread's program


# --- the reference: every interleaving ------------------------------------------------

def _lock_step(programs: tuple[tuple[Op, ...], ...]) -> dict[tuple[int, int], tuple[int, ...]]:
    """What each read sees when the threads run in lock step and copies land at once."""
    memory: dict[int, int] = {}
    seen: dict[tuple[int, int], tuple[int, ...]] = {}
    for pc in range(len(programs[0])):
        for t, program in enumerate(programs):
            op, _, arg = program[pc]
            if op in ("copy", "store"):
                for byte in arg[t]:
                    memory[byte] = pc
            elif op == "read":
                seen[(t, pc)] = tuple(memory.get(b, -1) for b in sorted(arg))
    return seen


def races(programs: tuple[tuple[Op, ...], ...]) -> bool:
    """Whether some interleaving makes a read see another value than the lock-step run
    (or the threads hang: a barrier some never reach)."""
    expected = _lock_step(programs)
    count = len(programs)

    @functools.cache
    def explore(pcs: tuple[int, ...], memory: tuple[tuple[int, int], ...],
                pending: tuple[tuple[tuple[int, int, int], ...], ...],
                groups: tuple[int, ...], arrived: frozenset[int]) -> bool:
        mem = dict(memory)
        moves = False
        # A pending copy lands: (group, byte, value); group 0 is the open one.
        for t in range(count):
            for i, (_group, byte, value) in enumerate(pending[t]):
                moves = True
                left = pending[t][:i] + pending[t][i + 1:]
                landed = tuple(sorted({**mem, byte: value}.items()))
                if explore(pcs, landed, (*pending[:t], left, *pending[t + 1:]), groups,
                           arrived):
                    return True
        if len(arrived) == count:  # every thread at the barrier: all pass it
            moves = True
            return explore(tuple(pc + 1 for pc in pcs), memory, pending, groups,
                           frozenset())
        for t in range(count):
            if pcs[t] >= len(programs[t]) or t in arrived:
                continue
            op, _, arg = programs[t][pcs[t]]
            step = (*pcs[:t], pcs[t] + 1, *pcs[t + 1:])
            if op == "sync":
                moves = True
                if explore(pcs, memory, pending, groups, arrived | {t}):
                    return True
                continue
            if op == "wait":
                # All but the newest ``arg`` committed groups must have landed.
                if any(0 < g <= groups[t] - arg for g, _, _ in pending[t]):
                    continue
                new = (memory, pending, groups)
            elif op == "copy":
                copies = tuple((0, b, pcs[t]) for b in arg[t])
                new = (memory, (*pending[:t], pending[t] + copies, *pending[t + 1:]), groups)
            elif op == "commit":
                number = groups[t] + 1
                closed = tuple((number if g == 0 else g, b, v) for g, b, v in pending[t])
                new = (memory, (*pending[:t], closed, *pending[t + 1:]),
                       (*groups[:t], number, *groups[t + 1:]))
            elif op == "store":
                new = (tuple(sorted({**mem, **dict.fromkeys(arg[t], pcs[t])}.items())),
                       pending, groups)
            else:  # read
                if tuple(mem.get(b, -1) for b in sorted(arg)) != expected[(t, pcs[t])]:
                    return True
                new = (memory, pending, groups)
            moves = True
            if explore(step, *new, arrived):
                return True
        done = all(pc >= len(p) for pc, p in zip(pcs, programs, strict=True))
        return not moves and not done  # a hang

    start = tuple(() for _ in programs)
    return explore(tuple(0 for _ in programs), (), start, tuple(0 for _ in programs),
                   frozenset())


# --- one case, written for both ---------------------------------------------------------

class Case:
    """A pipeline built statement by statement, as records and as thread programs."""

    def __init__(self) -> None:
        self.ops: list[Op] = []
        self.records: list[dict[str, Any]] = []

    def copy(self, slot: int) -> None:
        self.ops.append(("copy", None, [{slot * SLOT + t} for t in range(THREADS)]))
        self.records.append({"op": "copy", "buffer": "S", "root": "S", "lo": slot * SLOT,
                             "hi": slot * SLOT + SLOT - 1})

    def store(self, slot: int) -> None:
        self.ops.append(("store", None, [{slot * SLOT + t} for t in range(THREADS)]))
        self.records.append({"op": "store", "buffer": "S", "root": "S", "lo": slot * SLOT,
                             "hi": slot * SLOT + SLOT - 1})

    def read(self, slot: int) -> None:
        self.ops.append(("read", None, frozenset(range(slot * SLOT, slot * SLOT + SLOT))))
        self.records.append({"op": "read", "buffer": "S", "root": "S", "lo": slot * SLOT,
                             "hi": slot * SLOT + SLOT - 1})

    def commit(self) -> None:
        self.ops.append(("commit", None, None))
        self.records.append({"op": "commit"})

    def wait(self, site: int, n: int) -> None:
        self.ops.append(("wait", ("wait", site), n))
        self.records.append({"op": "wait", "n": n, "site": site})

    def sync(self, site: int) -> None:
        self.ops.append(("sync", ("sync", site), None))
        self.records.append({"op": "sync", "site": site, "what": "__syncthreads"})

    def programs(self, changes: dict[tuple[str, int], int | None] | None = None
                 ) -> tuple[tuple[Op, ...], ...]:
        """Every thread's program, each statement of ``changes`` deleted (None) or, a
        wait, waiting with the count given."""
        changes = changes or {}
        kept: list[Op] = []
        for op, site, arg in self.ops:
            if site is not None and site in changes:
                if changes[site] is None:
                    continue
                arg = changes[site]
            kept.append((op, site, arg if op not in ("copy", "store") else tuple(
                frozenset(a) for a in arg)))
        return tuple(tuple(kept) for _ in range(THREADS))

    def sites(self) -> list[tuple[str, int]]:
        return list(dict.fromkeys(site for _, site, _ in self.ops if site is not None))


def sm80_pipeline(trips: int, stages: int, steady_wait: int | None = None,
                  extra_sync: bool = False, epilogue_wait: int | None = None) -> Case:
    """TileLang's cp.async pipeline (sm_80), ``trips`` tiles over ``stages`` slots: the
    prologue's copies, then per iteration a barrier, the next copy, commit, a wait, a
    barrier and the read; then the epilogue's waits and reads. ``extra_sync``: a barrier
    the kernel adds before the pipeline, protecting nothing."""
    case = Case()
    if extra_sync:
        case.sync(9)
    if stages == 1:
        case.copy(0)
        case.commit()
        for k in range(trips):
            case.wait(0, 0)
            case.sync(0)
            case.read(0)
            if k + 1 < trips:
                case.sync(1)
                case.copy(0)
                case.commit()
        return case
    for tile in range(stages - 1):
        case.copy(tile % stages)
        case.commit()
    for k in range(trips - (stages - 1)):
        case.sync(0)
        case.copy((k + stages - 1) % stages)
        case.commit()
        case.wait(0, stages - 1 if steady_wait is None else steady_wait)
        case.sync(1)
        case.read(k % stages)
    for e in range(1, stages):
        k = trips - (stages - 1) + e - 1
        case.wait(e, stages - 1 - e if epilogue_wait is None else epilogue_wait)
        case.sync(1 + e)
        case.read(k % stages)
    return case


def stores_then_reads(extra_sync: bool) -> Case:
    """Threads store into a slot themselves, a barrier, every thread reads it; a copy
    into the other slot fetched meanwhile."""
    case = Case()
    case.copy(1)
    case.commit()
    case.store(0)
    case.sync(0)
    if extra_sync:
        case.sync(1)
    case.read(0)
    case.wait(0, 0)
    case.sync(2)
    case.read(1)
    return case


CASES = {
    "sm_80, 1 stage, 3 tiles": lambda: sm80_pipeline(3, 1),
    "sm_80, 2 stages, 3 tiles": lambda: sm80_pipeline(3, 2),
    "sm_80, 3 stages, 3 tiles": lambda: sm80_pipeline(3, 3),
    "sm_80, 3 stages, 5 tiles": lambda: sm80_pipeline(5, 3),
    "sm_80, 2 stages, a barrier before": lambda: sm80_pipeline(3, 2, extra_sync=True),
    "sm_80, 2 stages, wait<0> in the loop": lambda: sm80_pipeline(3, 2, steady_wait=0),
    "sm_80, 3 stages, wait<0> in the epilogue": lambda: sm80_pipeline(4, 3,
                                                                      epilogue_wait=0),
    "stores, then a barrier, then reads": lambda: stores_then_reads(False),
    "stores, then two barriers": lambda: stores_then_reads(True),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_what_is_named_is_what_every_interleaving_allows_to_go(name: str) -> None:
    """What is named can go (deleted, or weakened to the count said) with no race in any
    interleaving; then every other statement is needed (deleting it races), and a wait
    weakened one step further races."""
    case = CASES[name]()
    assert not races(case.programs()), "the case itself races"
    found = unneeded(case.records, {})
    gone = {(e["op"], e["site"]): e.get("suffices") for e in found}
    assert not races(case.programs(gone)), (name, found)
    for site in case.sites():
        if site in gone and gone[site] is None:
            continue
        assert races(case.programs({**gone, site: None})), (name, site)
        if site in gone:
            assert races(case.programs({**gone, site: gone[site] + 1})), (name, site)
    for entry in found:
        assert entry["text"].endswith(UNNEEDED) or "stronger than needed" in entry["text"]


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_check_stopped_at_its_first_finding_gives_that_finding(name: str) -> None:
    """The search only asks whether a trial races, so it stops the check at its first
    finding: that is the whole check's first, and none where the whole check finds none,
    for the case and for the case with each statement deleted."""
    case = CASES[name]()
    trials = [case.records] + [
        [r for r in case.records if (r["op"], r.get("site")) != site]
        for site in case.sites()]
    raced = 0
    for records in trials:
        every = check_cp_async(records, {})
        assert check_cp_async(records, {}, first=True) == every[:1], (name, every)
        raced += bool(every)
    assert raced or name.startswith("stores"), "no deletion races: nothing stopped early"


def test_the_cases_name_what_they_are_built_to() -> None:
    """Each case's redundant statement, by construction, and nothing in the canonical
    pipelines: the test above compares the two sides on statements that matter."""
    def named(case: Case) -> list[tuple[str, int, int | None]]:
        return [(e["op"], e["site"], e.get("suffices")) for e in unneeded(case.records, {})]

    for stages in (1, 2, 3):
        assert named(sm80_pipeline(stages + 2, stages)) == []
    # One trip of the loop: its first barrier follows no read (the reference agrees, in
    # the case of that name above).
    assert named(sm80_pipeline(3, 3)) == [("sync", 0, None)]
    assert named(sm80_pipeline(3, 2, extra_sync=True)) == [("sync", 9, None)]
    assert named(sm80_pipeline(3, 2, steady_wait=0)) == [("wait", 0, 1)]
    assert named(sm80_pipeline(4, 3, epilogue_wait=0)) == [("wait", 1, 1)]
    assert named(stores_then_reads(False)) == []
    assert named(stores_then_reads(True)) == [("sync", 1, None)]


def test_two_barriers_side_by_side_are_not_both_named() -> None:
    """Each of two adjacent barriers can go alone, not both: the later one is named, and
    the reference agrees that deleting it leaves no race and deleting both races."""
    case = Case()
    plain = sm80_pipeline(3, 2)
    for (op, site, arg), record in zip(plain.ops, plain.records, strict=True):
        case.ops.append((op, site, arg))
        case.records.append(record)
        if site == ("sync", 1):
            case.sync(5)
    assert [(e["op"], e["site"]) for e in unneeded(case.records, {})] == [("sync", 5)]
    assert not races(case.programs({("sync", 1): None}))
    assert not races(case.programs({("sync", 5): None}))
    assert races(case.programs({("sync", 1): None, ("sync", 5): None}))
