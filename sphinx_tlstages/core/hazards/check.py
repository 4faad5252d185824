"""The hazard check: does a variant's pipeline let a read of shared memory race a copy?

It reads the synchronisation trace the worker took of the final device code
(:mod:`...worker.hazards.trace`: every thread runs the same sequence of cp.async copies,
commits, waits, ``__syncthreads`` and shared reads, each access a byte interval of its
allocation bounded over all threads) and checks the model of ``cp.async`` pipelines:

- every cp.async joins the open group, each commit closes it, ``cp_async_wait<N>``
  completes all but the newest N closed groups, and ``__syncthreads`` publishes what is
  completed and ends the reads since the previous one;
- RAW: a read of bytes a cp.async wrote needs that copy completed by a wait *and* a
  ``__syncthreads`` after that wait (another thread may have issued the copy);
- WAR: a cp.async into bytes read since the last ``__syncthreads`` may land before
  another thread's read.

Intervals over all threads are the fallback; where the index gives each thread's bytes
(``own``), a thread reading only bytes its own completed copy wrote needs no barrier. A
named barrier orders the threads it names only. What it does not
cover: global-memory and scalar dependences the planner moved, shared stores made by the
threads themselves (TileLang's thread-sync pass places those barriers).

The verdict is the ``hazards`` fact: ``{"verdict": "none" | "hazard" | "not checked",
"text": one line for the summary row, "findings": [...]}``.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable
from typing import Any

from ..results.line_links import line_spans
from .named import Meetings, between_roles
from .rings import Unchecked, certain, check_rings

Json = dict[str, Any]
# Findings kept per variant; the rest are counted.
_KEPT = 4


def cuda_words(lines: list[int]) -> str:
    """``CUDA lines 40-42, 45`` (``""`` for none): a statement's lines in the listing."""
    spans = line_spans(lines)
    said = ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in spans)
    return f"CUDA line{'s' if len(lines) > 1 else ''} {said}" if spans else ""


def not_checked(why: str) -> Json:
    return {"verdict": "not checked", "text": f"not checked: {why}", "findings": []}


def _overlap(a: Json, b: Json) -> bool:
    return bool(a["root"] == b["root"] and a["lo"] <= b["hi"] and b["lo"] <= a["hi"])


def _slot(record: Json, buffers: dict[str, Json]) -> str:
    info = buffers.get(record["buffer"])
    if not info or not info.get("versions"):
        return ""
    size = max(info["bytes"] // info["versions"], 1)
    first = (record["lo"] - info["base"]) // size
    last = (record["hi"] - info["base"]) // size
    return f" (slot {first})" if first == last else f" (slots {first}-{last})"


def _when(record: Json) -> str:
    """Where an access is: its iterations of the kernel's loops (``at k=3``), or, outside
    them, the loop it comes before or after (``outside``: words the walk gives once
    done)."""
    if record.get("at"):
        return f"at {record['at']}"
    outside = record.get("outside")
    return str(outside()) if callable(outside) else "outside the pipelined loop"


def _who(record: Json) -> str:
    """The threads an access is made by: ``the producer``, ``threads 128-255``."""
    role = str(record.get("role", "all"))
    return "every thread" if role == "all" else role if role.startswith("threads") \
        else f"the {role}"


def _sure(copy: Json, read: Json) -> bool:
    """Whether a copy and a read whose extents meet surely touch a byte in common: not
    where one's bytes are any of its extent or none (``maybe``: an extern function handed
    a pointer), and an ``approx`` one (a wgmma operand) touches its first byte only for
    certain (:func:`.rings.certain`)."""
    return not (copy.get("maybe") or read.get("maybe")) and certain(copy, read)


def _read_words(read: Json, copy: Json) -> str:
    """What a read read, said where it is of another buffer on the copy's bytes (TileLang
    places a statement's scratch on bytes a buffer has when both are not live at once)."""
    if read["buffer"] == copy["buffer"]:
        return "what was read"
    if read.get("how") == "tl::AllReduce":
        named = "" if read["buffer"] == "workspace" else f" {read['buffer']}"
        return (f"what TileLang's reduction (tl::AllReduce) read from its workspace"
                f"{named}, which lies on {copy['buffer']}'s bytes,")
    return f"what was read of {read['buffer']}, which lies on {copy['buffer']}'s bytes,"


def _access(record: Json) -> Json:
    """One of a finding's two accesses: what it is, and the call it comes from (``node``,
    numbered by the worker as the code prints it)."""
    return {key: record[key] for key in ("op", "buffer", "how", "node", "at")
            if record.get(key) not in (None, "")}


def _covers(named: Any, *records: Json) -> bool:
    """Whether a barrier over the threads ``named`` (None: every thread) takes in every
    thread of ``records`` (a record without threads: every thread)."""
    if named is None:
        return True
    spans = [r.get("threads") for r in records]
    return all(s is not None and named[0] <= s[0] and s[1] <= named[1] for s in spans)


def _own(copy: Json, read: Json) -> bool | None:
    """Whether each thread reads, of this copy's bytes, only those it copied itself. From
    each access's bytes per thread (``own``: a function giving ``(exact, {thread: byte
    intervals})``, :mod:`...worker.hazards.ownership`): True where no thread's read meets
    another thread's copy; False where one does, by exact bytes, or where the read is a
    collective one (``ldmatrix``, wgmma, a template: a thread reads what other threads'
    addresses name) or of any element (an index read from memory); None where it cannot
    be told (bytes known per thread only as ranges, which meet)."""
    if copy["root"] != read["root"]:
        return False
    mine, theirs = read.get("own"), copy.get("own")
    if not callable(mine):
        return False
    reads, copies = mine(), theirs() if callable(theirs) else None
    if reads is None or copies is None:
        return None
    if not _meet(reads[1], copies[1]):
        return True
    return False if reads[0] and copies[0] else None


def _meet(reads: dict[int, list[tuple[int, int]]],
          copies: dict[int, list[tuple[int, int]]]) -> bool:
    """Whether some thread's read bytes meet bytes another thread copied."""
    spans = sorted((lo, hi, u) for u, found in copies.items() for lo, hi in found)
    starts = [lo for lo, _, _ in spans]
    reach: list[int] = []  # the furthest byte of the spans up to each one
    for _, hi, _ in spans:
        reach.append(max(hi, reach[-1]) if reach else hi)
    for t, found in reads.items():
        for lo, hi in found:
            j = bisect_right(starts, hi) - 1
            while j >= 0 and reach[j] >= lo:
                if spans[j][1] >= lo and spans[j][2] != t:
                    return True
                j -= 1
    return False


def check_cp_async(records: list[Json], buffers: dict[str, Json], first: bool = False
                   ) -> list[Json]:
    """Every RAW and WAR hazard of a cp.async trace, in program order (``first``: only
    the first, for a caller that asks whether there is any: findings are never taken back).

    The rules, each from the PTX ISA (section titles of PTX ISA 8.x/9.x):

    - "Data Movement and Conversion Instructions: cp.async": the copy is asynchronous, a
      weak memory operation of the generic proxy; ``cp.async.commit_group`` closes a
      group and ``cp.async.wait_group N`` waits until all but the newest N groups of the
      executing thread complete, their writes "made visible to the executing thread"
      (only: another thread needs a barrier after that wait);
    - "Parallel Synchronization and Communication Instructions: bar, barrier":
      ``bar.sync`` (``__syncthreads``, or a named barrier ``bar.sync id, count`` over
      the threads that execute it) orders the memory accesses of the threads taking part
      in it before it against theirs after it;
    - a thread's own accesses are in program order, which base causality order includes
      (Memory Consistency Model, "Causality Order"): a thread that reads only bytes its own
      completed copy wrote, or copies into bytes only it read, needs no barrier; where
      that cannot be told, the pair is an ``UNSURE`` finding (:func:`verdict`: "not
      checked" unless a race is found), never a race;
    - a copy signalled through ``cp.async.mbarrier.arrive`` to a reader of another role
      is checked with the rings (:mod:`.rings`), like a TMA copy;
    - "tcgen05.mma", "tcgen05.commit": a tcgen05 MMA reads its shared operands
      asynchronously until the commit that tracks it arrives on its barrier: a barrier
      orders the read only once a wait has seen that arrival's phase complete
      (:func:`_umma_retired`).
    """
    meetings = Meetings(records) if any(between_roles(r) for r in records) else None
    state = _CpAsync(buffers, _umma_retired(records), meetings)
    for at, record in enumerate(records):
        step = state.steps.get(record["op"])
        if step is not None:
            step(at, record)
        if first and state.findings:
            break
    state.finish()
    return state.findings


class _CpAsync:
    """The cp.async model's state along a trace (:func:`check_cp_async`), a step per
    record it follows; what it finds in :attr:`findings`."""

    def __init__(self, buffers: dict[str, Json], retired: dict[int, int],
                 meetings: Meetings | None = None) -> None:
        self.buffers, self.retired = buffers, retired
        # The named barriers between roles, where the trace has any (:mod:`.named`):
        # a copy and a read of two roles are decided once the trace is done
        # (:meth:`across`, :meth:`finish`).
        self.meetings = meetings
        self.between: list[tuple[Json, Json]] = []  # (write, read) of two roles
        self.findings: list[Json] = []
        self.committed = 0
        self.writes: list[Json] = []  # copies not yet published: {record, group, done, published}
        self.reads: list[Json] = []  # reads not yet ordered with every thread: {record, synced}
        self.steps: dict[str, Callable[[int, Json], None]] = {
            "copy": self.copy, "commit": self.commit, "wait": self.wait, "sync": self.sync,
            "read": self.read}

    def add(self, kind: str, record: Json, text: str, other: Json) -> None:
        """A finding on ``record``'s buffer, with the two accesses that race (each said
        at its own lines by the page: ``accesses``)."""
        # Where an access has no place to say (a kernel without loops), its words are
        # empty: the sentence closes up.
        self.findings.append({"kind": kind, "buffer": record["buffer"],
                              "at": record.get("at", ""), "text": " ".join(text.split()),
                              "accesses": [_access(record), _access(other)]})

    @staticmethod
    def elsewhere(copy: Json, read: Json) -> bool:
        """A copy signalled to a reader of another role: the ring model's."""
        return bool(copy.get("signal")) and copy["role"] != read["role"]

    def across(self, write: Json, read: Json) -> bool:
        """A copy and a read of two roles in a trace with a named barrier between roles:
        the trace walks one role's code after the other's, which is no order of the two,
        so the pair waits for the end of the trace (:meth:`finish`), when both its
        directions are known. (A pair is met once: by the later of its two records.)"""
        roles = (write["record"].get("role", "all"), read["record"].get("role", "all"))
        if self.meetings is None or "all" in roles or roles[0] == roles[1]:
            return False
        self.between.append((write, read))
        return True

    def finish(self) -> None:
        """The pairs of two roles (:meth:`across`): ordered where a named barrier orders
        the copy, once complete, before the read, or the read before the copy
        (:class:`.named.Meetings`); else "not checked", never "hazard"."""
        meetings = self.meetings
        for write, read in self.between:
            assert meetings is not None  # pairs are kept only where there are meetings
            copy, mine = write["record"], read["record"]
            done = write.get("done_at")
            if (done is not None and meetings.orders(copy["role"], done, mine["role"],
                                                     read["at"])) \
                    or meetings.orders(mine["role"], read["at"], copy["role"], write["at"]):
                continue
            self.unsure(copy, mine, "roles")

    def copy(self, at: int, record: Json) -> None:
        """A WAR where the copy overwrites what an unordered read of another thread
        reads (where that cannot be told: :meth:`unsure`)."""
        undecided: tuple[Json, str] | None = None
        entry: Json = {"record": record, "group": None, "done": False, "published": [], "at": at}
        for read in self.reads:
            mine = read["record"]
            if not _overlap(mine, record) or self.elsewhere(record, mine) \
                    or any(_covers(named, mine, record) for named in read["synced"]):
                continue
            if not _sure(record, mine):
                undecided = undecided or (mine, "bytes")
                continue
            if self.across(entry, read):
                continue
            owned = _own(record, mine)
            if owned is None:
                undecided = undecided or (mine, "threads")
            if owned is not False:
                continue
            into = f"the cp.async into {record['buffer']}{_slot(record, self.buffers)}"
            if mine.get("umma"):
                self.add("WAR", record,
                         f"{into} {_when(record)} overwrites what the tcgen05 MMA "
                         f"{_when(mine)} reads: no wait saw the phase of the commit "
                         "tracking it complete before a __syncthreads between them, so "
                         "the MMA may still be reading it", mine)
            else:
                self.add("WAR", record,
                         f"{into} {_when(record)} overwrites {_read_words(mine, record)} "
                         f"{_when(mine)} with no __syncthreads between: another thread "
                         "may still be reading it", mine)
            break
        else:
            if undecided is not None:
                self.unsure(record, *undecided)
        self.writes.append(entry)

    def unsure(self, copy: Json, read: Json, why: str) -> None:
        """A copy and a read no barrier orders that may not race: their threads may keep
        to their own bytes (``why``: ``threads``), or the read may not touch the copy's
        bytes (``bytes``): "not checked" unless a race is found elsewhere, never
        "hazard"."""
        if why == "roles":
            said = (f"the cp.async into {copy['buffer']} {_when(copy)} ({_who(copy)}) and "
                    f"the read of {read['buffer']} {_when(read)} ({_who(read)}) run in two "
                    "roles that meet at named barriers (bar.sync, or bar.arrive from "
                    "T.named_barrier_arrive), and none orders the two as the check follows "
                    "them (each phase one operation of each role, its count their threads)")
        elif why == "threads":
            said = (f"whether the threads that read {read['buffer']} {_when(read)} read "
                    f"only what they copied themselves (the cp.async {_when(copy)}) cannot "
                    "be told: their bytes are known per thread only as ranges, which meet")
        elif read.get("maybe"):
            said = (f"{read.get('how')} is handed a pointer into {read['buffer']} "
                    f"{_when(read)} and may touch any of its bytes, the cp.async "
                    f"{_when(copy)} writes some of them")
        else:
            said = (f"which bytes of {read['buffer']} the {read.get('how')} read "
                    f"{_when(read)} takes past its first is not known, and the cp.async "
                    f"{_when(copy)} lands in the rest of its slot")
        if why != "roles":
            said += ", and no __syncthreads orders the two"
        self.add("UNSURE", read, said, copy)

    def commit(self, at: int, record: Json) -> None:
        self.committed += 1
        for write in self.writes:
            if write["group"] is None:
                write["group"] = self.committed

    def wait(self, at: int, record: Json) -> None:
        for write in self.writes:
            if write["group"] is not None and write["group"] <= self.committed - record["n"] \
                    and not write["done"]:
                write["done"] = True
                # Where in its own role's code the copy is complete (a wait of another
                # role's is no point of this one's: :meth:`finish` orders within roles).
                if record.get("role") == write["record"].get("role"):
                    write["done_at"] = at

    def sync(self, at: int, record: Json) -> None:
        """A barrier publishes completed copies and orders reads (an MMA's once retired)
        for the threads it names (all: ``None``)."""
        named = record.get("threads") if record.get("named") else None
        for write in self.writes:
            if write["done"]:
                write["published"].append(named)
        for read in self.reads:
            if self.retired.get(id(read["record"]), at) <= at:  # an MMA's read retired
                read["synced"].append(named)
        self.writes = [w for w in self.writes if None not in w["published"]]
        self.reads = [r for r in self.reads if None not in r["synced"]]

    def read(self, at: int, record: Json) -> None:
        """A RAW where the read meets a copy still in flight, or complete but not
        published to another thread (where that cannot be told: :meth:`unsure`)."""
        undecided: tuple[Json, str] | None = None
        reading: Json = {"record": record, "synced": [], "at": at}
        for write in self.writes:
            copy = write["record"]
            if not _overlap(copy, record) or self.elsewhere(copy, record):
                continue
            if not _sure(copy, record) and not (
                    write["done"] and any(_covers(named, copy, record)
                                          for named in write["published"])):
                undecided = undecided or (copy, "bytes")
                continue
            if self.across(write, reading):
                continue
            into = "it" if copy["buffer"] == record["buffer"] else \
                f"{copy['buffer']}, which shares its bytes,"
            what = (f"{_when(record)} reads {record['buffer']}{_slot(record, self.buffers)} "
                    f"while the cp.async into {into} {_when(copy)}")
            if write["done"]:
                if any(_covers(named, copy, record) for named in write["published"]):
                    continue
                owned = _own(copy, record)
                if owned is None:
                    undecided = undecided or (copy, "threads")
                if owned is not False:
                    continue
                self.add("RAW", record, f"{what} is complete but not published: no "
                         "__syncthreads between its cp_async_wait and the read", copy)
            else:
                self.add("RAW", record, f"{what} is still in flight: no cp_async_wait "
                         "covers it", copy)
            break
        else:
            if undecided is not None:
                copy, why = undecided
                self.unsure(copy, record, why)
        self.reads.append(reading)


def _umma_retired(records: list[Json]) -> dict[int, int]:
    """For each tcgen05 MMA read (by ``id``), the trace index of the first wait that sees
    the phase of the commit tracking it complete (past the end: none does). The phases
    are counted over the trace, in program order (PTX ISA, "mbarrier": a phase completes
    once its init count of arrivals is made; "mbarrier.test_wait/try_wait", ``.parity``):
    the cp.async model has no roles, and a kernel with roles is the rings'."""
    init = {r["bar"]: r["count"] for r in records if r["op"] == "init"}
    arrived: dict[str, int] = {}
    seen: dict[str, int] = {}
    commits: dict[int, tuple[str, int]] = {}  # commit number -> (barrier, phase)
    waiting: list[tuple[Json, tuple[str, int]]] = []
    retired: dict[int, int] = {}
    for at, record in enumerate(records):
        bar = str(record.get("bar"))
        if record["op"] == "arrive" and bar in init:
            if record.get("commit"):
                commits[record["commit"]] = (bar, arrived.get(bar, 0) // init[bar])
            arrived[bar] = arrived.get(bar, 0) + record.get("n", 0)
        elif record["op"] == "bwait" and bar in init:
            have = seen.get(bar, 0)
            if have % 2 == record["parity"]:
                seen[bar] = have + 1
            still = []
            for read, (which, number) in waiting:
                if seen.get(which, 0) > number:
                    retired[id(read)] = at
                else:
                    still.append((read, (which, number)))
            waiting = still
        elif record["op"] == "read" and record.get("umma"):
            retired[id(record)] = 1 << 30
            waiting.append((record, ("", 0)))
        if record["op"] == "arrive" and record.get("commit"):
            waiting = [(read, commits[record["commit"]])
                       if read.get("commit") == record["commit"] else (read, tracked)
                       for read, tracked in waiting]
    return retired


def _signal(records: list[Json]) -> None:
    """Mark each cp.async copy a ``cp.async.mbarrier.arrive`` of its role tracks: the
    first such arrive after it in the role's program order (PTX ISA,
    "cp.async.mbarrier.arrive": it tracks "all prior cp.async operations initiated by
    the executing thread")."""
    pending: dict[str, list[Json]] = {}
    for record in records:
        role = record.get("role", "all")
        if record["op"] == "copy" and role != "all":
            pending.setdefault(role, []).append(record)
        elif record["op"] == "arrive" and record.get("cp"):
            for copy in pending.pop(role, []):
                copy["signal"] = record


def verdict(records: list[Json], buffers: dict[str, Json]) -> Json:
    """The ``hazards`` fact of a trace: its cp.async copies and its mbarrier rings."""
    copies = [r for r in records if r["op"] == "copy"]
    tmas = [r for r in records if r["op"] == "tma"]
    if not copies and not tmas:
        return not_checked("no asynchronous copy into shared memory")
    _signal(records)
    findings = check_cp_async(records, buffers) if copies else []
    unsure = [f for f in findings if f["kind"] == "UNSURE"]
    findings = [f for f in findings if f["kind"] != "UNSURE"]
    rings: Json = {}
    if tmas or any(r["op"] == "init" for r in records):
        try:
            found, rings = check_rings(records)
        except Unchecked as exc:
            return not_checked(str(exc))
        findings += found
    if findings:
        first: dict[tuple[str, str], Json] = {}
        for finding in findings:
            first.setdefault((finding["kind"], finding["buffer"]), finding)
        kept = list(first.values())[:_KEPT]
        names = ", ".join(sorted({f"{f['kind']} on {f['buffer']}" for f in kept}))
        more = len(findings) - len(kept)
        text = f"hazard: {names}" + (f" ({len(findings)} accesses)" if more > 0 else "")
        return {"verdict": "hazard", "text": text, "findings": kept}
    if unsure:
        return not_checked(unsure[0]["text"])
    written = sorted({r["buffer"] for r in copies + tmas})
    slots = max([buffers.get(name, {}).get("versions") or 1 for name in written])
    said = [f"{groups} cp.async group{'s' if groups != 1 else ''}" for groups in
            [sum(1 for r in records if r["op"] == "commit")
             + sum(r["commits"] for r in records if r["op"] == "skipped")] if copies]
    if rings:
        said.append(f"{rings['barriers']} barrier{'s' if rings['barriers'] != 1 else ''}, "
                    f"phases and arrivals" + (", bytes" if rings.get("bytes") else ""))
    return {"verdict": "none",
            "text": f"none found: RAW and WAR on {', '.join(written)} over {slots} "
                    f"slot{'s' if slots != 1 else ''}; {', '.join(said)}",
            "findings": []}
