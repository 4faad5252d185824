"""Integer intervals of TIR expressions, for the hazard trace.

TVM's own bound analysis leaves bitwise calls on constants alone (``T.bitwise_and(ko + 1,
1)`` bounds to [0, 1] with ``ko`` known), which merges a pipeline's slots; this evaluator
folds them. Variables are looked up in an environment of intervals (a point for an
unrolled loop's variable, a range for a thread index or a summarised loop); an
expression it has no rule for raises :class:`Unbounded`.
"""

from __future__ import annotations

from typing import Any

Interval = tuple[int, int]


class Unbounded(Exception):
    """An expression the evaluator cannot bound."""


def _kind(node: Any) -> str:
    return type(node).__name__


def _div(a: Interval, b: Interval, floor: bool) -> Interval:
    if b[0] <= 0 <= b[1]:
        raise Unbounded("a division by a range holding zero")
    values = []
    for x in a:
        for y in b:
            values.append(x // y if floor or x * y >= 0 else -(-x // y))
    return min(values), max(values)


def _mod(a: Interval, b: Interval) -> Interval:
    if b[0] != b[1] or b[0] <= 0:
        raise Unbounded("a modulo by a range")
    m = b[0]
    if a[0] == a[1]:
        return a[0] % m, a[0] % m
    if a[0] >= 0 and a[1] - a[0] < m and a[0] % m <= a[1] % m:
        return a[0] % m, a[1] % m
    return 0, m - 1


def _bits(a: Interval, b: Interval, op: str) -> Interval:
    if a[0] == a[1] and b[0] == b[1]:
        x, y = a[0], b[0]
        value = {"bitwise_and": x & y, "bitwise_or": x | y, "bitwise_xor": x ^ y,
                 "shift_right": x >> y, "shift_left": x << y}[op]
        return value, value
    if min(a[0], b[0]) < 0:
        raise Unbounded(f"{op} of a negative range")
    if op == "shift_right":
        return a[0] >> b[1], a[1] >> b[0]
    if op == "shift_left":
        return a[0] << b[0], a[1] << b[1]
    if op == "bitwise_and":
        return 0, min(a[1], b[1])
    top = (1 << max(a[1], b[1]).bit_length()) - 1
    return 0, top


_COMPARE = {"LT": lambda a, b: (a[1] < b[0], a[0] >= b[1]),
            "LE": lambda a, b: (a[1] <= b[0], a[0] > b[1]),
            "GT": lambda a, b: (a[0] > b[1], a[1] <= b[0]),
            "GE": lambda a, b: (a[0] >= b[1], a[1] < b[0]),
            "EQ": lambda a, b: (a[0] == a[1] == b[0] == b[1], a[1] < b[0] or b[1] < a[0]),
            "NE": lambda a, b: (a[1] < b[0] or b[1] < a[0], a[0] == a[1] == b[0] == b[1])}


def interval(expr: Any, env: dict[Any, Interval]) -> Interval:
    """The least and greatest value ``expr`` takes over ``env``."""
    what = _kind(expr)
    if what == "IntImm":
        return int(expr.value), int(expr.value)
    if what == "Var":
        found = env.get(expr)
        if found is None:
            raise Unbounded(f"{expr.name} is unknown")
        return found
    if what == "Cast":
        return interval(expr.value, env)
    if what == "BufferLoad" and (expr.buffer.data, "scalar") in env:
        return env[expr.buffer.data, "scalar"]  # a local scalar the walk follows
    if what in ("Add", "Sub", "Mul", "Min", "Max", "FloorDiv", "Div", "FloorMod", "Mod"):
        a, b = interval(expr.a, env), interval(expr.b, env)
        if what == "Add":
            return a[0] + b[0], a[1] + b[1]
        if what == "Sub":
            return a[0] - b[1], a[1] - b[0]
        if what == "Mul":
            products = [x * y for x in a for y in b]
            return min(products), max(products)
        if what == "Min":
            return min(a[0], b[0]), min(a[1], b[1])
        if what == "Max":
            return max(a[0], b[0]), max(a[1], b[1])
        if what in ("FloorDiv", "Div"):
            return _div(a, b, what == "FloorDiv" or a[0] >= 0)
        if a[0] < 0 and what == "Mod":
            raise Unbounded("a truncated modulo of a negative range")
        return _mod(a, b)
    if what in _COMPARE:
        true, false = _COMPARE[what](interval(expr.a, env), interval(expr.b, env))
        return (1, 1) if true else (0, 0) if false else (0, 1)
    if what in ("And", "Or"):
        a, b = interval(expr.a, env), interval(expr.b, env)
        return (min(a[0], b[0]), min(a[1], b[1])) if what == "And" \
            else (max(a[0], b[0]), max(a[1], b[1]))
    if what == "Not":
        a = interval(expr.a, env)
        return 1 - a[1], 1 - a[0]
    if what == "Select":
        return _choose(interval(expr.condition, env), expr.true_value, expr.false_value, env)
    if what == "Call":
        name = str(getattr(expr.op, "name", "")).rsplit(".", 1)[-1]
        if name in ("bitwise_and", "bitwise_or", "bitwise_xor", "shift_right", "shift_left"):
            return _bits(interval(expr.args[0], env), interval(expr.args[1], env), name)
        if name in ("truncmod", "truncdiv"):
            a, b = interval(expr.args[0], env), interval(expr.args[1], env)
            if a[0] < 0:
                raise Unbounded(f"{name} of a negative range")
            return _mod(a, b) if name == "truncmod" else _div(a, b, True)
        if name == "if_then_else":
            return _choose(interval(expr.args[0], env), expr.args[1], expr.args[2], env)
    raise Unbounded(f"no rule for {what} {getattr(expr, 'op', '')}".rstrip())


def _choose(cond: Interval, yes: Any, no: Any, env: dict[Any, Interval]) -> Interval:
    if cond == (1, 1):
        return interval(yes, env)
    if cond == (0, 0):
        return interval(no, env)
    a, b = interval(yes, env), interval(no, env)
    return min(a[0], b[0]), max(a[1], b[1])


_FLIP = {"LT": "GE", "GE": "LT", "LE": "GT", "GT": "LE"}


def narrowed(cond: Any, holds: bool, env: dict[Any, Interval]) -> dict[Any, Interval]:
    """The ranges a condition ``var < c`` (``<=``, ``>``, ``>=``, ``c < var``, their
    conjunction) gives its variables where it holds (or, for one comparison, fails)."""
    name = _kind(cond)
    if name == "And" and holds:
        found = narrowed(cond.a, True, env)
        inner = {**env, **found}
        found.update(narrowed(cond.b, True, inner))
        return found
    if name not in _FLIP:
        return {}
    a, b = cond.a, cond.b
    if _kind(a) == "IntImm" and _kind(b) == "Var":  # c < var is var > c
        a, b, name = b, a, {"LT": "GT", "GT": "LT", "LE": "GE", "GE": "LE"}[name]
    if _kind(a) != "Var" or _kind(b) != "IntImm" or a not in env:
        return {}
    if not holds:
        name = _FLIP[name]
    lo, hi = env[a]
    c = int(b.value)
    lo, hi = {"LT": (lo, min(hi, c - 1)), "LE": (lo, min(hi, c)),
              "GT": (max(lo, c + 1), hi), "GE": (max(lo, c), hi)}[name]
    return {a: (lo, hi)} if lo <= hi else {}
