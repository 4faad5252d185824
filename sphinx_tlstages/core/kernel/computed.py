"""A depth a factory computes from its arguments (``num_stages = 0 if round_scale or
inplace else 2``): the expression it comes from, the arguments it reads, and its value
for the arguments a variant passes, evaluated over the syntax tree alone (numbers,
comparisons, ``and``/``or``/``not``, ``x if c else y``, arithmetic, ``min``/``max``),
never by running the kernel's code. Pure ``ast``."""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Div: operator.truediv,
}
_COMPARE: dict[type[ast.cmpop], Callable[[Any, Any], Any]] = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
    ast.Gt: operator.gt, ast.GtE: operator.ge, ast.Is: operator.is_,
    ast.IsNot: operator.is_not, ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
}


_CALLS: dict[str, Callable[..., Any]] = {"min": min, "max": max, "int": int, "bool": bool}


class Unknown(Exception):
    """The expression reads something the text alone does not give (the message: what)."""


@dataclass(frozen=True)
class Computed:
    """A loop's depth as the factory computes it."""

    name: str  # what the loop passes: ``num_stages`` (a local), or the expression itself
    expression: str  # ``0 if round_scale or inplace else 2``
    line: int  # where the expression is written
    reads: tuple[str, ...]  # the factory's parameters it reads, in order of appearance
    # The factory's locals the expression reads, each bound once: (name, expression).
    locals_: tuple[tuple[str, str], ...] = ()
    # Literal defaults of the factory's parameters, for those a directive does not give.
    defaults: tuple[tuple[str, object], ...] = ()

    def value(self, arguments: Mapping[str, object]) -> int:
        """The depth for these factory arguments; :class:`Unknown` when it cannot be told."""
        env: dict[str, object] = {**dict(self.defaults), **arguments}
        bound = {name: ast.parse(text, mode="eval").body for name, text in self.locals_}
        found = _evaluate(ast.parse(self.expression, mode="eval").body, env, bound, 0)
        if isinstance(found, bool) or not isinstance(found, int):
            raise Unknown(f"it gives {found!r}, not a whole number")
        return found

    def said(self, arguments: Mapping[str, object]) -> str:
        """``num_stages = 0 if round_scale or inplace else 2`` and, where it reads any,
        the arguments it was evaluated with."""
        text = f"{self.name} = {self.expression}" if self.name != self.expression \
            else self.expression
        env = {**dict(self.defaults), **arguments}
        given = [f"{name}={env[name]!r}" for name in self.reads if name in env]
        return text + (f" with {', '.join(given)}" if given else "")


def _evaluate(node: ast.expr, env: dict[str, object], bound: dict[str, ast.expr],
              depth: int) -> Any:
    if depth > 32:
        raise Unknown("it is nested too deeply")
    def again(child: ast.expr) -> Any:
        return _evaluate(child, env, bound, depth + 1)
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        if node.id in env:
            return env[node.id]
        if node.id in bound:
            return again(bound[node.id])
        if node.id in ("True", "False", "None"):
            return {"True": True, "False": False, "None": None}[node.id]
        raise Unknown(f"{node.id} is neither a parameter given a value nor a local bound "
                      "once")
    if isinstance(node, ast.BoolOp):
        values = [again(v) for v in node.values]
        if isinstance(node.op, ast.And):
            return all(values)
        return any(values)
    if isinstance(node, ast.UnaryOp):
        operand = again(node.operand)
        if isinstance(node.op, ast.Not):
            return not operand
        if isinstance(node.op, ast.USub):
            return -operand
        if isinstance(node.op, ast.UAdd):
            return +operand
    if isinstance(node, ast.IfExp):
        return again(node.body) if again(node.test) else again(node.orelse)
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        return _BINARY[type(node.op)](again(node.left), again(node.right))
    if isinstance(node, ast.Compare):
        left = again(node.left)
        for op, right_node in zip(node.ops, node.comparators, strict=True):
            right = again(right_node)
            if type(op) not in _COMPARE or not _COMPARE[type(op)](left, right):
                return False
            left = right
        return True
    if isinstance(node, (ast.Tuple, ast.List)):
        return tuple(again(e) for e in node.elts)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
            and node.func.id in _CALLS and not node.keywords:
        args = [again(a) for a in node.args]
        return _CALLS[node.func.id](*args)
    raise Unknown(f"`{ast.unparse(node)}` is more than this reading evaluates")


def _assigned_once(name: str, factory: ast.FunctionDef) -> ast.expr | None:
    """The expression ``name = <expr>`` binds in the factory, when that is its one
    binding there (not a tuple target, a loop variable, a parameter of a nested def)."""
    stores = [n for n in ast.walk(factory) if isinstance(n, ast.Name) and n.id == name
              and isinstance(n.ctx, (ast.Store, ast.Del))]
    if len(stores) != 1:
        return None
    for node in ast.walk(factory):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if targets == [stores[0]]:
                return node.value
    return None


def _literal_defaults(factory: ast.FunctionDef) -> tuple[tuple[str, object], ...]:
    args = factory.args
    positional = [*args.posonlyargs, *args.args]
    pairs = [*zip(positional[len(positional) - len(args.defaults):], args.defaults,
                  strict=True),
             *((a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True)
               if d is not None)]
    found = []
    for arg, default in pairs:
        try:
            found.append((arg.arg, ast.literal_eval(default)))
        except ValueError:
            continue
    return tuple(found)


def read_computed(value: ast.expr, factory: ast.FunctionDef, params: tuple[str, ...]
                  ) -> Computed | None:
    """How the loop's ``num_stages=<value>`` is computed from the factory's arguments;
    None when it reads none of them (nothing to tell a variant by)."""
    expression: ast.expr = value
    name = ast.unparse(value)
    line = value.lineno
    if isinstance(value, ast.Name):
        assigned = _assigned_once(value.id, factory)
        if assigned is None:
            return None
        expression, line = assigned, assigned.lineno
    reads: list[str] = []
    locals_: list[tuple[str, str]] = []
    todo = [expression]
    seen: set[str] = set()
    while todo:
        for node in ast.walk(todo.pop(0)):
            if not isinstance(node, ast.Name) or node.id in seen:
                continue
            seen.add(node.id)
            if node.id in params:
                reads.append(node.id)
            else:
                local = _assigned_once(node.id, factory)
                if local is not None:
                    locals_.append((node.id, ast.unparse(local)))
                    todo.append(local)
    if not reads:
        return None
    return Computed(name, ast.unparse(expression), line, tuple(reads), tuple(locals_),
                    _literal_defaults(factory))
