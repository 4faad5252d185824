"""Which planned statement an emitted one is a copy of, by unification.

The software pipeliner and the warp-specialisation passes emit *copies* of the
``T.Pipelined`` body's statements, with the loop variable replaced (``ko -> ko + 2``,
``ko -> 1``) and a version index added to each multi-versioned shared buffer
(``A_shared[(ko + 2) % 3, ...]``). :class:`Match` unifies a planned statement with an
emitted one and records what was substituted; :func:`identify` picks the planned
statement an emitted one copies.
"""

from __future__ import annotations

from typing import Any

from tilelang import tvm

from .walk import call_of, integer, kind, op_name, strip

# T.copy is lowered to T.tma_copy by the warp-specialisation passes: the same statement.
_SAME_OP = {"tl.tileop.tma_copy": "tl.tileop.copy"}
_BINARY = {"Add", "Sub", "Mul", "Div", "Mod", "FloorDiv", "FloorMod", "Min", "Max",
           "EQ", "NE", "LT", "LE", "GT", "GE", "And", "Or"}
_ACCESS = {1: "read", 2: "write", 3: "readwrite"}


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
        if kp == "Bind":  # binds in the enclosing scope: no body (TileLang 0.1.14 on)
            return self.expr(p.value, e.value)
        if kp == "LetStmt":  # the older form, its scope its body
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
