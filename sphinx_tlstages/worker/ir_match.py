"""Small tools over TileLang's IR for the schedule readers: walking, folding, unifying.

The software pipeliner and the warp-specialisation passes emit *copies* of the
``T.Pipelined`` body's statements, with the loop variable replaced (``ko -> ko + 2``,
``ko -> 1``) and a version index added to each multi-versioned shared buffer
(``A_shared[(ko + 2) % 3, ...]``). :class:`Match` tells which planned statement an emitted
one is a copy of, by unification, and records what was substituted; :func:`evaluate` folds
an index expression at given iterations. Nothing here prints IR (printing costs more than
the whole reading).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tilelang import tvm
from tvm.tirx.stmt_functor import post_order_visit, substitute

# T.copy is lowered to T.tma_copy by the warp-specialisation passes: the same statement.
_SAME_OP = {"tl.tileop.tma_copy": "tl.tileop.copy"}
_BINARY = {"Add", "Sub", "Mul", "Div", "Mod", "FloorDiv", "FloorMod", "Min", "Max",
           "EQ", "NE", "LT", "LE", "GT", "GE", "And", "Or"}
_ACCESS = {1: "read", 2: "write", 3: "readwrite"}
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


class Match:
    """Unify a ``T.Pipelined`` body statement ``p`` (loop variable ``var``) with a statement
    the compiler emitted: equal up to the value substituted for ``var``, the version index
    added to each multi-versioned buffer access, and annotations. Records the substitution
    and, per versioned access, the version index expression and the access kind."""

    def __init__(self, var: Any) -> None:
        self.var = var
        self.bindings: list[Any] = []
        self.versions: list[tuple[str, Any, str]] = []
        self._access = ["read"]

    def expr(self, p: Any, e: Any) -> bool:
        kp, ke = kind(p), kind(e)
        if kp == "Var" and p.same_as(self.var):
            self.bindings.append(e)
            return True
        if kp != ke:
            return False
        if kp == "Var":
            return str(p.name) == str(e.name)
        if kp in ("IntImm", "FloatImm", "StringImm"):
            return bool(p.value == e.value) and str(p.dtype) == str(e.dtype)
        if kp in _BINARY:
            return self.expr(p.a, e.a) and self.expr(p.b, e.b)
        if kp == "Not":
            return self.expr(p.a, e.a)
        if kp == "Cast":
            return str(p.dtype) == str(e.dtype) and self.expr(p.value, e.value)
        if kp == "Select":
            return (self.expr(p.condition, e.condition) and self.expr(p.true_value, e.true_value)
                    and self.expr(p.false_value, e.false_value))
        if kp == "Ramp":
            return self.expr(p.base, e.base) and self.expr(p.stride, e.stride)
        if kp == "Broadcast":
            return self.expr(p.value, e.value)
        if kp == "BufferLoad":
            return self._indices(p.buffer, p.indices, e.buffer, e.indices, self._access[-1])
        if kp == "Call":
            return self._call(p, e)
        return bool(tvm.ir.structural_equal(p, e))

    def _indices(self, pb: Any, pi: Any, eb: Any, ei: Any, access: str) -> bool:
        if str(pb.name) != str(eb.name):
            return False
        p_idx, e_idx = list(pi), list(ei)
        if len(e_idx) == len(p_idx) + 1:  # the version dimension the pipeliner added
            self.versions.append((str(eb.name), e_idx[0], access))
            e_idx = e_idx[1:]
        return len(p_idx) == len(e_idx) and all(
            self.expr(a, b) for a, b in zip(p_idx, e_idx, strict=True))

    def _call(self, p: Any, e: Any) -> bool:
        op_p, op_e = op_name(p), op_name(e)
        if _SAME_OP.get(op_e, op_e) != _SAME_OP.get(op_p, op_p):
            return False
        p_args, e_args = list(p.args), list(e.args)
        if op_p == "tl.region" and e_args and p_args and kind(e_args[0]) == "BufferLoad" \
                and len(e_args) == len(p_args) + 1:
            e_args = e_args[:2] + e_args[3:]  # the version dimension's extent (1)
        if len(p_args) != len(e_args):
            return False
        if op_p == "tl.region":
            self._access.append(_ACCESS.get(integer(p_args[1]) or 1, "read"))
            try:
                return all(self.expr(a, b) for a, b in zip(p_args, e_args, strict=True))
            finally:
                self._access.pop()
        return all(self.expr(a, b) for a, b in zip(p_args, e_args, strict=True))

    def stmt(self, p: Any, e: Any) -> bool:
        p, e = strip(p), strip(e)
        kp = kind(p)
        if kp != kind(e):
            return False
        if kp == "Evaluate":
            return self.expr(p.value, e.value)
        if kp == "SeqStmt":
            return len(p.seq) == len(e.seq) and all(
                self.stmt(a, b) for a, b in zip(p.seq, e.seq, strict=True))
        if kp == "BufferStore":
            self._access.append("write")
            try:
                same = self._indices(p.buffer, p.indices, e.buffer, e.indices, "write")
            finally:
                self._access.pop()
            return same and self.expr(p.value, e.value)
        if kp == "For":
            return (str(p.kind) == str(e.kind) and self.expr(p.min, e.min)
                    and self.expr(p.extent, e.extent) and self.stmt(p.body, e.body))
        if kp == "IfThenElse":
            if (p.else_case is None) != (e.else_case is None):
                return False
            return (self.expr(p.condition, e.condition) and self.stmt(p.then_case, e.then_case)
                    and (p.else_case is None or self.stmt(p.else_case, e.else_case)))
        if kp in ("LetStmt", "Bind"):
            return self.expr(p.value, e.value) and self.stmt(p.body, e.body)
        if kp == "AttrStmt":
            return str(p.attr_key) == str(e.attr_key) and self.stmt(p.body, e.body)
        return bool(tvm.ir.structural_equal(p, e))

    def binding(self) -> Any | None:
        """The value substituted for the loop variable (None if the statement never uses
        it); raises ValueError if two uses disagree."""
        if not self.bindings:
            return None
        first = self.bindings[0]
        for other in self.bindings[1:]:
            if not tvm.ir.structural_equal(first, other):
                raise ValueError("inconsistent loop variable")
        return first


def _signature(stmt: Any) -> tuple[str, str]:
    stmt = strip(stmt)
    call = call_of(stmt)
    op = op_name(call) if call is not None else ""
    return kind(stmt), _SAME_OP.get(op, op)


def identify(item: Any, planned: list[Any], var: Any, used: set[int]) -> tuple[int, Match] | None:
    """Which planned statement ``item`` is a copy of: the first not yet used that unifies
    (statements with identical text are told apart by the order they appear in)."""
    found: list[tuple[int, Match]] = []
    wanted = _signature(item)
    for index, stmt in enumerate(planned):
        if _signature(stmt) != wanted:
            continue  # cheaper than unifying: another kind of statement or operation
        match = Match(var)
        try:
            if match.stmt(stmt, item):
                match.binding()
                found.append((index, match))
        except ValueError:
            continue
    fresh = [f for f in found if f[0] not in used]
    chosen = fresh or found
    return chosen[0] if chosen else None


def annotated_loops(func: Any, key: str) -> list[Any]:
    """The ``For`` loops of ``func`` carrying annotation ``key``, in post-order: program
    order for loops one after another (a nested one comes before its outer loop)."""
    loops: list[Any] = []

    def visit(node: Any) -> None:
        if kind(node) == "For" and key in node.annotations:
            loops.append(node)

    post_order_visit(func.body, visit)
    return loops


def parent_seq(func: Any, target: Any) -> tuple[list[Any], int] | None:
    """The statement list holding ``target`` (through wrapping blocks) and its index."""
    found: list[tuple[list[Any], int]] = []

    def visit(node: Any) -> None:
        if kind(node) != "SeqStmt" or found:
            return
        for i, child in enumerate(node.seq):
            inner = child
            while True:
                if inner.same_as(target):
                    found.append((list(node.seq), i))
                    return
                stripped = strip(inner)
                if stripped.same_as(inner):
                    break
                inner = stripped

    post_order_visit(func.body, visit)
    return found[0] if found else None


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
