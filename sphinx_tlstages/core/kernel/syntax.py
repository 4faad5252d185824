"""Small readings of a kernel's syntax tree that the other kernel readers share: dotted
names, ``T.Pipelined`` loops, the factory's own scope. Pure ``ast``."""

from __future__ import annotations

import ast


def dotted_name(node: ast.expr) -> str:
    """``T.Pipelined`` for ``T.Pipelined(...)``, ``tilelang.jit`` for a decorator."""
    if isinstance(node, ast.Call):
        node = node.func
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def is_pipelined(node: ast.For) -> bool:
    """A ``for`` over ``T.Pipelined(...)``."""
    call = node.iter
    return isinstance(call, ast.Call) and dotted_name(call.func).endswith("Pipelined")
