"""Reading a warp-specialised loop's schedule off TileLang's IR (Hopper, Blackwell).

``tl.ProducerConsumerWarpSpecialized`` splits the block at ``kWarpSpecializationScope``
into ``if tx < P:`` (the producer warp group) and ``else:`` (the consumer), each with its
own copy of the ``T.Pipelined`` loop: the producer waits on an "empty" barrier and issues
TMA loads that complete on a "full" one; the consumer waits on "full", computes and
arrives on "empty". :func:`warp_specialized_schedule` reads both loop bodies in order and
evaluates, for each iteration of two laps of the barrier ring, which barrier each wait or
arrive uses (with the parity waited for) and which ring slot each statement touches.
"""

from __future__ import annotations

from typing import Any

from tvm.tirx.stmt_functor import post_order_visit, pre_order_visit

from .match import identify
from .walk import (
    annotated_loops,
    buffer_names,
    call_of,
    evaluate,
    flatten,
    integer,
    kind,
    label,
    op_name,
    parent_seq,
    short,
    strip,
    summary,
    version_dims,
)

Json = dict[str, Any]

_BARRIER_OPS = {
    "mbarrier_wait_parity": "wait",
    "ptx_arrive_barrier": "arrive",
    "mbarrier_arrive": "arrive",
    "ptx_arrive_barrier_expect_tx": "arrive_expect_tx",
    "mbarrier_expect_tx": "expect_tx",
}


def _barrier_of(value: Any) -> Any | None:
    return value.indices[0] if kind(value) == "BufferLoad" and len(value.indices) == 1 else None


def _op(stmt: Any) -> str:
    call = call_of(stmt)
    return short(op_name(call)) if call is not None else kind(strip(stmt))


def _items(body: Any, planned: list[Any], planned_var: Any, var: Any,
           period: range) -> list[Json]:
    items: list[Json] = []
    used: set[int] = set()
    for stmt in flatten(body):
        stmt = strip(stmt)
        if kind(stmt) == "IfThenElse" and stmt.else_case is None:
            inner = _items(stmt.then_case, planned, planned_var, var, period)
            items.append({"when": str(stmt.condition),
                          "active": evaluate(stmt.condition, var, period), "items": inner})
            continue
        call = call_of(stmt)
        if call is not None and short(op_name(call)) in _BARRIER_OPS:
            index = _barrier_of(call.args[0])
            entry: Json = {"barrier_op": _BARRIER_OPS[short(op_name(call))],
                           "op": short(op_name(call)),
                           "barrier": evaluate(index, var, period) if index is not None
                           else None}
            if entry["barrier_op"] == "wait" and len(call.args) > 1:
                entry["parity"] = evaluate(call.args[1], var, period)
            items.append(entry)
            continue
        found = identify(stmt, planned, planned_var, used)
        if found is None:
            items.append({"other": _op(stmt)})
            continue
        index_, match = found
        used.add(index_)
        entry = {"stmt": index_, "op": _op(stmt), "buffers": buffer_names(stmt)}
        slots: list[Json] = []
        for name, version, access in match.versions:
            slot = {"buffer": name, "access": access, "slot": evaluate(version, var, period)}
            if slot not in slots:
                slots.append(slot)
        if slots:
            entry["versions"] = slots
        if call is not None and "barrier" in call.annotations:
            index = _barrier_of(call.annotations["barrier"])
            entry["barrier"] = evaluate(index, var, period) if index is not None else None
            entry["arrives"] = bool(int(call.annotations.get("emit_arrive", 0)))
        items.append(entry)
    return items


def _specialised_plan(plans: list[Any], producer: Any) -> Any:
    """Which ``T.Pipelined`` loop was warp-specialised: the one whose loop variable the
    producer branch runs (a loop left to the software pipeliner keeps its ``num_stages``
    annotation) and whose statements share the most buffers with it; the first one when
    nothing tells them apart."""
    runs: list[Any] = []

    def visit(node: Any) -> bool:
        if kind(node) == "For" and "num_stages" not in node.annotations:
            runs.append(node)
            return False
        return True

    if producer is not None:
        pre_order_visit(producer, visit)
    names = {str(loop.loop_var.name) for loop in runs}
    touched = {name for loop in runs for name in buffer_names(loop)}

    def score(plan: Any) -> tuple[int, int]:
        mine = {name for stmt in flatten(plan.body) for name in buffer_names(stmt)}
        return (str(plan.loop_var.name) in names, len(mine & touched))

    best = max(score(plan) for plan in plans)
    return next(plan for plan in plans if score(plan) == best)


def _branch_loop(branch: Any, var_name: str) -> tuple[list[Any], Any | None, list[Any]]:
    """(items before, the pipelined loop, items after) of one warp group's branch."""
    items = flatten(branch)
    for i, item in enumerate(items):
        if kind(item) == "For" and str(item.loop_var.name) == var_name \
                and "num_stages" not in item.annotations:  # not a loop left to pipeline
            return items[:i], item, items[i + 1:]
    return items, None, []


def _loose(items: list[Any]) -> list[Json]:
    """Statements outside the loop: their operation, buffers and barrier."""
    out: list[Json] = []
    for item in items:
        call = call_of(item)
        entry: Json = {"op": _op(item), "buffers": buffer_names(strip(item))}
        if call is not None and "barrier" in call.annotations:
            index = _barrier_of(call.annotations["barrier"])
            entry["barrier"] = integer(index) if index is not None else None
        out.append(entry)
    return out


def _barrier_ring(func: Any) -> list[Json]:
    inits: list[tuple[str, list[int]]] = []
    names: list[Json] = []

    def visit(node: Any) -> None:
        if kind(node) in ("SBlock", "Block") and "barrier_init" in node.annotations:
            for name, counts in node.annotations["barrier_init"].items():
                inits.append((str(getattr(name, "name", name)), [int(c) for c in counts]))
        for buffer in getattr(node, "alloc_buffers", None) or []:
            if str(buffer.scope()) == "shared.barrier":
                names.append({"name": str(buffer.name), "size": integer(buffer.shape[0])})

    post_order_visit(func.body, visit)
    by_name = {name: counts for name, counts in inits}
    ring = []
    for i, found in enumerate(names):
        counts = by_name.get(found["name"])
        if counts is None and len(inits) == len(names):
            counts = inits[i][1]
        ring.append({**found, "init": counts or []})
    return ring


def warp_specialized_schedule(before_func: Any, ws_func: Any) -> Json | None:
    """The producer/consumer loops of ``ws_func`` (after
    ``tl.ProducerConsumerWarpSpecialized``), matched to the ``T.Pipelined`` statements of
    ``before_func`` (before ``tl.AutoWarpSpecialization``)."""
    plans = annotated_loops(before_func, "num_stages")
    if not plans:
        return None
    scope: list[Any] = []

    def visit(node: Any) -> None:
        if kind(node) == "AttrStmt" and node.attr_key == "kWarpSpecializationScope":
            scope.append(node)

    post_order_visit(ws_func.body, visit)
    if not scope:
        return None
    if kind(scope[0].body) != "IfThenElse":
        raise ValueError("the warp-specialised block is not split into a producer and a "
                         f"consumer branch ({kind(scope[0].body)})")
    split = scope[0].body
    plan = _specialised_plan(plans, split.then_case)
    planned = flatten(plan.body)
    stages = int(plan.annotations["num_stages"])
    var_name = str(plan.loop_var.name)
    # Only the buffers this loop's statements touch travel through its barrier ring; a
    # second T.Pipelined loop's buffers are versioned too, by the software pipeliner.
    touched = {name for stmt in planned for name in buffer_names(stmt)}
    out: Json = {"loop_var": var_name, "num_stages": stages,
                 "version_dims": {name: size for name, size
                                  in version_dims(before_func, ws_func).items()
                                  if name in touched},
                 "statements": [{"ir": label(s), **summary(s)} for s in planned],
                 "producer_threads": integer(split.condition.b)}
    period = max(2 * stages, 2)
    for role, branch in (("producer", split.then_case), ("consumer", split.else_case)):
        before, loop, after = _branch_loop(branch, var_name)
        if loop is None:
            raise ValueError(f"the {role} branch runs no loop over {var_name}")
        extent = integer(loop.extent)
        out[role] = {
            "before": _loose(before),
            "loop": {"min": integer(loop.min), "extent": extent},
            "body": _items(loop.body, planned, plan.loop_var, loop.loop_var,
                           range(0, min(period, extent or period))),
            "after": _loose(after),
        }
    found = parent_seq(ws_func, scope[0])
    prelude = _loose(found[0][:found[1]]) if found else []
    out["prelude"] = [item for item in prelude if "barrier" in item]
    out["barriers"] = _barrier_ring(ws_func)
    return out
