"""Named barriers between roles: which of one role's accesses a named barrier orders
before which of another's.

The trace walks a kernel's roles one after the other (the producer's code, then the
consumer's), which is no order between them. Two roles meet at a named barrier
(``bar.sync id, count`` counting more threads than execute it, met by the other role's
``bar.sync`` or one-sided ``bar.arrive``, ``T.named_barrier_arrive``). PTX ISA, "Parallel
Synchronization and Communication Instructions: bar, barrier": a barrier completes when
``count`` threads have arrived, and the memory accesses each arriving thread requested
before it are then performed for the threads that wait on it (``bar.sync``); a thread
that only arrives (``bar.arrive``) waits for nothing, so nothing is ordered before its
later accesses.

The model follows a named barrier only where its phases can be told from the code: every
operation on the id counts the same threads, the roles that use it run as many operations
on it each and their threads add up to that count (each phase one operation of each
role), and no iteration of the walk was skipped by its period. Then the ``n``-th
operations of two roles are one phase: an access of role A before A's ``n``-th operation
is ordered before an access of role B after B's ``n``-th, where B's waits. Anything else
on a named barrier between roles orders nothing here, and the pair is "not checked".
"""

from __future__ import annotations

from typing import Any

Json = dict[str, Any]


def between_roles(record: Json) -> bool:
    """Whether a record is a named barrier that counts more threads than execute it
    (``bar.sync 1, 256`` run by 128): it waits for other threads' arrivals, another
    role's ``bar.sync`` or one-sided ``bar.arrive``."""
    if record["op"] == "barrive":
        return True
    if record["op"] != "sync" or not record.get("named"):
        return False
    size, count = _size(record.get("threads")), record.get("count")
    return size is None or not isinstance(count, int) or count > size


def _size(threads: Any) -> int | None:
    """How many threads a record's ``threads`` span holds (None: not known)."""
    return None if threads is None else int(threads[1]) - int(threads[0]) + 1


class Meetings:
    """The phases of each named barrier the roles of a trace meet at (:func:`orders`)."""

    def __init__(self, records: list[Json]) -> None:
        # id -> role -> [(index in the trace, whether it waits)], for the ids whose
        # phases pair one operation of each role (see the module's docstring).
        self.phases: dict[int, dict[str, list[tuple[int, bool]]]] = {}
        if any(r["op"] == "skipped" for r in records):
            return  # iterations skipped by their period: operations cannot be counted
        by_id: dict[Any, list[tuple[int, Json]]] = {}
        for at, record in enumerate(records):
            if record["op"] == "barrive" or (record["op"] == "sync" and record.get("named")):
                by_id.setdefault(record.get("id"), []).append((at, record))
        for bar, found in by_id.items():
            roles: dict[str, list[tuple[int, bool]]] = {}
            spans: dict[str, set[Any]] = {}  # role -> the thread spans of its operations
            for at, record in found:
                role = str(record.get("role", "all"))
                roles.setdefault(role, []).append((at, record["op"] == "sync"))
                spans.setdefault(role, set()).add(record.get("threads"))
            counts = {record.get("count") for _, record in found}
            sizes = [_size(next(iter(held))) for held in spans.values() if len(held) == 1]
            known = [size for size in sizes if size is not None]
            if isinstance(bar, int) and len(counts) == 1 and "all" not in roles \
                    and len(roles) > 1 and len(known) == len(roles) \
                    and len({len(ops) for ops in roles.values()}) == 1 \
                    and sum(known) == counts.pop():
                self.phases[bar] = roles

    def orders(self, first: str, after: int, then: str, before: int) -> bool:
        """Whether a named barrier orders an access of role ``first`` (done by trace index
        ``after``) before one of role ``then`` (at trace index ``before``): some phase
        ``first`` takes part in after ``after`` and ``then`` waits on before ``before``."""
        for roles in self.phases.values():
            if first not in roles or then not in roles or first == then:
                continue
            for (mine, _), (theirs, waits) in zip(roles[first], roles[then], strict=True):
                if mine > after and waits and theirs < before:
                    return True
        return False
