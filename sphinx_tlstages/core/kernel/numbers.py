"""Where a factory uses a parameter as a number: so that a value of the wrong type
(``block_M="64"``) is said at the option that gave it, not by TVM's ``Check failed: (b.
dtype().is_int() ...)`` deep in the lowering. Pure ``ast``, over the factory's own
``def`` (a nested function that takes a parameter of the same name is its own)."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from .bindings import module_functions
from .syntax import dotted_name

# Calls whose arguments are sizes, extents or counts: every positional argument, and
# these keywords.
_COUNTS = {"ceildiv", "Kernel", "Pipelined", "Parallel", "serial", "unroll", "vectorized",
           "range", "grid", "floordiv", "floormod"}
_COUNT_KEYWORDS = {"threads", "num_stages"}
# Calls whose first argument is a shape (a tuple of sizes, or one size).
_SHAPES = {"alloc_shared", "alloc_fragment", "alloc_local", "alloc_buffer", "alloc_var",
           "Tensor", "Buffer", "empty", "StridedTensor", "FlattenedTensor", "alloc_tmem"}
_ARITHMETIC = (ast.Sub, ast.Div, ast.FloorDiv, ast.Pow, ast.LShift, ast.RShift,
               ast.BitAnd, ast.BitOr, ast.BitXor, ast.MatMult)
_ORDERING = (ast.Lt, ast.LtE, ast.Gt, ast.GtE)


def _text(node: ast.expr) -> bool:
    """A string literal or an f-string: ``+`` and ``*`` with it are string operations."""
    return isinstance(node, ast.JoinedStr) or (isinstance(node, ast.Constant)
                                               and isinstance(node.value, (str, bytes)))


def _call_name(node: ast.AST) -> str:
    return dotted_name(node.func).rsplit(".", 1)[-1] if isinstance(node, ast.Call) else ""


def _as_count(name: ast.Name, parent: ast.AST, grand: ast.AST | None) -> bool:
    """Whether ``name`` stands where an integer must: a size, an extent, a count."""
    call = _call_name(parent)
    if call in _COUNTS and isinstance(parent, ast.Call) and name in parent.args:
        return True
    if isinstance(parent, ast.keyword) and parent.arg in _COUNT_KEYWORDS:
        return True
    if call in _SHAPES and isinstance(parent, ast.Call) and parent.args \
            and parent.args[0] is name:
        return True
    return isinstance(parent, ast.Tuple) and isinstance(grand, ast.Call) \
        and _call_name(grand) in _SHAPES and bool(grand.args) and grand.args[0] is parent


def _as_number(name: ast.Name, parent: ast.AST) -> bool:
    """Whether ``name`` is an operand of arithmetic or of an ordering."""
    if isinstance(parent, ast.BinOp):
        other = parent.right if parent.left is name else parent.left
        if isinstance(parent.op, (ast.Add, ast.Mult)):
            return not _text(other)
        if isinstance(parent.op, ast.Mod):  # "%s" % name formats
            return parent.left is name or not _text(other)
        return isinstance(parent.op, _ARITHMETIC)
    if isinstance(parent, ast.UnaryOp):
        return isinstance(parent.op, (ast.USub, ast.UAdd, ast.Invert))
    if isinstance(parent, ast.AugAssign):
        return parent.value is name and not isinstance(parent.op, (ast.Add, ast.Mult))
    return isinstance(parent, ast.Compare) and all(isinstance(op, _ORDERING)
                                                   for op in parent.ops)


def _uses(node: ast.AST, name: str, parents: tuple[ast.AST, ...] = ()
          ) -> Iterator[tuple[ast.Name, tuple[ast.AST, ...]]]:
    """Every read of ``name`` under ``node``, with its ancestors (nearest last); not into
    a nested function that takes a parameter of that name."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            args = child.args
            if name in {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]}:
                continue
        if isinstance(child, ast.Name) and child.id == name \
                and isinstance(child.ctx, ast.Load):
            yield child, (*parents, node)
        yield from _uses(child, name, (*parents, node))


def numeric_use(tree: ast.Module, factory: str, name: str, integer: bool,
                source: str = "") -> tuple[int, str] | None:
    """(kernel line, its text) where factory ``factory`` first uses its parameter
    ``name`` as a number (``integer``: only where an integer must stand, a size, an
    extent or a count: a float is a number, but not one of those); None where it does
    not."""
    functions = module_functions(tree, source)
    if factory not in functions:
        return None
    lines = source.splitlines()
    found: list[int] = []
    for use, parents in _uses(functions[factory].node, name):
        parent = parents[-1]
        grand = parents[-2] if len(parents) > 1 else None
        if _as_count(use, parent, grand) or (not integer and _as_number(use, parent)):
            found.append(use.lineno)
    if not found:
        return None
    line = min(found)
    return line, lines[line - 1].strip() if 0 < line <= len(lines) else ""
