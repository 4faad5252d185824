"""Which bytes of an access each thread touches, for the hazard check's question whether a
thread reads back only what its own cp.async wrote (then it needs no barrier).

An access's bytes over all threads are one interval (:meth:`.trace.Trace.region`); a
thread's are found by bounding the index with the thread index a point. That alone is a
range per thread, which a loop over rows (each thread copying one chunk every eight rows)
stretches over every other thread's chunks: the check would call a thread's own rows
another's. So each thread's bytes are the union of the index's values at every point of
the loops it was bounded over (the summarised loops' variables, enumerated), with the
integer names the kernel binds (``row = tx // 16``) evaluated again at each point: exact
(:data:`Owned` says so) where the points are few enough, else one range per thread, which
can prove that threads keep apart but never that they meet.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Collection, Sequence
from typing import Any

import numpy as np
from tvm.tirx.stmt_functor import post_order_visit

from ..ir.walk import kind
from . import points
from .intervals import Interval, Unbounded, interval

# (exact, each thread's bytes as sorted disjoint intervals): exact where each is the set
# of bytes the thread touches, else a range that holds them.
Owned = tuple[bool, dict[int, list[Interval]]]
# Index evaluations per access past which each thread's bytes are bounded as one range.
_POINTS = 1 << 14


def per_thread(index: Any, env: dict[Any, Interval], offset: int, size: int, lanes: int,
               extra: int, names: Sequence[Any], definitions: dict[Any, Any],
               blocks: Collection[Any]) -> Callable[[], Owned | None]:
    """The bytes each thread touches of an access at element ``index`` (``size`` bytes an
    element, ``lanes`` elements, ``extra`` bytes past the last, ``offset`` bytes into the
    allocation), as a function the check calls only where it needs them (worked out once):
    None where a thread's bytes cannot be bounded. ``names``: the thread index and its
    aliases; ``definitions``: the integer names bound so far and their values (in binding
    order); ``blocks``: the block indices (one block's threads never meet another's)."""
    found: list[Owned | None] = []

    def owned() -> Owned | None:
        if not found:
            try:
                found.append(_owned(index, env, offset, size, lanes, extra, names,
                                    definitions, blocks))
            except Unbounded:
                found.append(None)
        return found[0]

    return owned


def _owned(index: Any, env: dict[Any, Interval], offset: int, size: int, lanes: int,
           extra: int, names: Sequence[Any], definitions: dict[Any, Any],
           blocks: Collection[Any]) -> Owned | None:
    threads = names[0] if names else None
    if threads is None or threads not in env:
        return None
    bound, free = _inputs(index, env, names, definitions)
    first, last = env[threads]
    points = 1
    for var in free:
        points *= env[var][1] - env[var][0] + 1
    if points * (last - first + 1) <= _POINTS and not any(v in blocks for v in free):
        try:
            return True, _exact(index, env, offset, size, lanes, extra, names, bound, free)
        except Unbounded:
            pass  # a value it cannot fix at a point: each thread's range, below
    spans: dict[int, list[Interval]] = {}
    for t in range(first, last + 1):
        here = {**env, **{name: (t, t) for name in names}}
        for var, value in bound:
            # Where it cannot be evaluated: its range as bound, which holds every value.
            with contextlib.suppress(Unbounded):
                here[var] = interval(value, here)
        lo, hi = interval(index, here)
        spans[t] = [(offset + lo * size, offset + (hi + lanes) * size - 1 + extra)]
    return False, spans


def _exact(index: Any, env: dict[Any, Interval], offset: int, size: int, lanes: int,
           extra: int, names: Sequence[Any], bound: list[tuple[Any, Any]],
           free: list[Any]) -> dict[int, list[Interval]]:
    """Each thread's bytes as the union over every point of the free variables: the
    thread index on the first axis, each free variable on one of its own, the bound names
    evaluated again at every point (:mod:`.points`)."""
    first, last = env[names[0]]
    axes = [np.arange(first, last + 1), *(np.arange(env[v][0], env[v][1] + 1) for v in free)]
    grids = np.meshgrid(*axes, indexing="ij", sparse=True)
    values: dict[Any, Any] = {var: lo for var, (lo, hi) in env.items() if lo == hi}
    values.update({name: grids[0] for name in names})
    values.update(zip(free, grids[1:], strict=True))
    for var, value in bound:
        values[var] = points.evaluate(value, values)
    found = np.broadcast_to(points.evaluate(index, values), [len(a) for a in axes])
    starts = offset + found.reshape(len(axes[0]), -1) * size
    ends = starts + lanes * size - 1 + extra
    return {int(t): _merged(list(zip(row_lo.tolist(), row_hi.tolist(), strict=True)))
            for t, row_lo, row_hi in zip(axes[0], starts, ends, strict=True)}


def _inputs(index: Any, env: dict[Any, Interval], names: Sequence[Any],
            definitions: dict[Any, Any]) -> tuple[list[tuple[Any, Any]], list[Any]]:
    """The bound names an index reads (directly or through others), in binding order,
    and the variables it ranges over (those not one value, the thread index aside)."""
    needed: set[Any] = set()
    free: list[Any] = []
    pending = [index]
    while pending:
        for var in _variables(pending.pop()):
            if var in needed or var in free or any(var.same_as(n) for n in names):
                continue
            if var in definitions:
                needed.add(var)
                pending.append(definitions[var])
            elif var in env and env[var][0] != env[var][1]:
                free.append(var)
    return [(var, value) for var, value in definitions.items() if var in needed], free


def _variables(expr: Any) -> list[Any]:
    used: list[Any] = []
    post_order_visit(expr, lambda node: used.append(node) if kind(node) == "Var" else None)
    return used


def _merged(spans: list[Interval]) -> list[Interval]:
    """Intervals as sorted disjoint ones (touching ones joined)."""
    out: list[Interval] = []
    for lo, hi in sorted(spans):
        if out and lo <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return out
