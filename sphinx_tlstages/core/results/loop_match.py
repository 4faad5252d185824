"""Which ``T.Pipelined`` loop of the kernel an IR loop is, and which kernel line each of
its statements came from.

The IR keeps no source spans, but two things survive tracing: the loop variable's name
and the buffers each statement touches, with the operation it performs (``copy``,
``gemm``, a ``For`` over ``T.Parallel``...). A loop is matched to the kernel's loop of the
same variable whose statements name its buffers; its statements are aligned with the
loop body in order (both are in source order), each IR statement with a kernel statement
that names every buffer it touches and does the same operation. Trace-time Python (``if
is_causal:``) folds into one statement or none, and a call to a ``@T.macro`` becomes
several: the alignment allows both. A compound statement (an ``if``, a ``with``, a Python
``for`` unrolled while tracing) is matched whole or by the statements inside it: TileLang
splits an ``if`` without ``else`` into one guarded statement per statement it holds
(``tl.IfStmtBinding``), keeping the condition's value in a binding of its own where the
statements could change it; that binding is TileLang's, attached to the ``if``. What stays
unaligned is said in words.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..kernel.statements import PipelinedLoop, Statement

# IR operations by the name a kernel calls them (``T.tma_copy`` is a ``T.copy`` the
# warp-specialisation passes rewrote; reductions are one ``reduce`` operation).
_SAME = {"tma_copy": "copy", "gemm_py": "gemm", "IfThenElse": "If", "BufferStore": "Assign",
         "Bind": "Assign", "LetStmt": "Assign", "clear": "fill"}
_ASSIGNS = ("Assign", "AugAssign", "AnnAssign")


def _ir_op(op: str) -> str:
    short = op.rsplit(".", 1)[-1]
    return _SAME.get(short, short)


def _source_op(op: str) -> str:
    if op in _ASSIGNS:
        return "Assign"
    if op.startswith("reduce_"):
        return "reduce"
    return _SAME.get(op, op)


def _buffers(ir: Mapping[str, Any]) -> set[str]:
    return set(ir.get("buffers", []))


def _units(body: Sequence[Statement]) -> list[tuple[Statement, int]]:
    """The statements IR statements may come from, in source order: each statement, then
    the statements inside it (see :attr:`Statement.inner`), each with the index just past
    the statements it holds."""
    out: list[tuple[Statement, int]] = []

    def add(stmt: Statement) -> None:
        at = len(out)
        out.append((stmt, 0))
        for each in stmt.inner:
            add(each)
        out[at] = (stmt, len(out))

    for stmt in body:
        add(stmt)
    return out


def _unguarded(ir: Mapping[str, Any]) -> Mapping[str, Any]:
    return {**ir, "guarded": False}


def compatible(ir: Mapping[str, Any], stmt: Statement) -> int:
    """How well an IR statement fits a kernel statement: 3 the same operation on buffers
    it names, 2 a (trace-time) ``if`` naming them, 1 another operation naming them or a
    helper call naming one, 0 not it. A statement TileLang adds (the value of a
    condition it keeps) fits the ``if`` it serves; a guarded one (``if c: op``, a
    condition TileLang split per statement) fits an ``if`` guarding that one statement
    as well as it fits that statement."""
    buffers = _buffers(ir)
    if not buffers and ir.get("theirs"):
        return 0  # only TileLang's own buffers: nothing of the kernel's to know it by
    if ir.get("added"):
        return 3 if stmt.op == "If" and buffers <= stmt.names else 0
    if ir.get("guarded") and stmt.op == "If" and len(stmt.inner) == 1:
        return compatible(_unguarded(ir), stmt.inner[0])
    if stmt.helper:  # a macro's body: its buffers may go by its parameters' names
        return 1 if not buffers or buffers & stmt.names else 0
    mine, theirs = _ir_op(str(ir.get("op", ""))), _source_op(stmt.op)
    if buffers and not buffers <= stmt.names:
        # An operand TileLang rewrote (a gemm reading the shared tile a fragment was
        # copied from): the same operation, on all its other buffers.
        return 1 if mine == theirs and len(buffers - stmt.names) == 1 \
            and len(buffers & stmt.names) >= 2 else 0
    if mine == theirs:
        return 3
    if not buffers or "copy" in (mine, theirs):
        return 0  # a copy and a gemm of the same tiles are two statements
    # A folded ``if``, or an operation spelt otherwise (``T.wgmma_gemm``): by buffers.
    return 2 if theirs in ("If", "With") or stmt.inner else 1


def align(ir: Sequence[Mapping[str, Any]], body: Sequence[Statement]
          ) -> list[Statement | None]:
    """For each IR statement, the kernel statement it came from (None: none fits),
    keeping both orders: a statement of the body, or one inside a compound statement
    TileLang took apart. A helper call, or a statement of a loop unrolled while tracing,
    may take several IR statements in a row; a statement TileLang adds takes none of the
    kernel's from the statements after it."""
    units = _units(body)
    n, m = len(ir), len(units)
    # best[i][j]: the best total fit of ir[i:] with units[j:].
    best = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        for j in range(m - 1, -1, -1):
            stmt, end = units[j]
            fit = compatible(ir[i], stmt)
            options = [best[i + 1][j], best[i][j + 1]]
            if fit:
                options.append(fit + best[i + 1][end])
                if stmt.helper or stmt.repeated or ir[i].get("added"):
                    options.append(fit + best[i + 1][j])
            best[i][j] = max(options)
    found: list[Statement | None] = []
    i = j = 0
    while i < n:
        unit, end = units[j] if j < m else (None, m)
        fit = compatible(ir[i], unit) if unit is not None else 0
        added = bool(ir[i].get("added"))
        stays = unit is not None and (unit.helper or unit.repeated or added)
        # A whole statement before the statements inside it, where both fit as well.
        if fit and not added and best[i][j] == fit + best[i + 1][end]:
            found.append(unit)
            i, j = i + 1, end
        elif fit and stays and best[i][j] == fit + best[i + 1][j]:
            found.append(unit)
            i += 1
        elif j < m and best[i][j] == best[i][j + 1]:
            j += 1
        else:
            found.append(None)
            i += 1
    return found


def _fit(buffers: set[str], loop: PipelinedLoop) -> int:
    return len(buffers & {name for stmt in loop.body for name in stmt.names})


def which_loop(var: str | None, buffers: set[str], loops: Sequence[PipelinedLoop],
               taken: set[int]) -> int | None:
    """The kernel loop an IR loop is: of those over the same variable, the one naming
    most of its buffers, a loop not yet taken first (a macro's loop, called twice, is
    taken twice); None where no kernel loop names any of them."""
    candidates = [i for i, loop in enumerate(loops) if var is None or loop.var == var] \
        or list(range(len(loops)))
    scored = sorted(candidates, key=lambda i: (i not in taken, _fit(buffers, loops[i]), -i),
                    reverse=True)
    if not scored or (buffers and _fit(buffers, loops[scored[0]]) == 0):
        return None
    return scored[0]


def readable(ir: Mapping[str, Any]) -> str:
    """An IR statement in the kernel's own spelling as far as the IR tells it: its
    operation and buffers (``T.copy(X, X_s2)``, ``for over tile, row_max``)."""
    op = str(ir.get("op", ""))
    buffers = ", ".join(ir.get("buffers", []))
    short = op.rsplit(".", 1)[-1]
    if "." in op:
        return f"T.{_SAME.get(short, short)}({buffers})"
    word = {"For": "a loop", "IfThenElse": "a condition", "BufferStore": "an assignment"}
    return f"{word.get(short, short)} over {buffers}" if buffers else word.get(short, short)
