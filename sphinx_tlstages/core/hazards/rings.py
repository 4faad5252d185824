"""The hazard check of mbarrier rings: TMA copies and the reads they feed (Hopper,
Blackwell), over the roles of a warp-specialised loop.

Each role (``producer``, ``consumer``, or ``all`` before the split, which every thread
runs) is one sequence of records (:mod:`...worker.hazards.trace`). An mbarrier counts
arrivals up to its init count and pending transaction bytes down to zero; then its phase
completes. The model:

- the arrivals of one barrier come from one role, in its order: each arrival belongs to
  the phase its running count says, and one that crosses a phase boundary is a finding
  (an init count lower than the arrivals that meet it) (PTX ISA, "mbarrier": "Phase
  Completion of the mbarrier object", "mbarrier.arrive"; ``cp.async.mbarrier.arrive.noinc``
  is one arrival per executing thread, "cp.async.mbarrier.arrive"); or from several roles
  (three warp groups), each making a fixed share of the count: the i-th arrival of each
  belongs to phase i, where none can come before phase i - 1 completed as its role knows
  (:func:`_shares`, :func:`_check_shares`; not checked otherwise);
- what a role knows of a barrier's phases comes from its own waits and, with three roles
  or more, from what the arrivals of a phase it knows completed knew when they were made
  (:func:`_knowledge`: release and acquire, transitively);
- a TMA copy belongs to the phase of the bytes last expected on its barrier, and its
  bytes have landed when that phase completes ("mbarrier.expect_tx", "cp.async.bulk.tensor":
  its complete-tx on the barrier has release semantics); a cp.async copy a
  ``cp.async.mbarrier.arrive`` tracks belongs to that arrival's phase and is performed
  and visible to a thread that sees the phase complete ("mbarrier.test_wait/try_wait");
- ``mbarrier_wait_parity(b, q)`` tells its role that one more phase of ``b`` completed
  only when the phases it knows of so far (k) have parity q (k mod 2 == q); otherwise it
  may return at once (a fresh barrier waited on with parity 1) ("mbarrier.test_wait/
  try_wait", ``.parity``: it waits for the completion of the phase of that parity). A
  wait for a phase the whole kernel never completes is a hang;
- a TMA copy and a read of the same bytes are ordered when the reader knows the copy's
  phase completed (the copy first), or when the copier knows a phase completed that an
  arrival of the reader's role made after the read retired (the read first; a wgmma
  read retires at the ``warpgroup_wait`` that covers its batch: "wgmma.wait_group").
  Neither is a race: the arrive is a release, the wait an acquire ("mbarrier.arrive",
  "mbarrier.test_wait/try_wait"; Memory Consistency Model, "Release and Acquire
  Patterns").
- barrier initialisation is fenced and followed by ``__syncthreads`` before first use
  ("mbarrier.init"; "membar/fence": ``fence.mbarrier_init``);
- a wgmma read of bytes a cp.async wrote needs ``fence.proxy.async`` after the wait
  (:func:`_check_data`): a ``PROXY`` finding otherwise.

- per phase of a barrier, the bytes expected on it (``expect_tx``) equal the bytes of the
  TMA copies that signal it (a tensor copy's box, read from the descriptor the host
  builds); fewer never complete the phase, more complete it early;
- a TMA multicast (``T.copy_cluster(..., cluster_mask=m)``) lands in every CTA of its
  mask at the same offsets and signals each CTA's own barrier: each CTA is checked as
  receiving it.

What it does not cover: the bytes of a copy whose descriptor the check cannot read (its
extent is taken to be the rest of the slot it starts in, its phase's bytes are not
compared), a multicast into bytes it rewrites (the other CTAs' reads are not seen: not
checked), arrivals on other CTAs' barriers.
"""

from __future__ import annotations

from bisect import bisect_right
from typing import Any

Json = dict[str, Any]


class Unchecked(Exception):
    """A ring the model does not cover; the message says why."""


_USES = ("bwait", "arrive", "expect", "tma")


def _sequences(records: list[Json]) -> dict[str, list[tuple[int, Json]]]:
    """Per role, the (trace index, record) it runs: its own and those of ``all``."""
    roles = sorted({r["role"] for r in records} - {"all"}) or ["all"]
    return {role: [(i, r) for i, r in enumerate(records) if r["role"] in (role, "all")]
            for role in roles}


def _slot_words(record: Json) -> str:
    return f" at {record['at']}" if record.get("at") else ""


class _First(Exception):
    """A first finding, where only whether there is one is asked."""


def check_rings(records: list[Json], first: bool = False) -> tuple[list[Json], Json]:
    """Findings of the mbarrier model, and what was checked (barriers, roles).
    ``first``: stop at the first finding (the search of :mod:`.needed` asks only
    whether there is one)."""
    findings: list[Json] = []
    init = {r["bar"]: r["count"] for r in records if r["op"] == "init"}

    def add(kind: str, record: Json, text: str) -> None:
        findings.append({"kind": kind, "buffer": record.get("buffer") or record.get("bar"),
                         "at": record.get("at", ""), "text": text})
        if first:
            raise _First

    if first:
        try:
            return _check(records, init, add, findings)
        except _First:
            return findings, {}
    return _check(records, init, add, findings)


def _check(records: list[Json], init: dict[str, int], add: Any, findings: list[Json]
           ) -> tuple[list[Json], Json]:
    """:func:`check_rings`'s rules in turn, each finding given to ``add``."""
    _check_init(records, add)
    _check_multicast(records)
    sequences = _sequences(records)
    # Phases: each arrival's and each copy's phase, per barrier, from the role that
    # arrives on it (or each role's share, :func:`_shares`); totals for the hang check.
    phase: dict[int, int] = {}
    shares = _shares(records, init)
    for seq in sequences.values():
        count: dict[str, int] = {}
        expected: dict[str, int] = {}
        for index, record in seq:
            bar = str(record.get("bar"))
            if record["op"] not in ("arrive", "expect", "tma") or bar not in init:
                continue
            if index in phase:  # a record of "all", seen from an earlier role
                continue
            # Arrivals per phase: the init count, or this role's share of it.
            per = shares.get(bar, {}).get(record["role"], init[bar])
            before = count.get(bar, 0)
            if record["op"] == "tma":
                if bar in shares:
                    raise Unchecked(f"{bar} has arrivals from several roles and TMA copies")
                if bar not in expected:
                    add("TX", record, f"the TMA copy into {record['buffer']}"
                        f"{_slot_words(record)} signals {bar} with no bytes expected on it")
                phase[index] = expected.get(bar, before // per)
                continue
            if record["op"] == "expect":
                expected[bar] = before // per
            arrived = record.get("n", 0)
            if arrived and before % per + arrived > per:
                add("ARRIVE", record, f"{arrived} arrivals on {bar}{_slot_words(record)} "
                    f"cross a phase: its init count is {init[bar]}")
            phase[index] = before // per
            count[bar] = before + arrived
    # What each role knows at each of its records: completed phases per barrier.
    known: dict[str, dict[int, dict[str, int]]] = {}
    for role, seq in sequences.items():
        now: dict[str, int] = {}
        known[role] = {}
        for index, record in seq:
            if record["op"] == "bwait" and record["bar"] in init:
                bar, have = record["bar"], now.get(record["bar"], 0)
                if have % 2 == record["parity"]:
                    now[bar] = have + 1
            known[role][index] = dict(now)
    # What a role learns through another role's arrivals matters where a role hears of a
    # copy from another consumer (three roles or more); two roles order their pairs by
    # their own waits, and the fixed point (a cost the search pays per statement) is
    # left out.
    transitive = bool(shares) or len(sequences) > 2
    full, seen = _knowledge(records, sequences, phase, known, shares, transitive)
    if shares:
        _check_shares(records, shares, phase, seen)
    # A cp.async copy tracked by a ``cp.async.mbarrier.arrive`` lands with that arrival:
    # its phase is the arrival's (PTX ISA, "mbarrier.test_wait/try_wait": the cp.async
    # operations requested before ``cp.async.mbarrier.arrive`` during the completed
    # phase are performed and made visible to the waiting thread).
    where = {id(r): i for i, r in enumerate(records)}
    for index, record in enumerate(records):
        arrive = record.get("signal") if record["op"] == "copy" else None
        if arrive is not None and where.get(id(arrive)) in phase \
                and arrive["bar"] in init:
            phase[index] = phase[where[id(arrive)]]
    _check_progress(sequences, init, add)
    bytes_checked = _check_bytes(records, phase, add)
    _check_data(records, sequences, phase, full, add)
    return findings, {"barriers": len(init), "roles": sorted(sequences),
                      "bytes": bytes_checked}


def _shares(records: list[Json], init: dict[str, int]) -> dict[str, dict[str, int]]:
    """Per barrier that several roles arrive on, each role's arrivals per phase.

    The i-th arrival of each role is taken to belong to phase i: sound where each role
    makes the same count of arrivals each time, the counts of the roles add up to the
    init count, and no role arrives for phase i before phase i - 1 completed
    (:func:`_check_shares`). Then the arrivals in the window between the completions of
    phases i - 1 and i are exactly each role's i-th: phase i completes with them, no
    sooner and no later (PTX ISA, "mbarrier": "Phase Completion of the mbarrier object":
    a phase completes when its pending arrival count reaches zero)."""
    made: dict[str, dict[str, set[int]]] = {}
    for record in records:
        bar = str(record.get("bar"))
        if record["op"] in ("arrive", "expect") and record.get("n") and bar in init:
            made.setdefault(bar, {}).setdefault(record["role"], set()).add(record["n"])
    shares: dict[str, dict[str, int]] = {}
    for bar, roles in made.items():
        if len(roles) < 2:
            continue
        if "all" in roles or any(len(counts) != 1 for counts in roles.values()) \
                or sum(min(counts) for counts in roles.values()) != init[bar]:
            raise Unchecked(f"{bar} has arrivals from several roles that do not each make "
                            "a fixed share of its count")
        shares[bar] = {role: min(counts) for role, counts in roles.items()}
    return shares


def _check_shares(records: list[Json], shares: dict[str, dict[str, int]],
                  phase: dict[int, int], seen: dict[int, tuple[dict[str, int], dict[str, int]]]
                  ) -> None:
    """Each role's arrival for phase i of a barrier several roles arrive on comes after
    phase i - 1 completed, as the role knows it (:func:`_knowledge`). Unchecked
    otherwise."""
    for index, record in enumerate(records):
        bar = str(record.get("bar"))
        if bar not in shares or index not in phase or not phase[index] \
                or record["op"] not in ("arrive", "expect") or not record.get("n"):
            continue
        if seen.get(index, ({}, {}))[0].get(bar, 0) < phase[index]:
            raise Unchecked(f"{bar} has arrivals from several roles, and the "
                            f"{record['role']}'s{_slot_words(record)} is not known to come "
                            f"after phase {phase[index] - 1} completed")


# Completed phases known, per barrier; and per ("made", barrier, role), the arrivals of
# that role on a barrier several roles arrive on known made.
Known = dict[Any, int]


def _knowledge(records: list[Json], sequences: dict[str, list[tuple[int, Json]]],
               phase: dict[int, int], known: dict[str, dict[int, dict[str, int]]],
               shares: dict[str, dict[str, int]], transitive: bool = True
               ) -> tuple[dict[str, dict[int, tuple[Known, Known]]],
                          dict[int, tuple[Known, Known]]]:
    """What each role knows at each of its records: the phases it knows completed, from
    its own waits (``known``) and from what the arrivals of each phase it knows completed
    knew when they were made (an arrive is a release, the wait that sees its phase
    complete an acquire: PTX ISA, "mbarrier.arrive", "mbarrier.test_wait/try_wait";
    Memory Consistency Model, "Release and Acquire Patterns"; the order is transitive,
    "Causality Order"); and of those, the ones a ``fence.proxy.async`` followed on the
    way ("Causality Order": proxy-preserved base causality order, a proxy fence on the
    path). A phase of a barrier several roles arrive on (``shares``) is also known
    complete once every thread's arrival for it is known made (known from the arrivals of
    a phase the role waited for, whose threads had made it before: a thread's own arrival
    in program order tells it nothing of its role's other threads): its pending count
    reached zero (PTX ISA, "mbarrier": "Phase Completion of the mbarrier object"). Also
    what each arrival's role knew when it arrived (a record of ``all``: what every role
    knew). Computed to a fixed point: knowledge only grows (``transitive=False``: a role's
    own waits only)."""
    if not transitive:  # a role's own waits, and the proxy fences after them
        own: dict[str, dict[int, tuple[Known, Known]]] = {}
        for role, seq in sequences.items():
            after: Known = {}
            own[role] = {}
            for index, record in seq:
                here: Known = known[role].get(index, {})
                if record["op"] == "pfence":
                    after = {bar: max(n, after.get(bar, 0)) for bar, n in here.items()}
                own[role][index] = (here, after)
        return own, {}
    made: dict[tuple[str, int], list[int]] = {}  # (barrier, phase) -> its arrivals
    for index, record in enumerate(records):
        if record["op"] in ("arrive", "expect") and record.get("n") and index in phase:
            made.setdefault((str(record["bar"]), phase[index]), []).append(index)
    seen: dict[int, tuple[Known, Known]] = {}
    while True:
        fresh: dict[int, tuple[Known, Known]] = {}
        full: dict[str, dict[int, tuple[Known, Known]]] = {}
        for role, seq in sequences.items():
            now: Known = {}
            fenced: Known = {}
            taken: Known = {}  # phases whose arrivals' knowledge is taken, per barrier
            # The arrivals each thread of the role made itself: known to the thread, not
            # to the role's other threads until a wait tells them.
            mine: Known = {}
            full[role] = {}
            current: tuple[Known, Known] = ({}, {})  # shared by records until it changes
            for index, record in seq:
                stale = False
                for bar, count in known[role].get(index, {}).items():
                    if now.get(bar, 0) < count:
                        now[bar], stale = count, True
                pending = stale
                while pending:  # what the arrivals of each phase known completed knew
                    pending = False
                    for bar, roles in shares.items():  # each role's arrival known made
                        done = min(now.get(("made", bar, r), 0) for r in roles)
                        if now.get(bar, 0) < done:
                            now[bar] = done
                    for bar in [b for b in now if isinstance(b, str)
                                and now[b] > taken.get(b, 0)]:
                        count = now[bar]
                        for number in range(taken.get(bar, 0), count):
                            for arrival in made.get((bar, number), []):
                                knew, fence = seen.get(arrival, ({}, {}))
                                for name, n in knew.items():
                                    if now.get(name, 0) < n:
                                        now[name], pending = n, True
                                for name, n in fence.items():
                                    if fenced.get(name, 0) < n:
                                        fenced[name] = n
                        taken[bar] = count
                if record["op"] == "pfence":
                    fenced, stale = {bar: max(n, fenced.get(bar, 0))
                                     for bar, n in now.items()}, True
                if index in phase and record["op"] in ("arrive", "expect"):
                    # What a thread that waits for this arrival's phase learns: what this
                    # role knew, and the arrivals each of its threads made before it.
                    lo, hi = record.get("threads") or (0, -1)
                    every = record.get("n") == hi - lo + 1  # not one elected thread's
                    knew = {**now, **{key: max(n, now.get(key, 0))
                                      for key, n in mine.items() if every}}
                    other = fresh.get(index)
                    fresh[index] = (knew, dict(fenced)) if other is None else (
                        {b: min(n, knew.get(b, 0)) for b, n in other[0].items()},
                        {b: min(n, fenced.get(b, 0)) for b, n in other[1].items()})
                    if str(record["bar"]) in shares:
                        key = ("made", str(record["bar"]), role)
                        mine[key] = mine.get(key, 0) + 1
                if stale:
                    current = (dict(now), dict(fenced))
                full[role][index] = current
        if fresh == seen:
            return full, seen
        seen = fresh


def _check_multicast(records: list[Json]) -> None:
    """A multicast lands in the other CTAs of its cluster too: bytes it writes again
    (a reused slot) may still be read there, which a CTA's own trace cannot see."""
    tmas = [r for r in records if r["op"] == "tma"]
    if not any(r.get("multicast") for r in tmas):
        return
    for i, first in enumerate(tmas):
        for second in tmas[i + 1:]:
            if (first.get("multicast") or second.get("multicast")) \
                    and first["root"] == second["root"] and first["lo"] <= second["hi"] \
                    and second["lo"] <= first["hi"]:
                raise Unchecked(f"a TMA multicast rewrites bytes of {second['buffer']}: "
                                "the other CTAs' reads of them are not modelled")


def _check_bytes(records: list[Json], phase: dict[int, int], add: Any) -> bool:
    """Per phase of each barrier, the bytes expected on it against the bytes of the TMA
    copies that signal it (a copy's box, from its descriptor). Phases whose copies'
    bytes are unknown are not compared; whether every phase was compared comes back."""
    expected: dict[tuple[str, int], tuple[int, Json]] = {}
    landed: dict[tuple[str, int], int | None] = {}
    for index, record in enumerate(records):
        if index not in phase or record["op"] not in ("expect", "tma"):
            continue
        key = (str(record["bar"]), phase[index])
        if record["op"] == "expect":
            before, first = expected.get(key, (0, record))
            expected[key] = (before + record["bytes"], first)
        else:
            got = landed.get(key, 0)
            landed[key] = None if got is None or record.get("bytes") is None \
                else got + record["bytes"]
    compared = True
    for key, (wanted, record) in expected.items():
        got = landed.get(key, 0)
        if got is None:
            compared = False
        elif got != wanted:
            bar, number = key
            add("TX", record, f"{bar} expects {wanted} bytes{_slot_words(record)} (phase "
                f"{number}) but the TMA copies signalling it bring {got}: its phase "
                + ("never completes" if got < wanted else "completes before they land"))
    return compared


def _check_progress(sequences: dict[str, list[tuple[int, Json]]], init: dict[str, int],
                    add: Any) -> None:
    """Run the roles side by side, each as far as its waits let it (a wait blocks until
    the phase it asks for has completed from the arrivals made so far): roles that all
    block before their end hang."""
    at = dict.fromkeys(sequences, 0)
    arrived: dict[str, int] = {}
    applied: set[int] = set()  # an "all" record's arrivals count once
    seen: dict[str, dict[str, int]] = {role: {} for role in sequences}
    moved = True
    while moved:
        moved = False
        for role, seq in sequences.items():
            while at[role] < len(seq):
                index, record = seq[at[role]]
                bar = str(record.get("bar"))
                if record["op"] == "bwait" and bar in init:
                    have = seen[role].get(bar, 0)
                    if have % 2 == record["parity"]:
                        if arrived.get(bar, 0) < (have + 1) * init[bar]:
                            break
                        seen[role][bar] = have + 1
                elif record["op"] in ("arrive", "expect") and index not in applied:
                    applied.add(index)
                    arrived[bar] = arrived.get(bar, 0) + record.get("n", 0)
                at[role] += 1
                moved = True
    for role, seq in sequences.items():
        if at[role] < len(seq):
            record = seq[at[role]][1]
            add("HANG", record, f"the {role} waits{_slot_words(record)} on {record['bar']} "
                f"for phase {seen[role].get(record['bar'], 0)}, which the arrivals made "
                "before it can complete never complete")
            return


def init_findings(records: list[Json]) -> list[str]:
    """The findings of the initialisation rule alone (:func:`_check_init`): the only part
    of :func:`check_rings` a ``__syncthreads`` or named barrier takes part in."""
    found: list[str] = []
    _check_init(records, lambda kind, record, text: found.append(text))
    return found


def _check_init(records: list[Json], add: Any) -> None:
    """Initialisation fenced, then ``__syncthreads``, before the first use."""
    state = "none"
    for record in records:
        op = record["op"]
        if op == "init":
            state = "init"
        elif op == "fence" and state == "init":
            state = "fenced"
        elif op == "sync" and state == "fenced":
            state = "ready"
        elif op in _USES and state in ("init", "fenced"):
            add("INIT", record, f"{record['bar']} is used{_slot_words(record)} before its "
                "initialisation is fenced and followed by __syncthreads")
            return


def _check_data(records: list[Json], sequences: dict[str, list[tuple[int, Json]]],
                phase: dict[int, int], known: dict[str, dict[int, tuple[Known, Known]]],
                add: Any) -> None:
    """Every TMA copy against every read of its bytes: ordered one way or the other
    (``known``: what each role knows at each record, and what a proxy fence followed:
    :func:`_knowledge`)."""
    retired = _retirements(sequences)
    copies = [(i, dict(r, bar=r["signal"]["bar"]) if r["op"] == "copy" else r)
              for i, r in enumerate(records)
              if r["op"] in ("tma", "copy") and i in phase]
    # Reads by allocation, in trace order, with their bytes (the pairs below are many).
    reads: dict[Any, list[tuple[int, int, int, Json]]] = {}
    for i, r in enumerate(records):
        if r["op"] == "read":
            reads.setdefault(r["root"], []).append((i, r["lo"], r["hi"], r))
    # Arrivals after each read retired, per role: the indices of its arrivals, and from
    # each one on, the least phase arrived on per barrier (a copier that knows a later
    # phase of a barrier waited for an arrival after the read: only the least matters).
    arrivals: dict[str, tuple[list[int], list[dict[str, int]]]] = {}
    for role, seq in sequences.items():
        made = [(i, r["bar"], phase[i]) for i, r in seq
                if r["op"] in ("arrive", "expect") and r.get("n") and i in phase]
        least: list[dict[str, int]] = [{}]
        for _, bar, number in reversed(made):
            here = dict(least[-1])
            here[bar] = min(here.get(bar, number), number)
            least.append(here)
        arrivals[role] = ([i for i, _, _ in made], least[::-1])
    reported: set[tuple[str, str]] = set()
    for ci, copy in copies:
        first, last = copy["lo"], copy["hi"]
        for ri, lo, hi, read in reads.get(copy["root"], ()):
            if last < lo or hi < first:
                continue
            reader = read["role"] if read["role"] != "all" else next(iter(known))
            who = "every thread" if read["role"] == "all" else f"the {read['role']}"
            if copy["op"] == "copy" and copy["role"] == read["role"]:
                continue  # one role's own cp.async copies: the cp.async model's
            knows, fenced = known[reader].get(ri, ({}, {}))
            if knows.get(copy["bar"], 0) > phase[ci]:
                # cp.async writes through the generic proxy (PTX ISA, "cp.async": "a weak
                # memory operation performed in the generic proxy"); wgmma reads shared
                # memory through the async proxy ("Asynchronous Warpgroup Level Matrix
                # Multiply-Accumulate Operation"). Base causality order carries a write to
                # a read only when both use the generic proxy or the same proxy (Memory
                # Consistency Model, "Causality Order": proxy-preserved base causality
                # order); the bridge is ``fence.proxy.async`` ("membar/fence": a
                # bi-directional proxy fence between the generic and the async proxy),
                # which the wgmma steps put before the wgmma "to make the generic proxy
                # operations visible to the async proxy". The model gives no formal rule
                # for where on the path it must stand; the check asks for it after a wait
                # that tells a thread of the path the copy's phase completed, before the
                # read (in the reader's role, or in a role whose arrival the reader then
                # waited for: :func:`_knowledge`).
                if copy["op"] == "copy" and read.get("how") == "wgmma" \
                        and fenced.get(copy["bar"], 0) <= phase[ci] \
                        and ("PROXY", read["buffer"]) not in reported:
                    reported.add(("PROXY", read["buffer"]))
                    add("PROXY", read, f"{who}'s wgmma reads {read['buffer']}"
                        f"{_slot_words(read)} through the async proxy what the cp.async"
                        f"{_slot_words(copy)} wrote through the generic proxy, with no "
                        f"fence.proxy.async between its wait on {copy['bar']} and the "
                        "read (PTX ISA: \"Causality Order\", proxy-preserved base "
                        "causality order; \"membar/fence\"; the wgmma steps)")
                continue  # the reader waited for the copy's phase
            copier = copy["role"] if copy["role"] != "all" else reader
            done = retired.get(ri, ri)
            if copy["role"] == read["role"] and done < ci and read["role"] != "all":
                continue  # one role, program order (a TMA is issued after the read)
            indices, least = arrivals.get(read["role"], ([], [{}]))
            after = least[bisect_right(indices, done)]
            sees = known[copier].get(ci, ({}, {}))[0]
            if any(sees.get(bar, 0) > p for bar, p in after.items()):
                continue  # the copier waited for an arrival made after the read
            kind = "WAR" if _iteration(copy) > _iteration(read) else "RAW"
            if (kind, read["buffer"]) in reported:
                continue
            reported.add((kind, read["buffer"]))
            how = "TMA copy" if copy["op"] == "tma" else "cp.async"
            if kind == "RAW":
                text = (f"{who} reads {read['buffer']}{_slot_words(read)} while "
                        f"the {how} into it{_slot_words(copy)} may not have landed: no "
                        f"wait on {copy['bar']} covers it")
            else:
                text = (f"the {how} into {copy['buffer']}{_slot_words(copy)} may "
                        f"overwrite what {who} reads{_slot_words(read)}: no "
                        "wait on an arrival made after that read covers it")
            add(kind, read if kind == "RAW" else copy, text)


def _iteration(record: Json) -> int:
    """The iteration of the outermost unrolled loop a record is in (-1: before any)."""
    at = str(record.get("at") or "")
    first = at.split(" ")[0].split("=")[-1]
    return int(first) if first.lstrip("-").isdigit() else -1


def _retirements(sequences: dict[str, list[tuple[int, Json]]]) -> dict[int, int]:
    """For each asynchronous (wgmma) read, the index of the ``warpgroup_wait`` that
    retires it (past the end when none does)."""
    retired: dict[int, int] = {}
    for seq in sequences.values():
        pending: list[tuple[int, int]] = []  # (read index, batch)
        batches = 0
        for index, record in seq:
            if record["op"] == "read" and record.get("async"):
                pending.append((index, batches + 1))
            elif record["op"] == "wgcommit":
                batches += 1
            elif record["op"] == "wgwait":
                still = []
                for read, batch in pending:
                    if batch <= batches - record["n"]:
                        retired[read] = index
                    else:
                        still.append((read, batch))
                pending = still
        for read, _ in pending:
            retired[read] = 1 << 30
    return retired
