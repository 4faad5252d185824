"""Integer intervals of TIR expressions, for the hazard trace.

TVM's own bound analysis leaves bitwise calls on constants alone (``T.bitwise_and(ko + 1,
1)`` bounds to [0, 1] with ``ko`` known), which merges a pipeline's slots; this evaluator
folds them. Variables are looked up in an environment of intervals (a point for an
unrolled loop's variable, a range for a thread index or a summarised loop); an
expression it has no rule for raises :class:`Unbounded`.
"""

from __future__ import annotations

from collections.abc import Callable
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


_COMPARE: dict[str, Callable[[Interval, Interval], tuple[bool, bool]]] = {
    "LT": lambda a, b: (a[1] < b[0], a[0] >= b[1]),
    "LE": lambda a, b: (a[1] <= b[0], a[0] > b[1]),
    "GT": lambda a, b: (a[0] > b[1], a[1] <= b[0]),
    "GE": lambda a, b: (a[0] >= b[1], a[1] < b[0]),
    "EQ": lambda a, b: (a[0] == a[1] == b[0] == b[1], a[1] < b[0] or b[1] < a[0]),
    "NE": lambda a, b: (a[1] < b[0] or b[1] < a[0], a[0] == a[1] == b[0] == b[1]),
}


Env = dict[Any, Interval]
Bound = Callable[[Env], Interval]  # an expression compiled by _compile

# Each expression compiled once per node, by its handle: the walk bounds the same index
# expressions at every iteration it unrolls, and reading a TVM node's fields from Python
# is most of what bounding it costs. The node is kept with its compiled form, so that its
# address is not reused while the entry stands; :func:`forget` empties it (per check).
_COMPILED: dict[int, tuple[Any, Bound]] = {}

_ARITH: dict[str, Callable[[Interval, Interval], Interval]] = {
    "Add": lambda a, b: (a[0] + b[0], a[1] + b[1]),
    "Sub": lambda a, b: (a[0] - b[1], a[1] - b[0]),
    "Mul": lambda a, b: (min(x * y for x in a for y in b), max(x * y for x in a for y in b)),
    "Min": lambda a, b: (min(a[0], b[0]), min(a[1], b[1])),
    "Max": lambda a, b: (max(a[0], b[0]), max(a[1], b[1])),
    "And": lambda a, b: (min(a[0], b[0]), min(a[1], b[1])),
    "Or": lambda a, b: (max(a[0], b[0]), max(a[1], b[1])),
}


def interval(expr: Any, env: Env) -> Interval:
    """The least and greatest value ``expr`` takes over ``env``."""
    return _compiled(expr)(env)


def forget() -> None:
    """Drop the compiled expressions (and the nodes they keep alive)."""
    _COMPILED.clear()


def _unbounded(message: str) -> Bound:
    def bound(env: Env) -> Interval:
        raise Unbounded(message)
    return bound


def _compile(expr: Any) -> Bound:
    """``expr`` as a function of the environment, with the rules below; a node it has no
    rule for raises :class:`Unbounded` when evaluated, as a branch never taken does not."""
    what = _kind(expr)
    if what == "IntImm":
        point = (int(expr.value), int(expr.value))
        return lambda env: point
    if what == "Var":
        var, unknown = expr, f"{expr.name} is unknown"

        def lookup(env: Env) -> Interval:
            found = env.get(var)
            if found is None:
                raise Unbounded(unknown)
            return found
        return lookup
    if what == "Cast":
        return _compiled(expr.value)
    if what == "BufferLoad":
        scalar, rule = (expr.buffer.data, "scalar"), f"no rule for {what}"

        def load(env: Env) -> Interval:
            if scalar in env:
                return env[scalar]  # a local scalar the walk follows
            raise Unbounded(rule)
        return load
    if what in _ARITH:
        a, b, arith = _compiled(expr.a), _compiled(expr.b), _ARITH[what]
        return lambda env: arith(a(env), b(env))
    if what in ("FloorDiv", "Div"):
        a, b, floor = _compiled(expr.a), _compiled(expr.b), what == "FloorDiv"

        def divide(env: Env) -> Interval:
            x, y = a(env), b(env)
            return _div(x, y, floor or x[0] >= 0)
        return divide
    if what in ("FloorMod", "Mod"):
        a, b, signed = _compiled(expr.a), _compiled(expr.b), what == "Mod"

        def modulo(env: Env) -> Interval:
            x, y = a(env), b(env)
            if x[0] < 0 and signed:
                raise Unbounded("a truncated modulo of a negative range")
            return _mod(x, y)
        return modulo
    if what in _COMPARE:
        a, b, compare = _compiled(expr.a), _compiled(expr.b), _COMPARE[what]

        def decide(env: Env) -> Interval:
            true, false = compare(a(env), b(env))
            return (1, 1) if true else (0, 0) if false else (0, 1)
        return decide
    if what == "Not":
        a = _compiled(expr.a)

        def negate(env: Env) -> Interval:
            x = a(env)
            return 1 - x[1], 1 - x[0]
        return negate
    if what == "Select":
        return _choice(expr.condition, expr.true_value, expr.false_value)
    if what == "Call":
        name = str(getattr(expr.op, "name", "")).rsplit(".", 1)[-1]
        if name in ("bitwise_and", "bitwise_or", "bitwise_xor", "shift_right", "shift_left"):
            a, b = _compiled(expr.args[0]), _compiled(expr.args[1])
            return lambda env: _bits(a(env), b(env), name)
        if name in ("truncmod", "truncdiv"):
            a, b = _compiled(expr.args[0]), _compiled(expr.args[1])

            def truncated(env: Env) -> Interval:
                x, y = a(env), b(env)
                if x[0] < 0:
                    raise Unbounded(f"{name} of a negative range")
                return _mod(x, y) if name == "truncmod" else _div(x, y, True)
            return truncated
        if name == "if_then_else":
            return _choice(expr.args[0], expr.args[1], expr.args[2])
    return _unbounded(f"no rule for {what} {getattr(expr, 'op', '')}".rstrip())


def _compiled(expr: Any) -> Bound:
    """A child's compiled form, shared with :func:`interval`'s table."""
    key = expr.__chandle__()
    found = _COMPILED.get(key)
    if found is None:
        found = _COMPILED[key] = (expr, _compile(expr))
    return found[1]


def _choice(cond: Any, yes: Any, no: Any) -> Bound:
    """A select: only the branch the condition takes is bounded where it decides."""
    decided, first, second = _compiled(cond), _compiled(yes), _compiled(no)

    def choose(env: Env) -> Interval:
        which = decided(env)
        if which == (1, 1):
            return first(env)
        if which == (0, 0):
            return second(env)
        a, b = first(env), second(env)
        return min(a[0], b[0]), max(a[1], b[1])
    return choose


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
