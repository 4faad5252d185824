"""The statements of a loop as ``tl.PipelinePlanning`` scheduled them, each with its stage
and order.

The planner schedules the loop body's top-level statements, buffer declarations left out
(``AllocBuffer``, ``DeclBuffer``). A *replayable* scalar binding (``scale = sb[bx, k]``: a
``Bind`` whose value reads nothing the loop writes) is not scheduled either: the stage
and order arrays hold one entry per other statement, the loop's
``software_pipeline_replayable_scalar_binds`` holds one flag per statement, and the
pipeliner evaluates such a binding again before each statement that reads it (inside the
block it emits for that statement). :func:`scheduled` pairs each statement with its entries;
a replayed binding gets the stages of the statements that read it, through the bindings
that read it in turn (``a = X[k]``, ``b = a * 2``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tvm.tirx.stmt_functor import post_order_visit

from .walk import flatten, kind

REPLAYED = "software_pipeline_replayable_scalar_binds"
_DECLARATIONS = ("AllocBuffer", "DeclBuffer")


@dataclass
class Planned:
    """One statement of a planned loop body: its stage and order (None for a replayed
    binding, which has none of its own) and, for a replayed binding, the stages of the
    statements that read it."""

    stmt: Any
    stage: int | None
    order: int | None
    replayed: bool = False
    reader_stages: list[int] = field(default_factory=list)

    @property
    def drawn_stage(self) -> int:
        """The stage the statement runs in: its own, or its earliest reader's."""
        if self.stage is not None:
            return self.stage
        return min(self.reader_stages, default=0)


def body(loop: Any) -> list[Any]:
    """The statements the planner schedules or replays: the body's, declarations left out."""
    return [stmt for stmt in flatten(loop.body) if kind(stmt) not in _DECLARATIONS]


def _reads(stmt: Any, var: Any) -> bool:
    found = [False]

    def visit(node: Any) -> None:
        if kind(node) == "Var" and node.same_as(var):
            found[0] = True

    post_order_visit(stmt, visit)
    return found[0]


def scheduled(loop: Any) -> list[Planned] | None:
    """Each statement of a loop ``tl.PipelinePlanning`` annotated, with its schedule; None
    where the annotations do not fit the body (another TileLang's convention)."""
    ann = loop.annotations
    stmts = body(loop)
    stage = [int(s) for s in ann["software_pipeline_stage"]]
    order = [int(o) for o in ann.get("software_pipeline_order", range(len(stage)))]
    flags = [int(f) for f in ann.get(REPLAYED, [])] or [0] * len(stmts)
    if len(flags) != len(stmts) or len(stage) != len(stmts) - sum(flags) \
            or len(order) != len(stage):
        return None
    out: list[Planned] = []
    taken = 0
    for stmt, flag in zip(stmts, flags, strict=True):
        if flag:
            out.append(Planned(stmt, None, None, replayed=True))
            continue
        out.append(Planned(stmt, stage[taken], order[taken]))
        taken += 1
    # Readers after the binding, the last binding first: a binding read only by another
    # binding runs where that one's readers run.
    for i in range(len(out) - 1, -1, -1):
        if not out[i].replayed:
            continue
        stages: set[int] = set()
        for reader in out[i + 1:]:
            if _reads(reader.stmt, out[i].stmt.var):
                stages.update([reader.stage] if reader.stage is not None
                              else reader.reader_stages)
        out[i].reader_stages = sorted(stages)
    return out
