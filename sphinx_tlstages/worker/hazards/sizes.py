"""The values of a kernel's symbolic sizes that the hazard check walks, and why they cover
every value.

A kernel whose loop or grid extent comes from a symbolic size (``T.dynamic("K")``, a
variable sequence length) cannot be walked once: the walk unrolls each loop that holds a
synchronisation. It needs no sampling either. Only a synchronised loop's trip count ``t``
changes what the check sees, and the trace of a pipelined loop is a prologue, ``t``
iterations and an epilogue, where iteration ``k`` touches slot ``k mod V`` of each
``V``-version buffer and waits on barrier ``k mod S`` with parity ``floor(k / S) mod 2``.
So the check's state at the start of iteration ``k`` (the last copy into each slot, the
outstanding cp.async groups, each barrier's phase) is the same at ``k`` and ``k + P`` once
``k >= K0``, with ``P`` the least common multiple of 2, the versions, the stages and the
barrier arrays' sizes, and ``K0`` past every version's first fill and every constant the
loop compares its variable with (``if k == 0``). The epilogue reads slots and parities of
``t mod P``. Hence the trace for ``t + P`` is the trace for ``t`` with one more period of
iterations that repeat states already checked, and the verdict for every ``t >= K0 + P``
is the verdict for a ``t`` below it: trip counts ``0 .. K0 + 2P`` cover every loop.

:func:`choices` picks, for each symbolic size, the least value giving each of those trip
counts to each synchronised loop whose extent it sets (a binary search: an extent grows
with its size). A size that sets no synchronised loop is fixed at one value: everything
else it bounds (another loop's variable, a block index) is walked as an open range
(:data:`.undecided.OPEN`); a condition on such a size around a synchronisation is decided at
that one value. The other places TileLang's lowering puts a size are the copies'
predicates (which elements of a partial tile are fetched, not which bytes are written) and
the epilogue's slots and parities, which the trip count sets; a shared index that uses a
size in any other way is walked at the value chosen for each trip count. A trip count that
depends on the block index (causal attention) or is read from memory (``s_cum[b + 1] -
s_cum[b]``) is not a size: the walk meets it as a range and is repeated per count
(:class:`.undecided.Ranged`, ``verdict._every``), to the same bound. A loop whose first
iteration depends on the block index is walked per block instead (:class:`.undecided.Blocked`):
the ring's state depends on the iteration's distance from the first (TileLang versions
slots by ``k - start``), but the body also compares ``k`` itself with bounds of the block
(``if k == start``, the window's mask), so each block is walked with its own start.
"""

from __future__ import annotations

import math
from typing import Any

from tilelang import tvm
from tvm.tirx.stmt_functor import post_order_visit, substitute

from ..ir.walk import integer, kind, statements
from .calls import SYNC_OPS, has_call, is_global
from .intervals import Interval, Unbounded, interval
from .masks import Masks
from .undecided import Undecided

# A size that sets no synchronised loop: one value, past any tile.
FREE = 1 << 16
# The largest size searched for a trip count.
_TOP = 1 << 28
# Walks of one variant at most (the product of each size's values).
MAX_WALKS = 64


def symbolic(func: Any) -> list[Any]:
    """The kernel's symbolic sizes: the device function's integer parameters, and the
    integer variables it binds to a value read from memory (``rows = starts[b + 1] -
    starts[b]``: a length the data sets), in the order they appear."""
    return [var for group in sized(func) for var in group]


def sized(func: Any) -> list[list[Any]]:
    """The symbolic sizes in groups that take one value: a parameter alone; variables
    bound to the same value read from memory together (each role of a warp-specialised
    kernel binds its own ``rows``, equal to the other's)."""
    groups: list[list[Any]] = [[var] for var in func.params
                               if str(var.dtype).startswith(("int", "uint"))]
    keys: dict[int, list[Any]] = {}

    def visit(node: Any) -> None:
        if kind(node) in ("Bind", "LetStmt") and str(node.var.dtype).startswith(("int", "uint")):
            loads: list[Any] = []
            post_order_visit(node.value, lambda n: loads.append(n)
                             if kind(n) == "BufferLoad" and is_global(n.buffer.data) else None)
            if not loads:
                return
            # The same value up to the sizes already grouped (each role binds its own
            # ``first`` before ``rows = starts[b + 1] - first``).
            same = {var: group[0] for group in groups for var in group[1:]}
            key = int(tvm.ir.structural_hash(substitute(node.value, same) if same
                                             else node.value))
            if key not in keys:
                keys[key] = []
                groups.append(keys[key])
            if not any(var.same_as(node.var) for var in keys[key]):
                keys[key].append(node.var)

    post_order_visit(func.body, visit)
    return groups


def _uses(expr: Any, var: Any) -> bool:
    hits: list[bool] = []
    post_order_visit(expr, lambda node: hits.append(node.same_as(var))
                     if kind(node) == "Var" else None)
    return any(hits)


def synced_loops(func: Any, synced: dict[int, bool] | None = None) -> list[Any]:
    """Every loop of the function that holds a synchronisation (``synced``: the walk's
    memo of :func:`.calls.has_call`)."""
    return [node for node in statements(func.body)
            if kind(node) == "For" and has_call(node.body, SYNC_OPS, synced)]


def period(func: Any, counts: list[int], masks: Masks | None = None,
           synced: dict[int, bool] | None = None) -> tuple[int, int]:
    """``(K0, P)`` of the argument above, from the buffers' versions and tiles (``counts``),
    the loops' ``num_stages``, the barrier arrays' sizes and the constants a synchronised
    loop compares its variable with (``synced``: the walk's memo of
    :func:`.calls.has_call`)."""
    cycle = [2, *[c for c in counts if c and c > 0]]
    warmup = max(cycle)
    masks = masks or Masks(func)

    def visit(node: Any) -> None:
        nonlocal warmup
        if kind(node) == "For" and has_call(node.body, SYNC_OPS, synced):  # synchronised
            stages = integer((node.annotations or {}).get("tl_pipelined_num_stages", 0))
            if stages:
                cycle.append(stages)
                warmup = max(warmup, stages)
            variable = node.loop_var

            # A loop a mask guards a synchronisation of (:mod:`.masks`) is walked by the
            # number of iterations the mask runs: its masks are no comparison of the
            # variable (a mask elsewhere is evaluated as any condition is).
            guarded = any(kind(inner) == "IfThenElse"
                          and masks.form(inner.condition, variable) is not None
                          and has_call(inner, SYNC_OPS, synced)
                          for inner in statements(node.body))

            def compared(inner: Any) -> None:
                nonlocal warmup
                if kind(inner) == "IfThenElse" and _uses(inner.condition, variable) \
                        and not (guarded and masks.form(inner.condition, variable)):
                    post_order_visit(inner.condition, lambda c: constant(c))

            def constant(c: Any) -> None:
                nonlocal warmup
                if kind(c) == "IntImm":
                    warmup = max(warmup, abs(int(c.value)) + 1)

            for inner in statements(node.body):
                compared(inner)
        for buffer in getattr(node, "alloc_buffers", None) or []:
            if "barrier" in str(getattr(buffer.data.type_annotation, "storage_scope", "")):
                size = integer(buffer.shape[0]) if len(buffer.shape) == 1 else None
                if size:
                    cycle.append(size)
        if kind(node) == "Allocate" and "barrier" in str(
                getattr(node.buffer_var.type_annotation, "storage_scope", "")):
            size = integer(node.extents[0]) if len(node.extents) == 1 else None
            if size:
                cycle.append(size)

    for node in statements(func.body):  # the order does not matter: a max and an lcm
        visit(node)
    return warmup + 1, math.lcm(*cycle)


def _trips(extent: Any, env: dict[Any, Interval]) -> int | None:
    try:
        lo, hi = interval(extent, env)
    except Unbounded:
        return None
    return max(lo, 0) if lo == hi else None


def choices(func: Any, counts: list[int], masks: Masks | None = None,
            synced: dict[int, bool] | None = None) -> tuple[list[dict[Any, int]], int, int]:
    """The assignments of the symbolic sizes to walk (``[{}]``: none), and ``(K0, P)``
    (:class:`.undecided.Undecided` where there are too many assignments; ``synced``: the
    walk's memo of :func:`.calls.has_call`, shared with the trace)."""
    groups = sized(func)
    warmup, cycle = period(func, counts, masks, synced)
    if not groups:
        return [{}], warmup, cycle
    top = warmup + 2 * cycle
    loops = synced_loops(func, synced)
    values: list[set[int]] = []
    for group in groups:
        env = {other: (FREE, FREE) for each in groups if each is not group for other in each}

        def at(value: int, extent: Any, env: dict[Any, Interval] = env,
               group: list[Any] = group) -> int | None:
            return _trips(extent, {**env, **{var: (value, value) for var in group}})

        found: set[int] = set()
        for loop in loops:
            extent = loop.extent
            if not any(_uses(extent, var) for var in group):
                continue
            for trips in range(top + 1):
                lo, hi = 0, _TOP  # the least value whose trip count reaches ``trips``
                if (at(hi, extent) or 0) < trips:
                    break
                while lo < hi:
                    mid = (lo + hi) // 2
                    got = at(mid, extent)
                    if got is None:
                        lo = hi
                        break
                    lo, hi = (mid + 1, hi) if got < trips else (lo, mid)
                if at(lo, extent) == trips:
                    found.add(lo)
        values.append(found or {FREE})
    walks: list[dict[Any, int]] = [{}]
    for group, chosen in zip(groups, values, strict=True):
        walks = [{**walk, **{var: value for var in group}} for walk in walks
                 for value in sorted(chosen)]
        if len(walks) > MAX_WALKS:
            raise Undecided(f"more than {MAX_WALKS} walks for the symbolic sizes "
                            f"{', '.join(str(g[0].name) for g in groups)}")
    return walks, warmup, cycle
