"""Walking TileLang's IR for the schedule readers: statements, calls, constants, loops.

Nothing here prints IR: printing costs more than the whole reading.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tilelang import tvm
from tvm.tirx.stmt_functor import post_order_visit, pre_order_visit, substitute

_FOLD: dict[str, Callable[[int, int], int]] = {
    "Add": lambda a, b: a + b, "Sub": lambda a, b: a - b, "Mul": lambda a, b: a * b,
    "FloorDiv": lambda a, b: a // b, "FloorMod": lambda a, b: a % b,
    "Min": min, "Max": max, "EQ": lambda a, b: int(a == b), "NE": lambda a, b: int(a != b),
    "LT": lambda a, b: int(a < b), "LE": lambda a, b: int(a <= b),
    "GT": lambda a, b: int(a > b), "GE": lambda a, b: int(a >= b),
    "bitwise_xor": lambda a, b: a ^ b, "bitwise_and": lambda a, b: a & b,
    "bitwise_or": lambda a, b: a | b, "shift_left": lambda a, b: a << b,
    "shift_right": lambda a, b: a >> b,
}


def kind(node: Any) -> str:
    return type(node).__name__


def op_name(node: Any) -> str:
    """``tl.tileop.copy`` of a call, ``""`` of anything else."""
    return str(getattr(getattr(node, "op", None), "name", ""))


def short(op: str) -> str:
    return op.rsplit(".", 1)[-1]


def strip(stmt: Any) -> Any:
    """The statement inside the (anonymous) blocks the pipeliner wraps each one in."""
    while kind(stmt) in ("SBlockRealize", "BlockRealize", "SBlock", "Block"):
        stmt = stmt.block.body if hasattr(stmt, "block") else stmt.body
    return stmt


def flatten(stmt: Any) -> list[Any]:
    """The statements of a body, nested sequences flattened; a block stays whole."""
    stmt = strip(stmt)
    if kind(stmt) != "SeqStmt":
        return [stmt]
    out: list[Any] = []
    for item in stmt.seq:
        out.extend(flatten(item) if kind(item) == "SeqStmt" else [item])
    return out


def call_of(stmt: Any) -> Any | None:
    """The call a statement evaluates, if that is all it does."""
    stmt = strip(stmt)
    if kind(stmt) == "Evaluate" and kind(stmt.value) == "Call":
        return stmt.value
    return None


def integer(expr: Any) -> int | None:
    return int(expr.value) if kind(expr) == "IntImm" else None


def buffer_names(stmt: Any) -> list[str]:
    """Buffers a statement touches, in order (barriers left out)."""
    names: list[str] = []

    def visit(node: Any) -> None:
        buffer = getattr(node, "buffer", None)
        if buffer is not None and str(buffer.name) not in names \
                and "barrier" not in str(buffer.scope()):
            names.append(str(buffer.name))

    post_order_visit(stmt, visit)
    return names


def label(stmt: Any) -> str:
    """A short name for an IR statement that no source text names: its operation and
    buffers (``T.copy(K, K_shared)``, ``scale = (sb)`` for a binding), read without
    printing the IR."""
    stmt = strip(stmt)
    call = call_of(stmt)
    buffers = ", ".join(buffer_names(stmt))
    if call is not None:
        return f"T.{short(op_name(call))}({buffers})"
    if kind(stmt) in ("Bind", "LetStmt"):
        return f"{stmt.var.name} = ({buffers})"
    return f"{kind(stmt)} over {buffers}" if buffers else kind(stmt)


# The binding ``tl.IfStmtBinding`` adds to keep a condition's value where the statements
# it guards could change what it reads (``src/transform/if_stmt_binding.cc``).
_CONDITION = "if_condition"


def guarded(stmt: Any) -> Any | None:
    """The one statement an ``if`` without ``else`` guards, through nested guards (a
    condition TileLang split per statement); None for anything else."""
    inner = None
    stmt = strip(stmt)
    while kind(stmt) == "IfThenElse" and stmt.else_case is None:
        stmt = strip(stmt.then_case)
        if kind(stmt) == "SeqStmt":
            return None
        inner = stmt
    return inner


def summary(stmt: Any) -> dict[str, Any]:
    """What the kernel's statements are matched by (:mod:`...core.results.loop_match`):
    the operation (a guarded statement's, for ``if c: op``), the buffers, whether it is
    guarded, and what it is where TileLang added it (the binding that keeps a condition's
    value)."""
    stmt = strip(stmt)
    inner = guarded(stmt)
    what = inner if inner is not None else stmt
    call = call_of(what)
    found: dict[str, Any] = {"op": op_name(call) if call is not None else kind(what),
                             "buffers": buffer_names(stmt)}
    if inner is not None:
        found["guarded"] = True
    if kind(stmt) == "Bind" and str(stmt.var.name).startswith(_CONDITION):
        found["added"] = "its condition's value, kept once for the statements it guards"
    return found


def statements(stmt: Any) -> list[Any]:
    """Every statement of ``stmt``, itself included, in program order (no expression is
    walked into: none holds a statement), each once."""
    found: list[Any] = []

    def visit(node: Any) -> bool:
        if isinstance(node, tvm.ir.PrimExpr):
            return False
        found.append(node)
        return True

    pre_order_visit(stmt, visit)
    return found


def visit_calls(node: Any, fn: Callable[[Any], None]) -> None:
    def visit(found: Any) -> None:
        if kind(found) == "Call":
            fn(found)

    post_order_visit(node, visit)


def fold(expr: Any) -> int | None:
    """An integer expression without variables, evaluated (the analyzer leaves calls such
    as ``T.bitwise_xor`` alone)."""
    what = kind(expr)
    if what == "IntImm":
        return int(expr.value)
    name = short(op_name(expr)) if what == "Call" else what
    if name not in _FOLD:
        return None
    a, b = (expr.args[0], expr.args[1]) if what == "Call" else (expr.a, expr.b)
    x, y = fold(a), fold(b)
    return None if x is None or y is None else _FOLD[name](x, y)


def evaluate(expr: Any, var: Any, values: range) -> list[int] | None:
    """``expr`` at each value of ``var`` (None if it does not fold to integers)."""
    analyzer = tvm.arith.Analyzer()
    out: list[int] = []
    for value in values:
        folded = analyzer.simplify(substitute(expr, {var: tvm.tirx.IntImm(var.dtype, value)}))
        number = fold(folded)
        if number is None:
            return None
        out.append(number)
    return out


def simplified(expr: Any) -> int | None:
    return fold(tvm.arith.Analyzer().simplify(expr))


def annotated_loops(func: Any, key: str) -> list[Any]:
    """The ``For`` loops of ``func`` carrying annotation ``key``, in post-order: program
    order for loops one after another (a nested one comes before its outer loop)."""
    loops: list[Any] = []

    def visit(node: Any) -> None:
        if kind(node) == "For" and key in node.annotations:
            loops.append(node)

    post_order_visit(func.body, visit)
    return loops


def _position(seq: Any, target: Any) -> int | None:
    """Where ``target`` is in a ``SeqStmt`` (itself or inside the blocks wrapping it)."""
    for i, child in enumerate(seq.seq):
        inner = child
        while True:
            if inner.same_as(target):
                return i
            stripped = strip(inner)
            if stripped.same_as(inner):
                break
            inner = stripped
    return None


def parent_seq(func: Any, target: Any) -> tuple[list[Any], int] | None:
    """The statement list holding ``target`` (through wrapping blocks) and its index; of
    two lists sharing it, the first in post-order."""
    holders = [(seq, at) for seq in statements(func.body) if kind(seq) == "SeqStmt"
               for at in [_position(seq, target)] if at is not None]
    if len(holders) > 1:  # a statement shared by two lists (seldom): which comes first
        order: list[Any] = []
        post_order_visit(func.body, lambda node: order.append(node)
                         if kind(node) == "SeqStmt" else None)
        first = {seq.__chandle__(): n for n, seq in enumerate(order)}
        holders.sort(key=lambda holder: first[holder[0].__chandle__()])
    return (list(holders[0][0].seq), holders[0][1]) if holders else None


def shared_shapes(func: Any) -> dict[str, int]:
    """Rank of each shared (non-barrier) buffer allocated in ``func``."""
    found: dict[str, int] = {}

    def visit(node: Any) -> None:
        for buffer in getattr(node, "alloc_buffers", None) or []:
            scope = str(buffer.scope())
            if scope.startswith("shared") and "barrier" not in scope:
                found[str(buffer.name)] = len(buffer.shape)
                found[f"{buffer.name}#0"] = integer(buffer.shape[0]) or -1

    post_order_visit(func.body, visit)
    return found


def version_dims(before: Any, after: Any) -> dict[str, int]:
    """Shared buffers that gained a leading version dimension between two functions, with
    its size."""
    old, new = shared_shapes(before), shared_shapes(after)
    return {name: new[f"{name}#0"] for name in sorted(new)
            if "#" not in name and name in old and new[name] == old[name] + 1}
