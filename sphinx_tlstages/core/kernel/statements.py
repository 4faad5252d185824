"""The statements of a kernel factory that the page names: each ``T.Pipelined`` loop's
body, and the tile-level gemm calls. Pure ``ast``; the worker matches them to the IR."""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass

from .syntax import dotted_name, factory_scope, is_pipelined


@dataclass(frozen=True)
class Statement:
    """One statement of a pipelined loop body: its text, kernel line and the names it uses."""

    text: str
    line: int
    names: frozenset[str]


def _one_line(segment: str, limit: int = 96) -> str:
    text = " ".join(segment.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


@functools.lru_cache(maxsize=8)
def _tree(source: str) -> ast.Module:
    """The kernel parsed once for the three readers below, which each parsed it again for
    every variant (a worker lowers several variants of one kernel). The tree is only
    walked, never changed."""
    return ast.parse(source)


def pipelined_loops(source: str, factory_name: str) -> list[list[Statement]]:
    """The body statements of each ``T.Pipelined`` loop in the factory, in source order."""
    scope = factory_scope(_tree(source), factory_name)
    loops: list[list[Statement]] = []
    for found in ast.walk(scope):
        if isinstance(found, ast.For) and is_pipelined(found):
            body = []
            for stmt in found.body:
                segment = ast.get_source_segment(source, stmt) or ast.unparse(stmt)
                names = frozenset(n.id for n in ast.walk(stmt) if isinstance(n, ast.Name))
                body.append(Statement(_one_line(segment), stmt.lineno, names))
            loops.append(body)
    loops.sort(key=lambda body: body[0].line if body else 0)
    return loops


def loop_over(source: str, factory_name: str, variable: str) -> list[Statement]:
    """The body statements of the first loop over ``variable`` in the factory (a plain
    ``for s in T.serial(n)``): where a finding in an unpipelined loop is."""
    scope = factory_scope(_tree(source), factory_name)
    for found in ast.walk(scope):
        if isinstance(found, ast.For) and isinstance(found.target, ast.Name) \
                and found.target.id == variable:
            return [Statement(_one_line(ast.get_source_segment(source, stmt)
                                        or ast.unparse(stmt)), stmt.lineno,
                              frozenset(n.id for n in ast.walk(stmt)
                                        if isinstance(n, ast.Name)))
                    for stmt in found.body]
    return []


def _call_text(source: str, node: ast.AST) -> str:
    return _one_line(ast.get_source_segment(source, node) or ast.unparse(node))


def _base_name(node: ast.expr) -> str:
    """``A_shared`` for ``A_shared``, ``A_shared[0:64, :]`` or ``A_shared[k % 2]``."""
    while isinstance(node, (ast.Subscript, ast.Starred)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else ast.unparse(node)


def gemm_statements(source: str, factory_name: str) -> list[Statement]:
    """The tile-level gemm calls in the factory (``T.gemm``, ``T.wgmma_gemm``,
    ``T.tcgen05_gemm`` ...), in source order; ``names`` holds their first three
    arguments' buffer names (A, B, C)."""
    scope = factory_scope(_tree(source), factory_name)
    found = []
    for node in ast.walk(scope):
        if isinstance(node, ast.Call) and dotted_name(node.func).rsplit(".", 1)[-1] \
                .endswith("gemm") and "." in dotted_name(node.func):
            operands = frozenset(_base_name(arg) for arg in node.args[:3])
            found.append(Statement(_call_text(source, node), node.lineno, operands))
    found.sort(key=lambda s: s.line)
    return found
