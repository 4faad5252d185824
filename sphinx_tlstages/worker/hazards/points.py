"""TIR integer expressions evaluated at many points at once, for the bytes each thread
touches (:mod:`.ownership`).

:mod:`.intervals` bounds an expression over ranges, one environment at a time; here every
variable is an array of values (a thread index and each loop variable it is enumerated
over, broadcast against each other) and the expression is evaluated once for all of them,
with the same integer rules at a point (floor division and modulo, truncated ``Div`` and
``Mod``, TVM's bitwise calls, selects). An expression with a node it has no rule for, or a
division by zero, raises :class:`.intervals.Unbounded`, as bounding it would.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .intervals import Unbounded

Values = dict[Any, Any]  # a variable (or a scalar's key) -> an int64 array or an int
Evaluated = Callable[[Values], Any]

# Each expression compiled once per node, by its handle, the node kept with it (as
# :mod:`.intervals` does); :func:`forget` empties it (per check).
_COMPILED: dict[int, tuple[Any, Evaluated]] = {}


def evaluate(expr: Any, values: Values) -> Any:
    """``expr`` at every point of ``values`` (arrays broadcast against each other)."""
    return _compiled(expr)(values)


def forget() -> None:
    _COMPILED.clear()


def _compiled(expr: Any) -> Evaluated:
    key = expr.__chandle__()
    found = _COMPILED.get(key)
    if found is None:
        found = _COMPILED[key] = (expr, _compile(expr))
    return found[1]


def _nonzero(b: Any) -> Any:
    if np.any(np.asarray(b) == 0):
        raise Unbounded("a division by zero")
    return b


def _truncdiv(a: Any, b: Any) -> Any:
    q = np.floor_divide(a, _nonzero(b))
    return q + ((np.mod(a, b) != 0) & ((np.asarray(a) < 0) != (np.asarray(b) < 0)))


def _truncmod(a: Any, b: Any) -> Any:
    return a - _truncdiv(a, b) * b


_BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "Add": np.add, "Sub": np.subtract, "Mul": np.multiply,
    "FloorDiv": lambda a, b: np.floor_divide(a, _nonzero(b)),
    "FloorMod": lambda a, b: np.mod(a, _nonzero(b)),
    "Div": _truncdiv, "Mod": _truncmod, "Min": np.minimum, "Max": np.maximum,
    "And": np.minimum, "Or": np.maximum,
    "LT": lambda a, b: (np.asarray(a) < b).astype(np.int64),
    "LE": lambda a, b: (np.asarray(a) <= b).astype(np.int64),
    "GT": lambda a, b: (np.asarray(a) > b).astype(np.int64),
    "GE": lambda a, b: (np.asarray(a) >= b).astype(np.int64),
    "EQ": lambda a, b: (np.asarray(a) == b).astype(np.int64),
    "NE": lambda a, b: (np.asarray(a) != b).astype(np.int64),
}
_CALLS: dict[str, Callable[[Any, Any], Any]] = {
    "bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or,
    "bitwise_xor": np.bitwise_xor, "shift_right": np.right_shift,
    "shift_left": np.left_shift, "truncdiv": _truncdiv, "truncmod": _truncmod,
}


def _compile(expr: Any) -> Evaluated:
    what = type(expr).__name__
    if what == "IntImm":
        value = int(expr.value)
        return lambda values: value
    if what == "Var":
        var, missing = expr, f"{expr.name} is unknown"

        def lookup(values: Values) -> Any:
            if var not in values:
                raise Unbounded(missing)
            return values[var]
        return lookup
    if what == "Cast":
        return _compiled(expr.value)
    if what == "BufferLoad":
        scalar, rule = (expr.buffer.data, "scalar"), f"no rule for {what}"

        def load(values: Values) -> Any:
            if scalar not in values:
                raise Unbounded(rule)
            return values[scalar]
        return load
    if what in _BINARY:
        a, b, op = _compiled(expr.a), _compiled(expr.b), _BINARY[what]
        return lambda values: op(a(values), b(values))
    if what == "Not":
        a = _compiled(expr.a)
        return lambda values: 1 - np.asarray(a(values))
    if what == "Select":
        return _choice(expr.condition, expr.true_value, expr.false_value)
    if what == "Call":
        name = str(getattr(expr.op, "name", "")).rsplit(".", 1)[-1]
        if name in _CALLS:
            a, b, op = _compiled(expr.args[0]), _compiled(expr.args[1]), _CALLS[name]
            return lambda values: op(a(values), b(values))
        if name == "if_then_else":
            return _choice(expr.args[0], expr.args[1], expr.args[2])
    message = f"no rule for {what} {getattr(expr, 'op', '')}".rstrip()

    def unknown(values: Values) -> Any:
        raise Unbounded(message)
    return unknown


def _choice(cond: Any, yes: Any, no: Any) -> Evaluated:
    decided, first, second = _compiled(cond), _compiled(yes), _compiled(no)

    def choose(values: Values) -> Any:
        which = np.asarray(decided(values)) != 0
        if which.all():
            return first(values)
        if not which.any():
            return second(values)
        return np.where(which, first(values), second(values))
    return choose
