"""Which ``T.Pipelined`` loop of the kernel an IR loop is, and which kernel line each of
its statements came from.

The IR keeps no source spans, but two things survive tracing: the loop variable's name
and the buffers each statement touches, with the operation it performs (``copy``,
``gemm``, a ``For`` over ``T.Parallel``...). A loop is matched to the kernel's loop of the
same variable whose statements name its buffers; its statements are aligned with the
loop body in order (both are in source order), each IR statement with a kernel statement
that names every buffer it touches and does the same operation. Trace-time Python (``if
is_causal:``) folds into one statement or none, and a call to a ``@T.macro`` becomes
several: the alignment allows both. What stays unaligned is said in words.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..kernel.statements import PipelinedLoop, Statement

# IR operations by the name a kernel calls them (``T.tma_copy`` is a ``T.copy`` the
# warp-specialisation passes rewrote; reductions are one ``reduce`` operation).
_SAME = {"tma_copy": "copy", "gemm_py": "gemm", "IfThenElse": "If", "BufferStore": "Assign",
         "clear": "fill"}
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


def compatible(ir: Mapping[str, Any], stmt: Statement) -> int:
    """How well an IR statement fits a kernel statement: 3 the same operation on buffers
    it names, 2 a (trace-time) ``if`` naming them, 1 another operation naming them or a
    helper call naming one, 0 not it."""
    buffers = _buffers(ir)
    if stmt.helper:  # a macro's body: its buffers may go by its parameters' names
        return 1 if not buffers or buffers & stmt.names else 0
    if buffers and not buffers <= stmt.names:
        return 0
    mine, theirs = _ir_op(str(ir.get("op", ""))), _source_op(stmt.op)
    if mine == theirs:
        return 3
    if not buffers or "copy" in (mine, theirs):
        return 0  # a copy and a gemm of the same tiles are two statements
    # A folded ``if``, or an operation spelt otherwise (``T.wgmma_gemm``): by buffers.
    return 2 if theirs in ("If", "With") else 1


def align(ir: Sequence[Mapping[str, Any]], body: Sequence[Statement]) -> list[int | None]:
    """For each IR statement, the index of the kernel statement it came from (None: none
    fits), keeping both orders; a helper call may take several IR statements in a row."""
    n, m = len(ir), len(body)
    # best[i][j]: the best total fit of ir[i:] with body[j:].
    best = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        for j in range(m - 1, -1, -1):
            fit = compatible(ir[i], body[j])
            options = [best[i + 1][j], best[i][j + 1]]
            if fit:
                options.append(fit + best[i + 1][j + 1])
                if body[j].helper:
                    options.append(fit + best[i + 1][j])
            best[i][j] = max(options)
    found: list[int | None] = []
    i = j = 0
    while i < n:
        fit = compatible(ir[i], body[j]) if j < m else 0
        if fit and best[i][j] == fit + best[i + 1][j + 1]:
            found.append(j)
            i, j = i + 1, j + 1
        elif fit and body[j].helper and best[i][j] == fit + best[i + 1][j]:
            found.append(j)
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
