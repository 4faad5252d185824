"""A synchronisation under a condition the walk cannot decide by its variables alone: one
elected thread (``T.tl_shuffle_elect``, ``tx == c``), the roles of a warp-specialised
loop (``if tx < P:`` producer ``else:`` consumer, and three warp groups: a split of a
role's threads again), a condition every thread of the block decides alike (walked both
ways: :class:`.undecided.Forked`), and a CTA's rank in its cluster
(:func:`.rules.tma.cluster_branch`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .calls import call_name, has_call
from .intervals import Interval, Unbounded, interval, narrowed
from .rules.tma import cluster_branch, on_cluster_rank
from .undecided import Forked, Undecided

if TYPE_CHECKING:
    from .trace import Trace


def branch(trace: Trace, stmt: Any) -> None:
    """A synchronisation under ``stmt``'s condition on the thread index (or one the
    block decides alike, or the cluster rank)."""
    cond = stmt.condition
    if on_cluster_rank(cond):
        cluster_branch(trace, stmt)
        return
    name = call_name(cond) if type(cond).__name__ == "Call" else type(cond).__name__
    if name in ("tl_shuffle_elect", "EQ") and stmt.else_case is None:
        _elected(trace, stmt.then_case)
        return
    if trace.uniform(cond):
        fork(trace, stmt)
        return
    _roles(trace, stmt)


def _elected(trace: Trace, case: Any) -> None:
    """Code one thread runs: its arrivals are one, and its scalars not the others'."""
    outer, trace.elected = trace.elected, True
    trace.forget(case)  # one thread's scalars: the others' differ
    trace.summarised += 1
    try:
        trace.walk(case)
    finally:
        trace.elected = outer
        trace.summarised -= 1
    trace.forget(case)


def _roles(trace: Trace, stmt: Any) -> None:
    """The roles' thread ranges: ``if tx < P: ... else: ...`` (TileLang's split), or a
    branch per role (``if P <= tx:``) in a kernel that specialises its warps itself;
    inside a role, a split of its threads again (``if tx < 128: ... elif tx < 256: ...
    else: ...``: a producer and two consumer warp groups) makes a role of each branch,
    run by its own threads beside the others."""
    cond = stmt.condition
    if trace.threads is None:
        raise Undecided(f"a synchronisation under the condition {cond}")
    cases = [(case, holds, thread_set(trace, cond, holds))
             for case, holds in ((stmt.then_case, True), (stmt.else_case, False))
             if case is not None]
    cases = [entry for entry in cases if entry[2] != []]  # run by none
    if not cases or any(spans is None for _, _, spans in cases):
        raise Undecided(f"a synchronisation under the condition {cond}")
    key = (stmt.__chandle__(), tuple(holds for _, holds, _ in cases))
    kinds = trace.memo.roles.get(key)
    if kinds is None:  # read once: every walk of an unrolled loop asks again
        kinds = trace.memo.roles[key] = branch_roles([case for case, _, _ in cases])
    nested = trace.role != "all"
    parent, group, spans_before = trace.role, trace.group, trace.spans
    for (case, _, spans), kind_ in zip(cases, kinds, strict=True):
        assert spans is not None
        lo, hi = spans[0][0], spans[-1][1]
        # Each branch its own role; named by its threads where the kinds do not tell
        # the branches apart (two of one kind, or a split inside a role). Threads in
        # several ranges (the else of ``128 <= tx < 160``) are no role: only a split
        # of them again may run code.
        trace.role = kind_ if len(set(kinds)) == len(kinds) and not nested \
            else f"threads {lo}-{hi}"
        set_threads(trace, (lo, hi))
        trace.spans = spans
        trace.walk(case)
    set_threads(trace, group)
    trace.role, trace.spans = parent, spans_before


def branch_roles(cases: list[Any]) -> list[str]:
    """Each branch's role: the producer issues the TMA loads (or, with none, the cp.async
    copies: a consumer may copy too, in a later loop TileLang did not split)."""
    for copies in (("tma_load", "tma_load_multicast"), ("ptx_cp_async",)):
        found = ["producer" if has_call(case, copies) else "consumer" for case in cases]
        if len(set(found)) == len(found):
            return found
    return ["producer"] * len(cases)


def thread_set(trace: Trace, cond: Any, holds: bool) -> list[Interval] | None:
    """The threads, of those running, for which ``cond`` is ``holds``: ranges, in
    order (None: a thread for which it cannot be decided)."""
    if len(trace.spans) == 1:
        found = _thread_range(trace, narrowed(cond, holds, trace.env))
        if found is not None:
            return [found]
    if sum(hi - lo + 1 for lo, hi in trace.spans) > 1024:
        return None
    names = (trace.threads, *trace.aliases)
    spans: list[Interval] = []
    for lo, hi in trace.spans:
        for t in range(lo, hi + 1):
            try:
                value = interval(cond, {**trace.env, **{v: (t, t) for v in names}})
            except Unbounded:
                return None
            if value[0] != value[1]:
                return None
            if bool(value[0]) == holds:
                if spans and spans[-1][1] == t - 1:
                    spans[-1] = (spans[-1][0], t)
                else:
                    spans.append((t, t))
    return spans


def _thread_range(trace: Trace, ranges: dict[Any, Interval]) -> Interval | None:
    """The range of the thread index among narrowed ranges (through a name for it)."""
    for var in (trace.threads, *trace.aliases):
        if var in ranges:
            return ranges[var]
    return None


def set_threads(trace: Trace, span: Interval) -> None:
    """The threads running from here on: a role's (its group), under every name."""
    trace.group = span
    for var in (trace.threads, *trace.aliases):
        trace.env[var] = span


def fork(trace: Trace, stmt: Any) -> None:
    """A synchronisation under a condition every thread of the block decides alike
    (:class:`.undecided.Forked`): the branch the driver chose for this walk. A block mask
    read in each iteration of the synchronised loop it guards never comes here
    (:meth:`.trace.Trace._For` gives that loop to :func:`.masks.masked_loop`); any other
    condition met again in one walk (in a loop unrolled: each time may read another
    value) is not decided."""
    key = ("if", stmt.__chandle__())
    if key in trace.forked:
        raise Undecided(f"a synchronisation under the condition {stmt.condition}, "
                        "read from memory each time a loop runs")
    trace.forked.add(key)
    if key not in trace.trips:
        raise Forked(key, str(stmt.condition))
    chosen = stmt.then_case if trace.trips[key] else stmt.else_case
    if chosen is not None:
        trace.walk(chosen)
