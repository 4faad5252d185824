"""Synchronisation no shared-memory dependence needs: each one the hazard check's model
shows can go, named.

A variant whose check found no race (:mod:`.check`, :mod:`.rings`) is asked, for each
synchronisation *statement* of its code (a ``__syncthreads``, a named barrier, a
``cp_async_wait<N>``, an mbarrier wait; the trace marks every dynamic instance of one
statement with its ``site``): is the variant still free of races with that statement
deleted, every instance of it at once? The check is run again on the trace without it.
The check over-approximates races (each access is a byte interval bounded over all
threads; a wait whose parity does not match what its role knows returns at once), so
"still clean" means no shared-memory dependence the model sees runs through that
statement. A wait that cannot go is weakened instead: ``cp_async_wait<N>`` raised while
the check stays clean says the weakest count that suffices.

Conservative on purpose, beyond the check:

- stores the threads make themselves into shared memory (a ``BufferStore``, ``stmatrix``),
  which the check leaves to TileLang's thread-sync pass: a barrier is kept as needed when
  deleting it lets any store meet another access of the same bytes (a store on either
  side) with no barrier left between them, threads not told apart;
- a wait on a copy whose bytes the threads also store to is kept (the check does not
  order the two);
- deleting an mbarrier wait shifts the phases its role knows of for every later wait on
  that barrier (they then return at once in the model): such a wait is only named when,
  even so, every read stays ordered and nothing hangs. Arrivals and barrier
  initialisation are never named; the ``__syncthreads`` that publishes an initialisation
  is needed by the check's own rule (fenced, then a CTA barrier, before first use).

What it cannot see: global memory and registers (a ``__syncthreads`` may order a global
store another thread reads, or a register value a warp shuffles), which the words say.
"""

from __future__ import annotations

from typing import Any

from .check import check_cp_async
from .rings import Unchecked, check_rings, init_findings

Json = dict[str, Any]

# The statements named: the trace's record kind -> what the page calls it.
KINDS = ("sync", "wait", "bwait")
UNNEEDED = ("not needed by any shared-memory dependence the check models; it may still "
            "order global memory or registers")


# Reads checked first, before all of them: see :func:`_findings`.
_FIRST_READS = 16


def _findings(records: list[Json], buffers: dict[str, Json]) -> bool:
    """Whether the check finds anything in ``records`` (a ring it cannot model counts as
    a finding: nothing is named from what it cannot check).

    The check's findings only grow with the reads it is given (a read is never what
    orders two other accesses: phases, arrivals and groups come from the other records),
    so the trace with only its first reads is tried first: a deleted wait usually races
    in the first iterations, and a finding there is one of the whole trace. Only a clean
    answer needs every read."""
    reads = [i for i, r in enumerate(records) if r["op"] == "read"]
    if len(reads) > _FIRST_READS:
        late = set(reads[_FIRST_READS:])
        if _found(
                [r for i, r in enumerate(records) if i not in late], buffers):
            return True
    return _found(records, buffers)


def _found(records: list[Json], buffers: dict[str, Json]) -> bool:
    if any(r["op"] == "copy" for r in records) and check_cp_async(records, buffers, first=True):
        return True
    if any(r["op"] in ("tma", "init") for r in records):
        try:
            found, _ = check_rings(records, first=True)
        except Unchecked:
            return True
        return bool(found)
    return False


def _overlap(a: Json, b: Json) -> bool:
    return bool(a["root"] == b["root"] and a["lo"] <= b["hi"] and b["lo"] <= a["hi"])


def _stores_need(records: list[Json], site: int) -> bool:
    """Whether deleting the barrier ``site`` leaves a thread store and another access of
    the same bytes with no barrier between them (a store on either side)."""
    if not any(r["op"] == "store" for r in records):
        return False
    # Accesses since the last barrier kept, each with how many deleted instances of
    # ``site`` came after it.
    segment: list[tuple[Json, int]] = []
    crossed = 0
    for record in records:
        op = record["op"]
        if op == "sync":
            if record.get("site") == site:
                crossed += 1
            else:
                segment, crossed = [], 0
            continue
        if op not in ("store", "read", "copy", "tma"):
            continue
        for earlier, mark in segment:
            if mark < crossed and "store" in (op, earlier["op"]) and _overlap(earlier, record):
                return True
        segment.append((record, crossed))
    return False


def _copied_bytes_stored(records: list[Json]) -> bool:
    """Whether any store of the threads touches bytes an asynchronous copy writes."""
    stores = [r for r in records if r["op"] == "store"]
    copies = [r for r in records if r["op"] in ("copy", "tma")]
    return any(_overlap(s, c) for s in stores for c in copies)


def _without(records: list[Json], op: str, site: int, count: int | None) -> list[Json]:
    """``records`` with every instance of the statement ``site`` deleted (``count``
    None) or, for a ``cp_async_wait``, waiting with ``count`` instead."""
    out = []
    for record in records:
        if record["op"] != op or record.get("site") != site:
            out.append(record)
        elif count is not None:
            out.append({**record, "n": count})
    return out


def _what(record: Json) -> str:
    if record["op"] == "wait":
        return f"cp_async_wait<{record['n']}>"
    if record["op"] == "bwait":
        return "mbarrier wait"
    return str(record.get("what") or "__syncthreads")


def unneeded(records: list[Json], buffers: dict[str, Json], clean: bool = False
             ) -> list[Json]:
    """The synchronisation statements of a clean trace no modelled dependence needs, and
    the waits stronger than needed, in program order: ``{op, site, what, text}``, with
    ``suffices`` (the weakest wait count) for a weaker wait. What is named can be
    deleted (or weakened) all together with the check still clean. Records without a
    ``site`` name nothing. ``clean``: the caller's check already found nothing in
    ``records`` (otherwise it is checked here: a trace with a race names nothing)."""
    if not clean and _findings(records, buffers):
        return []
    sites: dict[tuple[str, int], Json] = {}
    for record in records:
        if record["op"] in KINDS and record.get("site") is not None:
            sites.setdefault((record["op"], record["site"]), record)
    order = list(sites)
    guarded = _copied_bytes_stored(records)
    named: dict[tuple[str, int], Json] = {}
    working = records
    # First each cp_async_wait weakened as far as the check stays clean (a larger count
    # completes fewer groups, so the findings only grow with it), in program order: a
    # steady-state wait<0> is said to need only wait<1> rather than the epilogue's wait
    # after it being called unneeded.
    for (op, site), first in sites.items():
        counts = {r["n"] for r in working if r["op"] == "wait" and r.get("site") == site}
        if op != "wait" or guarded or len(counts) != 1:
            continue
        n = best = counts.pop()
        groups = sum(1 for r in working if r["op"] == "commit")
        while best + 1 < groups:
            trial = _without(working, op, site, best + 1)
            if _findings(trial, buffers):
                break
            best, working = best + 1, trial
        if best > n:
            named[(op, site)] = {
                "op": op, "site": site, "what": _what(first), "suffices": best,
                "text": f"{_what(first)} is stronger than needed: cp_async_wait<{best}> "
                        "suffices for every shared-memory dependence the check models"}
    # Then deletions, greedy from the last statement back: one found unneeded is deleted
    # before the next is tried, so that what is named can go together (two barriers side
    # by side are each unneeded alone, not both; of the two, the later one is named,
    # which keeps the first barrier after an mbarrier initialisation, the one that
    # publishes it, where the kernel adds one of its own).
    for (op, site), first in reversed(sites.items()):
        if op in ("wait", "bwait") and guarded:
            continue
        if op == "sync" and _stores_need(working, site):
            continue
        trial = _without(working, op, site, None)
        if op == "sync" and not any(r["op"] == "copy" for r in working):
            # No cp.async: of the checks, only the mbarrier model's initialisation rule
            # reads a barrier (``working`` is clean, and deleting a barrier changes no
            # phase, arrival, copy or read the rest of that model sees).
            if not init_findings(trial):
                named[(op, site)] = {"op": op, "site": site, "what": _what(first),
                                     "text": f"{_what(first)}: {UNNEEDED}"}
                working = trial
            continue
        if not _findings(trial, buffers):
            named[(op, site)] = {"op": op, "site": site, "what": _what(first),
                                 "text": f"{_what(first)}: {UNNEEDED}"}
            working = trial
    return [named[key] for key in order if key in named]
