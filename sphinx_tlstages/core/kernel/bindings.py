"""The functions a kernel module binds at its top level, wherever Python would bind them:
a ``def`` in the module body or under a top-level ``if``/``try``/``with``/``for`` (the
``if HAS_TILELANG:`` guard around optional kernels), or an assignment that wraps one
(``matmul = tilelang.jit(out_idx=[-1])(_matmul)``). Pure ``ast``."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

from .syntax import dotted_name


@dataclass(frozen=True)
class Binding:
    """A module-level name bound to a function: the ``def`` that holds its code, the line
    that binds the name, and the last names of the decorators or wrappers applied (the
    ``def``'s own, then those an assignment wraps it in)."""

    name: str
    node: ast.FunctionDef
    line: int
    decorators: tuple[str, ...]
    # The statement the binding sits under, in words (``under `if HAS_TILELANG:` (line 4)``);
    # empty at the module's top level. Said when the kernel ran but left the name unbound.
    guard: str = ""


# ``try: ... except* ...`` is its own node from Python 3.11.
_TRY: tuple[type[ast.stmt], ...] = (ast.Try, getattr(ast, "TryStar", ast.Try))


def _guard(node: ast.stmt, source_line: str) -> str:
    head = source_line.strip()
    return f"under `{head}` (line {node.lineno})"


def _statements(body: list[ast.stmt], lines: list[str], guard: str = ""
                ) -> Iterator[tuple[ast.stmt, str]]:
    """The module-level statements, those inside compound statements included, each with
    the outermost compound statement it sits under (never into a def or a class body)."""
    for node in body:
        yield node, guard
        here = guard or (_guard(node, lines[node.lineno - 1])
                         if 0 < node.lineno <= len(lines) else "")
        blocks: list[list[ast.stmt]] = []
        if isinstance(node, (ast.If, ast.For, ast.AsyncFor, ast.While)):
            blocks = [node.body, node.orelse]
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            blocks = [node.body]
        elif isinstance(node, _TRY):
            blocks = [node.body, *(h.body for h in node.handlers),  # type: ignore[attr-defined]
                      node.orelse, node.finalbody]  # type: ignore[attr-defined]
        for block in blocks:
            yield from _statements(block, lines, here)


def _wrapped(value: ast.expr) -> tuple[str, tuple[str, ...]] | None:
    """``(name, wrappers)`` for ``jit(f)``, ``tilelang.jit(out_idx=[-1])(f)`` or
    ``autotune(configs=c)(jit(f))``: the function name wrapped, and the wrappers' last
    names, innermost first; None for anything else."""
    wrappers: list[str] = []
    while isinstance(value, ast.Call) and len(value.args) == 1:
        func = value.func
        # A wrapper applied with options: ``tilelang.jit(out_idx=[-1])(f)``.
        name = dotted_name(func.func if isinstance(func, ast.Call) else func)
        if not name:
            return None
        wrappers.append(name.rsplit(".", 1)[-1])
        value = value.args[0]
    if not wrappers or not isinstance(value, ast.Name):
        return None
    return value.id, tuple(reversed(wrappers))


def module_functions(tree: ast.Module, source: str = "") -> dict[str, Binding]:
    """Every module-level name bound to a function, its last binding winning (as Python's
    would), in the order the names are first bound."""
    lines = source.splitlines()
    defs: dict[str, ast.FunctionDef] = {}
    found: dict[str, Binding] = {}
    for node, guard in _statements(tree.body, lines):
        if isinstance(node, ast.FunctionDef):
            names = tuple(dotted_name(d).rsplit(".", 1)[-1] for d in node.decorator_list)
            defs[node.name] = node
            found[node.name] = Binding(node.name, node, node.lineno, names, guard)
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Name):
            wrapped = _wrapped(node.value)
            if wrapped and wrapped[0] in defs:
                inner = found.get(wrapped[0])
                own = inner.decorators if inner else ()
                found[node.targets[0].id] = Binding(node.targets[0].id, defs[wrapped[0]],
                                                    node.lineno, (*own, *wrapped[1]), guard)
    return found


def factory_scopes(tree: ast.Module, factory_name: str, source: str = "") -> list[ast.AST]:
    """Where the factory's kernel code is: its ``def``, then every module-level function
    it reaches by name (a ``@T.macro`` holding a ``T.Pipelined`` loop, a helper building
    part of the kernel), in the order they are first named; the module when no function
    is bound to ``factory_name``."""
    functions = module_functions(tree, source)
    if factory_name not in functions:
        return [tree]
    chosen: list[ast.AST] = [functions[factory_name].node]
    todo = [chosen[0]]
    while todo:
        for node in ast.walk(todo.pop(0)):
            if isinstance(node, ast.Name) and node.id in functions:
                reached = functions[node.id].node
                if all(reached is not seen for seen in chosen):
                    chosen.append(reached)
                    todo.append(reached)
    return chosen
