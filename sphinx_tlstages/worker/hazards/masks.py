"""Conditions read from memory that every thread of a block evaluates alike, for the hazard
check: a block-sparse kernel's ``if BlockMask[by, bx, k]:`` around the copies and the
GEMM of a pipelined loop.

Such a condition (a *mask*) reads no thread index: its value is the block's, the same for
every thread and every role (the producer's and the consumer's copy of the mask row read
the same elements). :class:`Masks` reads the device function once: the integer
variables bound to a value (whose definitions it follows), the one-dimensional local
arrays a loop fills from global memory (``block_mask[vj] = BlockSparseMask[.. + vj]``: a
load of ``block_mask[k]`` is that element), the global buffers the kernel writes (a
condition reading one is not a mask: its value may change), the thread indices. A mask's
*form* is its condition with the loop's variable named ``k``: every condition of one form
reads the same element in the same iteration, whatever loop it is in. Its *key* is the
condition with every variable known at a point replaced (``BlockMask[by * 32 + 3]``): the
element a walk at fixed values reads, the brute-force reference's unit.

The walk's side of it lives here too: :func:`loop_mask` finds the mask a synchronised
loop's synchronisation sits under, :func:`masked_loop` walks such a loop for every pattern
at a bounded cost, :func:`by_mask` takes the branch a mask decides.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tilelang import tvm
from tvm.tirx.stmt_functor import post_order_visit, substitute

from ..ir.walk import integer, kind
from .calls import PURE_CALLS, call_name, is_global, scope
from .undecided import MAX_STEPS, Masked, Ranged, Undecided

if TYPE_CHECKING:
    from .trace import Trace


class Masks:
    """What a device function says about its masks, read once (the walks share it)."""

    def __init__(self, func: Any) -> None:
        self.func = func
        self.read = False  # the function is read at the first question (most never ask)
        self.bound: dict[Any, Any] = {}  # integer variable -> the value bound to it
        self.threads: set[Any] = set()  # threadIdx.* variables
        self.written: set[Any] = set()  # global buffers' data the kernel stores into
        self.filled: dict[Any, tuple[Any, Any]] = {}  # local array -> (loop var, value)
        self.resolved: dict[int, Any] = {}  # a condition's handle -> its mask (or None)
        self.forms: dict[tuple[int, int], str | None] = {}

    def _read(self) -> None:
        """One pass over the function for what :meth:`mask` needs."""
        self.read = True
        stores: dict[Any, list[Any]] = {}  # local array data -> its stores
        loops: set[Any] = set()  # variables of loops from 0

        def visit(node: Any) -> None:
            what = kind(node)
            if what == "AttrStmt" and node.attr_key == "thread_extent" \
                    and str(node.node.thread_tag).startswith("threadIdx"):
                self.threads.add(node.node.var)
            elif what in ("Bind", "LetStmt") and str(node.var.dtype).startswith(
                    ("int", "uint", "bool")):
                self.bound[node.var] = node.value
            elif what == "BufferStore":
                if is_global(node.buffer.data):
                    self.written.add(node.buffer.data)
                elif scope(node.buffer.data).startswith("local"):
                    stores.setdefault(node.buffer.data, []).append(node)
            elif what == "For" and integer(node.min) == 0:
                loops.add(node.loop_var)

        post_order_visit(self.func.body, visit)
        # A local array filled once, element by element, by one loop from 0 (the only
        # store into it, indexed by the loop's variable): its loads are the values stored
        # (the loop reaches every element of its range before a later statement reads it).
        for data, found in stores.items():
            store = found[0]
            if len(found) == 1 and len(store.indices) == 1 \
                    and kind(store.indices[0]) == "Var" and store.indices[0] in loops:
                self.filled[data] = (store.indices[0], store.value)

    def mask(self, cond: Any) -> Any | None:
        """The condition as a mask (local arrays and bound variables replaced by what they
        hold), or None where it is not one: it reads a thread index, shared memory, a
        global buffer the kernel writes, or calls something that may differ by thread;
        or it reads no memory at all."""
        key = cond.__chandle__()
        if key not in self.resolved:
            calls: list[bool] = []
            post_order_visit(cond, lambda n: calls.append(True) if kind(n) == "Call"
                             and call_name(n) not in PURE_CALLS else None)
            if calls:  # ``tl_shuffle_elect()``: the thread's, whatever the function holds
                self.resolved[key] = None
                return None
            if not self.read:
                self._read()
            self.resolved[key] = self._resolve(cond)
        return self.resolved[key]

    def _resolve(self, cond: Any) -> Any | None:
        expr = cond
        for _ in range(8):  # bound variables and local arrays, followed a few levels
            changed = False
            lets: dict[Any, Any] = {}
            arrays: list[Any] = []

            def visit(node: Any, lets: dict[Any, Any] = lets,
                      arrays: list[Any] = arrays) -> None:
                if kind(node) == "Var" and node in self.bound:
                    lets[node] = self.bound[node]
                elif kind(node) == "BufferLoad" and scope(node.buffer.data).startswith("local") \
                        and node.buffer.data in self.filled and len(node.indices) == 1:
                    arrays.append(node)

            post_order_visit(expr, visit)
            if lets:
                expr, changed = substitute(expr, lets), True
            for load in arrays:
                var, value = self.filled[load.buffer.data]
                replacement = substitute(value, {var: load.indices[0]})
                expr = tvm.tirx.stmt_functor.ir_transform(
                    tvm.tirx.Evaluate(expr), None,
                    lambda n, load=load, rep=replacement: rep if n.same_as(load) else None,
                    ["tirx.BufferLoad"]).value
                changed = True
            if not changed:
                break
        verdict = {"global": False, "other": False}

        def check(node: Any) -> None:
            what = kind(node)
            if what == "Var" and (node in self.threads or node in self.bound):
                verdict["other"] = True
            elif what == "BufferLoad":
                if is_global(node.buffer.data) and node.buffer.data not in self.written:
                    verdict["global"] = True
                else:
                    verdict["other"] = True
            elif what == "Call" and call_name(node) not in PURE_CALLS:
                verdict["other"] = True

        post_order_visit(expr, check)
        return expr if verdict["global"] and not verdict["other"] else None

    def form(self, cond: Any, loop_var: Any) -> str | None:
        """The mask's form in a loop: its text with the loop's variable named ``k``; None
        when the condition is no mask or does not use the loop's variable."""
        key = (cond.__chandle__(), loop_var.__chandle__())
        if key not in self.forms:
            found = self.mask(cond)
            self.forms[key] = None
            if found is not None:
                uses: list[bool] = []
                post_order_visit(found, lambda n: uses.append(n.same_as(loop_var))
                                 if kind(n) == "Var" else None)
                if any(uses):
                    named = substitute(found, {loop_var: tvm.tirx.Var("k", loop_var.dtype)})
                    self.forms[key] = str(tvm.arith.Analyzer().simplify(named))
        return self.forms[key]

    def variables(self, cond: Any) -> list[Any]:
        """The variables a mask uses (none where the condition is no mask)."""
        found = self.mask(cond)
        used: list[Any] = []
        if found is not None:
            post_order_visit(found, lambda n: used.append(n) if kind(n) == "Var" else None)
        return used

    def key(self, cond: Any, points: dict[Any, int]) -> str | None:
        """The element a mask reads at the variables' values ``points`` (the others kept
        by name): the brute-force reference's unit (None: no mask; ``=0``, ``=1``: the
        values alone decide it)."""
        found = self.mask(cond)
        if found is None:
            return None
        used: list[Any] = []
        post_order_visit(found, lambda n: used.append(n)
                         if kind(n) == "Var" and n in points else None)
        fixed = {var: tvm.tirx.IntImm(var.dtype, points[var]) for var in used}
        value = tvm.arith.Analyzer().simplify(substitute(found, fixed) if fixed else found)
        known = integer(value)  # a part on the variables alone decided it (``k < 3 and``)
        return str(value) if known is None else f"={known}"


# --- the walk of a loop a mask runs or skips (:class:`.trace.Trace` calls these) ---------

def by_mask(trace: Trace, stmt: Any) -> bool:
    """Walk the branch a mask takes: the element's fixed value (:attr:`.Trace.masks`), or
    the value of the masked loop's iteration (:attr:`.Trace.masking`) where the condition
    is that loop's mask. False: not such a condition."""
    cond = stmt.condition
    info = trace.memo.masks
    if trace.masks is not None:
        points: dict[Any, int] = {}
        for var in info.variables(cond):
            lo, hi = trace.env.get(var, (0, -1))
            if lo == hi:
                points[var] = lo
            elif var in trace.env and var not in trace.blocks:
                return False  # a summarised loop's variable: no one element
        key = info.key(cond, points)
        if key is None:
            return False
        if key.startswith("="):
            case = stmt.then_case if key != "=0" else stmt.else_case
            if case is not None:
                trace.walk(case)
            return True
        if key not in trace.masks:
            if trace.decide is None:
                raise Masked(key)
            trace.masks[key] = trace.decide(len(trace.masks))
        if key not in trace.decided:  # where it was met, and the mask's form there
            trace.decided[key] = " ".join(trace.where)
            trace.form = trace.form or next(
                (form for var in points
                 if (form := info.form(cond, var)) is not None), "")
        holds = trace.masks[key]
    else:
        assert trace.masking is not None
        form, holds, var = trace.masking
        if info.form(cond, var) != form:
            return False
    case = stmt.then_case if holds else stmt.else_case
    if case is not None:
        trace.walk(case)
    return True


def loop_mask(trace: Trace, stmt: Any) -> str | None:
    """The form of the mask a synchronised loop's synchronisation sits under (None:
    none does); :class:`.undecided.Undecided` where its conditions read memory in two
    forms."""
    handle = stmt.__chandle__()
    memo = trace.memo
    if handle not in memo.masked_loops:
        forms: set[str] = set()
        synced: list[bool] = []
        var = stmt.loop_var

        def visit(node: Any) -> None:
            if kind(node) == "IfThenElse":
                form = memo.masks.form(node.condition, var)
                if form is not None:
                    forms.add(form)
                    synced.append(trace.has_sync(node))
                    memo.mask_vars.setdefault(form, [
                        v for v in memo.masks.variables(node.condition)
                        if not v.same_as(var)])

        post_order_visit(stmt.body, visit)
        memo.masked_loops[handle] = None
        if any(synced):
            if len(forms) > 1:
                raise Undecided(f"the loop over {var.name} has synchronisations under "
                                f"conditions read from memory of {len(forms)} forms")
            memo.masked_loops[handle] = forms.pop()
    return memo.masked_loops[handle]


def masked_loop(trace: Trace, stmt: Any, form: str, first: int, trips: int) -> None:
    """A synchronised loop whose iterations a mask runs or skips (``if BlockMask[by,
    k]:`` around the copies and the GEMM): walked as ``m`` iterations that run, ``m``
    from the walk's :attr:`.Trace.trips` (:class:`.undecided.Ranged`: the driver tries
    each count), with the loop's variable any of its values, after one iteration the
    mask skips, which must leave no record and no scalar changed. Then every mask
    pattern's trace is one of these walks' (the hazards chapter, "Conditions read from
    memory"): a skipped iteration is nothing to the check, and what a run iteration
    records does not depend on which iteration it is beyond what the bounds over every
    value of the variable include."""
    var = stmt.loop_var
    if trace.masking is not None:
        raise Undecided(f"a loop under a mask inside the loop over "
                        f"{trace.masking[2].name} under a mask")
    # One count of run iterations per mask row: the values of the other variables
    # the mask reads (an outer loop's, walked unrolled) are part of the key.
    row = [trace.env.get(v) for v in trace.memo.mask_vars.get(form, [])]
    key = ("mask", form, tuple(row))
    if key not in trace.trips:
        raise Ranged(key, 0, trips, f"the loop over {var.name}", form)
    runs, trace.masked_key = trace.trips[key], key
    if runs > trips:
        raise Undecided(f"loops of {trips} and more iterations under the mask {form}")
    trace.steps += runs + 1
    if trace.steps > MAX_STEPS:
        raise Undecided(f"more than {MAX_STEPS} loop iterations to unroll")
    if trips <= 0:
        return
    trace.env[var] = (first, first + trips - 1)
    try:
        _masked_walk(trace, stmt, form, runs, trips)
    except (Ranged, Masked):
        raise
    except Undecided as exc:
        if form in str(exc):
            raise
        raise Undecided(f"{exc}, with {var.name} any iteration the mask {form} runs or "
                        "skips") from None
    trace.env.pop(var, None)
    trace.passing(var)


def _masked_walk(trace: Trace, stmt: Any, form: str, runs: int, trips: int) -> None:
    """:func:`masked_loop`'s walk: a skipped iteration, then ``runs`` run ones."""
    var = stmt.loop_var
    try:
        if runs < trips:
            before, saved = len(trace.records), dict(trace.env)
            trace.masking = (form, False, var)
            trace.enter(f"{var.name} skipped")
            _run_once(trace, stmt)
            trace.leave()
            changed = [key for key in {*saved, *trace.env}
                       if kind(key) != "Var" and trace.env.get(key) != saved.get(key)]
            if len(trace.records) != before or changed:
                raise Undecided(f"an iteration the mask {form} skips still "
                                + ("synchronises or touches shared memory"
                                   if len(trace.records) != before
                                   else "changes a counter"))
            trace.env = saved
        for number in range(runs):
            trace.masking = (form, True, var)
            trace.enter(f"{var.name}={number}")
            try:
                _run_once(trace, stmt)
            finally:
                trace.leave()
    finally:
        trace.masking = None


def _run_once(trace: Trace, loop: Any) -> None:
    """One iteration of a masked loop. The walks for each number of run iterations
    repeat the same iterations from the same states: what one walked (its records, and
    what it changed of the state) is kept in the memo by the state it started from (of
    the environment, the variables its body reads), and copied."""
    handle = loop.__chandle__()
    memo = trace.memo
    uses = memo.uses.get(handle)
    if uses is None:
        found: set[Any] = set()
        post_order_visit(loop.body, lambda n: found.add(n) if kind(n) == "Var" else
                         found.add((n.buffer.data, "scalar"))
                         if kind(n) == "BufferLoad" else None)
        uses = memo.uses[handle] = found
    before = {var: value for var, value in trace.env.items()
              if var in uses or var is trace.threads}
    key = (handle, trace.masking, tuple(trace.where), trace.role, trace.elected,
           trace.summarised, trace.fallback, frozenset(  # inner loops' trip counts
               (loop, n) for loop, n in trace.trips.items() if loop != trace.masked_key),
           trace.threads, frozenset(before.items()),
           frozenset((var, tuple(region)) for var, region in trace.descriptors.items()),
           frozenset(trace.batch), frozenset(trace.bases.items()))
    known = memo.iterations.get(key)
    if known is None:
        first, entry = len(trace.records), dict(trace.env)
        trace.walk(loop.body)
        changed = {var: value for var, value in trace.env.items()
                   if entry.get(var) != value}
        dropped = [var for var in entry if var not in trace.env]
        memo.iterations[key] = (
            [dict(r) for r in trace.records[first:]], changed, dropped,
            {var: list(region) for var, region in trace.descriptors.items()},
            set(trace.batch), dict(trace.bases))
        return
    records, changed, dropped, descriptors, batch, bases = known
    trace.records.extend(dict(r) for r in records)
    for var in dropped:
        trace.env.pop(var, None)
    trace.env.update(changed)
    trace.batch, trace.bases = set(batch), dict(bases)
    trace.descriptors = {var: list(region) for var, region in descriptors.items()}
