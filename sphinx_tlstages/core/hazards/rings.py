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
  is one arrival per executing thread, "cp.async.mbarrier.arrive");
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
  Patterns"), and knowing is transitive: a role that waited for a phase another role
  arrived on after its own wait knows what that role knew (:func:`_learned`);
- a tcgen05 MMA's descriptor reads (Blackwell) retire when the phase of the
  ``tcgen05.commit`` that tracks them completes ("tcgen05.mma", "tcgen05.commit": one
  arrive-on, made when every earlier asynchronous tcgen05 operation of the committing
  thread completed): a copier that waits for that phase, or for an arrival the MMA's
  role made after its own wait on it, is ordered after them;
- a barrier several roles arrive on (:func:`_shared_phases`): each arrival counts
  towards the phase its role knows the ones before it completed, each phase exactly
  its init count; with plain arrivals only, its first ``k`` phases are known complete
  once ``k`` times its init count of arrivals are known made (:func:`_learned`: an
  arrival every thread of a role makes tells that the role's earlier ones were made;
  "Phase Completion of the mbarrier object");
- barrier initialisation is fenced and followed by ``__syncthreads`` before first use
  ("mbarrier.init"; "membar/fence": ``fence.mbarrier_init``);
- a wgmma read of bytes a cp.async wrote needs ``fence.proxy.async`` on the way from
  the wait to the read (the reader's own, or one made before an arrival
  the reader then waited for: :func:`_learned`): a ``PROXY`` finding otherwise.

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
# What a role knows at a record: per barrier, the phases it knows completed; per
# ("fenced", barrier), those of them a ``fence.proxy.async`` followed on the way.
Known = dict[Any, int]


class Unchecked(Exception):
    """A ring the model does not cover; the message says why."""


_USES = ("bwait", "arrive", "expect", "tma")


def _sequences(records: list[Json]) -> dict[str, list[tuple[int, Json]]]:
    """Per role, the (trace index, record) it runs: its own and those of every role whose
    threads include its own (``all``, run by every thread before and after the split; a
    role split again into warp groups: its code outside the inner split). A role is a
    group of threads that runs beside the others: only the innermost ones are run."""
    groups: dict[str, tuple[int, int]] = {}
    for record in records:
        if record["role"] != "all":
            groups.setdefault(record["role"], tuple(record.get("group") or (0, 0)))

    def within(inner: tuple[int, int], outer: tuple[int, int]) -> bool:
        return outer[0] <= inner[0] and inner[1] <= outer[1]

    leaves = sorted(role for role, span in groups.items()
                    if not any(other != role and within(groups[other], span)
                               for other in groups)) or ["all"]

    def runs(leaf: str, record: Json) -> bool:
        role = record["role"]
        return role in ("all", leaf) or (
            role in groups and leaf in groups and role not in leaves
            and within(groups[leaf], groups[role]))

    return {leaf: [(i, r) for i, r in enumerate(records) if runs(leaf, r)]
            for leaf in leaves}


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
    # Phases: each arrival's and each copy's phase, per barrier, from the one role that
    # arrives on it (a barrier several roles arrive on: :func:`_shared_phases`).
    owners: dict[str, set[str]] = {}
    for record in records:
        if record["op"] in ("arrive", "expect") and record.get("n") \
                and record.get("bar") in init:
            owners.setdefault(record["bar"], set()).add(record["role"])
    shared = {bar for bar, roles in owners.items() if len(roles) > 1}
    for bar in sorted(shared):
        if any(role not in sequences for role in owners[bar]):
            raise Unchecked(f"{bar} has arrivals from two roles, some made by threads of "
                            "more than one")
    phase: dict[int, int] = {}
    for seq in sequences.values():
        count: dict[str, int] = {}
        expected: dict[str, int] = {}
        for index, record in seq:
            bar = str(record.get("bar"))
            if record["op"] not in ("arrive", "expect", "tma") or bar not in init \
                    or bar in shared:
                continue
            if index in phase:  # a record of "all", seen from an earlier role
                continue
            before = count.get(bar, 0)
            if record["op"] == "tma":
                if bar not in expected:
                    add("TX", record, f"the TMA copy into {record['buffer']}"
                        f"{_slot_words(record)} signals {bar} with no bytes expected on it")
                phase[index] = expected.get(bar, before // init[bar])
                continue
            if record["op"] == "expect":
                expected[bar] = before // init[bar]
            arrived = record.get("n", 0)
            if arrived and before % init[bar] + arrived > init[bar]:
                add("ARRIVE", record, f"{arrived} arrivals on {bar}{_slot_words(record)} "
                    f"cross a phase: its init count is {init[bar]}")
            phase[index] = before // init[bar]
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
    counted = _counted(records, shared, init)
    if shared:
        _shared_phases(sequences, shared, init, phase, known, counted)
    _check_progress(sequences, init, add)
    bytes_checked = _check_bytes(records, phase, add)
    # Orders reach a role through other roles too (release and acquire are transitive).
    _check_data(records, sequences, phase, _learned(sequences, phase, known, counted),
                add)
    return findings, {"barriers": len(init), "roles": sorted(sequences),
                      "bytes": bytes_checked}


# Rounds of settling the phases of barriers several roles arrive on (each a pass of
# :func:`_learned` over the whole walk, which settles at least one more phase): the
# kernels of the tests settle in at most 4, TileLang's warp-specialised MLA decode (a 16-tile
# loop) in 72, whose check then cost four times its lowering. Past this, not checked.
_ROUNDS = 8


def _shared_phases(sequences: dict[str, list[tuple[int, Json]]], shared: set[str],
                   init: dict[str, int], phase: dict[int, int],
                   known: dict[str, dict[int, dict[str, int]]],
                   counted: dict[str, int]) -> None:
    """The phases of the barriers several roles arrive on (two consumer warp groups
    releasing one slot, 128 arrivals each on a count of 256; or one group's first
    arrival and another's later ones). A phase completes when its pending count reaches
    zero, whoever arrived (PTX ISA, "mbarrier": "Phase Completion of the mbarrier
    object"), so which phase an arrival counts towards depends on the order of the
    roles' arrivals. The model gives each arrival the phase ``k`` its role knows the
    phases before it completed (:func:`_learned`: by a wait of its own, through the
    arrivals another role's wait observed, or from the arrivals known made), and holds
    each phase to exactly the init count (the last one to at most): then no arrival can
    count towards a phase other than its own, by induction over the phases (each phase's
    arrivals come after the phase before it completed). What a role learns through a
    shared barrier's arrivals depends on their phases: they are settled a prefix at a
    time (each phase up to the first whose count is wrong), given again with what the
    settled ones teach, and where two barriers' phases rest on each other the next phase
    of one is guessed (:func:`_guess`); the result must be a fixed point, every guess
    confirmed (an arrival whose role then knows its own phase completed before it
    arrived contradicts them). Where they do not settle, or the counts do not add up,
    the barrier is outside the model. A TMA copy and
    an ``expect_tx`` without arrival belong to the phase of their role's next arrival on
    the barrier."""
    given: dict[int, int] = {}  # the phases settled so far
    guessed: dict[int, int] = {}  # the phases guessed, to be settled or refuted
    for _ in range(_ROUNDS):
        learned = _learned(sequences, {**phase, **given, **guessed}, known, counted)
        fresh, totals = _phases_known(sequences, shared, learned)
        sound = _sound(shared, init, totals)
        settled = {index: number for index, (bar, number) in fresh.items()
                   if number < sound[bar]}
        if settled != given:
            given = settled
            continue
        if len(given) == len(fresh):
            break
        # Stuck: what would settle the next phase of a barrier rests on phases of
        # another that rest on it (two groups each waiting on what the other arrived
        # on). Its arrivals are guessed, the earliest unsettled one of each role, and
        # kept only if what the roles then know gives them that phase.
        guess = _guess(sequences, shared, init, fresh, given, sound, guessed)
        if not guess:
            break
        guessed.update(guess)
    else:  # still changing after as many rounds as the check's cost allows
        raise Unchecked(f"{', '.join(sorted(shared))} have arrivals from several roles "
                        "whose phases settle a phase at a time, in more rounds than the "
                        f"check allows itself ({_ROUNDS}, each a pass over the whole walk)")
    if len(given) < len(fresh) or any(given.get(i) != n for i, n in guessed.items()):
        _unsettled(init, fresh, totals, sound, given, guessed)
    phase.update(given)


def _phases_known(sequences: dict[str, list[tuple[int, Json]]], shared: set[str],
                  learned: dict[str, dict[int, dict[str, int]]]
                  ) -> tuple[dict[int, tuple[str, int]], dict[tuple[str, int], int]]:
    """Each arrival's (and each copy's and expectation's) barrier and phase on the shared
    barriers, as its role knows it (``learned``), and the arrivals counted per phase."""
    fresh: dict[int, tuple[str, int]] = {}
    totals: dict[tuple[str, int], int] = {}
    for role, seq in sequences.items():
        waiting: list[int] = []  # copies and expectations before the next arrival
        for index, record in seq:
            bar = record.get("bar")
            if bar not in shared or record["role"] != role \
                    or record["op"] not in ("arrive", "expect", "tma"):
                continue
            if record["op"] == "tma" or not record.get("n"):
                waiting.append(index)
                continue
            number = learned[role][index].get(bar, 0)
            fresh[index] = (bar, number)
            totals[(bar, number)] = totals.get((bar, number), 0) + record["n"]
            for other in waiting:
                fresh[other] = (bar, number)
            waiting = []
    return fresh, totals


def _sound(shared: set[str], init: dict[str, int],
           totals: dict[tuple[str, int], int]) -> dict[str, int]:
    """Settled: each barrier's phases up to the first whose count is not its init count
    (the last may take fewer); what their arrivals knew is learned next time."""
    sound: dict[str, int] = {}
    for bar in shared:
        last = max(n for b, n in totals if b == bar)
        upto = 0
        while upto <= last and (totals.get((bar, upto), 0) == init[bar] or (
                upto == last and totals.get((bar, upto), 0) < init[bar])):
            upto += 1
        sound[bar] = upto
    return sound


def _unsettled(init: dict[str, int], fresh: dict[int, tuple[str, int]],
               totals: dict[tuple[str, int], int], sound: dict[str, int],
               given: dict[int, int], guessed: dict[int, int]) -> None:
    """Raise for the barriers whose phases did not settle, each named (one's phases may
    rest on another's)."""
    left = [(bar, number, total) for (bar, number), total in sorted(totals.items())
            if number >= sound[bar]] or [
        (bar, number, totals[(bar, number)]) for bar, number in sorted(
            fresh[i] for i in guessed if given.get(i) != guessed[i])]
    names = list(dict.fromkeys(bar for bar, _, _ in left))
    bar, number, total = left[0]
    raise Unchecked(f"{', '.join(names)} {'has' if len(names) == 1 else 'have'} "
                    "arrivals from several roles whose phases the check cannot tell "
                    f"({total} arrivals known to count towards phase {number} of "
                    f"{bar}, of {init[bar]})")


def _guess(sequences: dict[str, list[tuple[int, Json]]], shared: set[str],
           init: dict[str, int], fresh: dict[int, tuple[str, int]], given: dict[int, int],
           sound: dict[str, int], guessed: dict[int, int]) -> dict[int, int]:
    """A guess at the next phase of the first barrier not settled and not guessed
    already: of each role, its earliest arrival on it not settled, where what the role
    knows allows that phase; none unless they make up the init count exactly."""
    for bar in sorted(shared):
        number = sound[bar]
        taken: dict[int, int] = {}
        for role, seq in sequences.items():
            for index, record in seq:
                if record.get("bar") == bar and record["role"] == role \
                        and record["op"] in ("arrive", "expect") and record.get("n") \
                        and index not in given:
                    if fresh[index][1] <= number:
                        taken[index] = record["n"]
                    break
        if taken and sum(taken.values()) == init[bar] \
                and any(guessed.get(index) != number for index in taken):
            return dict.fromkeys(taken, number)
    return {}


def _counted(records: list[Json], shared: set[str], init: dict[str, int]) -> dict[str, int]:
    """The barriers several roles arrive on whose phases are counted from arrivals known
    made (:func:`_learned`), by init count: those with plain arrivals only (no expected
    bytes, which a phase also waits for; no arrival a cp.async or a tcgen05 commit makes
    later than the thread runs it: "cp.async.mbarrier.arrive", "tcgen05.commit")."""
    other = {r["bar"] for r in records if r["op"] in ("expect", "tma")
             or (r["op"] == "arrive" and ("cp" in r or "commit" in r))}
    return {bar: init[bar] for bar in shared if bar not in other}


def _learned(sequences: dict[str, list[tuple[int, Json]]], phase: dict[int, int],
             known: dict[str, dict[int, dict[str, int]]],
             counted: dict[str, int] | None = None
             ) -> dict[str, dict[int, Known]]:
    """What each role knows at each record, its own waits' phases (``known``) closed
    over the arrivals: a wait that observes a phase complete learns what every role
    arriving in that phase knew when it arrived (the arrive is a release, the wait an
    acquire: PTX ISA, "mbarrier.arrive", "mbarrier.test_wait/try_wait"; Memory
    Consistency Model, "Release and Acquire Patterns", whose order is transitive). A
    fixed point, each role's knowledge only growing.

    ``counted``: barriers several roles arrive on with plain arrivals only (no expected
    bytes, no arrival made later by a cp.async or a tcgen05 commit), by init count. An
    arrival every thread of its role makes also tells the waiter that the role's earlier
    arrivals on them were made (each thread made its own before, in program order; one
    elected thread's tells nothing of the others'); once ``k`` times the init count of
    arrivals on one are known made, its first ``k`` phases are known complete, whichever
    phase each arrival counted towards (PTX ISA, "mbarrier": "Phase Completion of the
    mbarrier object": a phase completes when its pending arrival count reaches zero)."""
    counted = counted or {}
    made: dict[tuple[str, int], list[tuple[str, int]]] = {}
    for role, seq in sequences.items():
        for index, record in seq:
            if record["op"] in ("arrive", "expect") and record.get("n") and index in phase:
                made.setdefault((record["bar"], phase[index]), []).append((role, index))
    full: dict[str, dict[int, Known]] = {
        role: {index: dict(now) for index, now in seen.items()} for role, seen in known.items()}
    # What a waiter learns from each arrival, by its role and trace index: the phases (and
    # fenced phases) its role knew, and the arrivals it knew made, ("made", bar, role).
    sent: dict[tuple[str, int], tuple[dict[Any, int], dict[Any, int]]] = {}
    changed = True
    while changed:
        changed = False
        for role, seq in sequences.items():
            now: dict[Any, int] = {}  # phases known complete, and fenced ones
            arrived: dict[Any, int] = {}  # arrivals known made, ("made", bar, role)
            totals: dict[str, int] = {}  # their sum per barrier
            before: dict[str, int] = {}
            mine: dict[Any, int] = {}  # the role's own plain arrivals so far, per barrier
            for index, record in seq:
                direct = known[role][index]
                for bar, count in direct.items():
                    now[bar] = max(now.get(bar, 0), count)
                    if count > before.get(bar, 0):  # a wait observed phase count - 1
                        for at in made.get((bar, count - 1), []):
                            told = sent.get(at)
                            if told is None:
                                continue
                            for what, number in told[0].items():
                                now[what] = max(now.get(what, 0), number)
                            for what, number in told[1].items():
                                had = arrived.get(what, 0)
                                if number > had:
                                    arrived[what] = number
                                    totals[what[1]] = totals.get(what[1], 0) + number - had
                before = direct
                for bar, count in counted.items():  # phases whose arrivals are all made
                    now[bar] = max(now.get(bar, 0), totals.get(bar, 0) // count)
                if record["op"] == "pfence":  # what it knows is now fenced too
                    now.update({("fenced", bar): n for bar, n in now.items()
                                if isinstance(bar, str)})
                if record["op"] in ("arrive", "expect") and record.get("n"):
                    # Every thread of the role arrives here: each made its own earlier
                    # arrivals before (program order), so the role's are all made.
                    lo, hi = record.get("group") or (0, -1)
                    tell = (dict(now), {**arrived, **mine} if record["n"] == hi - lo + 1
                            else dict(arrived))
                    if sent.get((role, index)) != tell:
                        sent[role, index], changed = tell, True
                    if record["bar"] in counted and record["role"] == role:
                        key = ("made", record["bar"], role)
                        mine[key] = mine.get(key, 0) + record["n"]
                if now != full[role][index]:
                    full[role][index] = dict(now)
                    changed = True
    return full


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
                phase: dict[int, int], known: dict[str, dict[int, Known]],
                add: Any) -> None:
    """Every TMA copy against every read of its bytes: ordered one way or the other."""
    retired = _retirements(sequences)
    # A record of ``all`` or of a role split again is run by several roles: it is judged
    # as the first of them runs it.
    first_runner: dict[int, str] = {}
    for role, seq in sequences.items():
        for index, _ in seq:
            first_runner.setdefault(index, role)
    copies = [(i, dict(r, bar=r["signal"]["bar"]) if r["op"] == "copy" else r)
              for i, r in enumerate(records)
              if r["op"] in ("tma", "copy") and i in phase]
    # Reads by allocation, in trace order, with their bytes (the pairs below are many).
    reads: dict[Any, list[tuple[int, int, int, Json]]] = {}
    for i, r in enumerate(records):
        if r["op"] == "read":
            reads.setdefault(r["root"], []).append((i, r["lo"], r["hi"], r))
    arrivals = _arrivals_after(sequences, phase)
    # Each tcgen05 commit's barrier and phase, by its number (a tcgen05 MMA's reads retire
    # when that phase completes).
    commits = {r["commit"]: (r["bar"], phase[i]) for i, r in enumerate(records)
               if r["op"] == "arrive" and r.get("commit") and i in phase}
    reported: set[tuple[str, str]] = set()
    unsure: list[str] = []  # unordered pairs not known to overlap: no finding alone
    for ci, copy in copies:
        first, last = copy["lo"], copy["hi"]
        for ri, lo, hi, read in reads.get(copy["root"], ()):
            if last < lo or hi < first:
                continue
            reader = first_runner[ri]
            who = "every thread" if read["role"] == "all" else f"the {read['role']}"
            if copy["op"] == "copy" and copy["role"] == read["role"]:
                continue  # one role's own cp.async copies: the cp.async model's
            if known[reader].get(ri, {}).get(copy["bar"], 0) > phase[ci]:
                # cp.async writes through the generic proxy (PTX ISA, "cp.async": "a weak
                # memory operation performed in the generic proxy"); wgmma reads shared
                # memory through the async proxy ("Asynchronous Warpgroup Level Matrix
                # Multiply-Accumulate Operation"). Base causality order carries a write
                # to a read only when both use the generic proxy or the same proxy
                # (Memory Consistency Model, "Causality Order": proxy-preserved base
                # causality order); the bridge is ``fence.proxy.async`` ("membar/fence":
                # a bi-directional proxy fence between the generic and the async proxy),
                # which the wgmma steps put before the wgmma "to make the generic proxy
                # operations visible to the async proxy". The model gives no formal rule
                # for where on the path it must stand; the check asks for it after a wait
                # that tells a thread of the path the copy's phase completed, before the
                # read: in the reader's role, or in a role whose arrival the reader then
                # waited for (:func:`_learned`, ``("fenced", barrier)``).
                fenced = known[reader].get(ri, {}).get(("fenced", copy["bar"]), 0)
                if copy["op"] == "copy" and read.get("how") in ("wgmma", "tcgen05.mma") \
                        and fenced <= phase[ci] \
                        and ("PROXY", read["buffer"]) not in reported:
                    reported.add(("PROXY", read["buffer"]))
                    add("PROXY", read, _race_text("PROXY", copy, read, who))
                continue  # the reader waited for the copy's phase
            copier = copy["role"] if copy["role"] in known else reader
            done = retired.get(ri, ri)
            sees = known[copier].get(ci, {})
            if read.get("umma"):
                tracked = commits.get(read.get("commit"))
                if tracked is not None and sees.get(tracked[0], 0) > tracked[1]:
                    continue  # the copier waited for the MMA's commit itself
                done = _umma_retired(sequences[reader], known[reader], tracked)
            if copy["role"] == read["role"] and done < ci and read["role"] in known:
                continue  # one role, program order (a TMA is issued after the read)
            indices, least = arrivals.get(read["role"], ([], [{}]))
            after = least[bisect_right(indices, done)]
            if any(sees.get(bar, 0) > p for bar, p in after.items()):
                continue  # the copier waited for an arrival made after the read
            if not certain(copy, read):
                unsure.append(f"which bytes of {read['buffer']} the {read.get('how')} "
                              f"read{_slot_words(read)} takes past its first is not known, "
                              f"and the copy into {copy['buffer']}{_slot_words(copy)} "
                              "lands in the rest of its slot unordered with it")
                continue
            kind = "WAR" if _iteration(copy) > _iteration(read) else "RAW"
            if (kind, read["buffer"]) in reported:
                continue
            reported.add((kind, read["buffer"]))
            add(kind, read if kind == "RAW" else copy, _race_text(kind, copy, read, who))
    if unsure and not reported:
        raise Unchecked(unsure[0])


def _arrivals_after(sequences: dict[str, list[tuple[int, Json]]], phase: dict[int, int]
                    ) -> dict[str, tuple[list[int], list[dict[str, int]]]]:
    """Arrivals after each read retired, per role: the indices of its arrivals, and from
    each one on, the least phase arrived on per barrier (a copier that knows a later
    phase of a barrier waited for an arrival after the read: only the least matters)."""
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
    return arrivals


def _race_text(kind: str, copy: Json, read: Json, who: str) -> str:
    """A finding of the ring model in words: a read that may meet its copy unlanded
    (RAW), a copy that may overwrite a read (WAR), or a wgmma reading what a cp.async
    wrote with no proxy fence (PROXY)."""
    how = "TMA copy" if copy["op"] == "tma" else "cp.async"
    if kind == "PROXY":
        return (f"{who}'s wgmma reads {read['buffer']}{_slot_words(read)} through the "
                f"async proxy what the cp.async{_slot_words(copy)} wrote through the "
                f"generic proxy, with no fence.proxy.async between its wait on "
                f"{copy['bar']} and the read (PTX ISA: \"Causality Order\", proxy-preserved "
                "base causality order; \"membar/fence\"; the wgmma steps)")
    if kind == "RAW":
        return (f"{who} reads {read['buffer']}{_slot_words(read)} while the {how} into "
                f"it{_slot_words(copy)} may not have landed: no wait on {copy['bar']} "
                "covers it")
    return (f"the {how} into {copy['buffer']}{_slot_words(copy)} may overwrite what "
            f"{who} reads{_slot_words(read)}: no wait on an arrival made after that read "
            "covers it")


def certain(copy: Json, read: Json) -> bool:
    """Whether a copy and a read that may overlap surely do: an access whose extent the
    code does not say (a wgmma operand through its descriptor, a TMA box the check cannot
    read: ``approx``, taken to the end of its slot) is known to touch its first byte
    only. A finding is a race under the model, or it is not reported."""
    spans = [(r["lo"], r["lo"] if r.get("approx") else r["hi"]) for r in (copy, read)]
    return bool(spans[0][0] <= spans[1][1] and spans[1][0] <= spans[0][1])


def _umma_retired(seq: list[tuple[int, Json]], known: dict[int, Known],
                  tracked: tuple[str, int] | None) -> int:
    """The trace index at which a tcgen05 MMA's reads are known retired to the role that
    issued them: its first record that knows the phase of the commit tracking them
    completed (PTX ISA, "tcgen05.commit": the arrive-on is made when the tracked
    asynchronous tcgen05 operations complete; "mbarrier.test_wait/try_wait"). Past the
    end when no commit tracks them or the role never waits for it."""
    if tracked is not None:
        bar, number = tracked
        for index, _ in seq:
            if known.get(index, {}).get(bar, 0) > number:
                return index
    return 1 << 30


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
