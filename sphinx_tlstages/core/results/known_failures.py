"""TileLang failures whose cause is known: a hint, and the kernel line it comes from.

TileLang's own message names a C++ check, not the kernel's statement; where the message
and the kernel's text together say which pattern it is, the failure gets a hint in the
kernel's words. Each entry is matched on the message as the worker says it (the failing
pass first) and checked against the kernel's source, so a hint is only given where the
source has the pattern.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Known:
    """What is known about one failure: a hint, and the kernel line where it starts."""

    hint: str
    line: int | None


def _calls(node: ast.AST, name: str) -> bool:
    """Whether ``node`` is a call of ``T.<name>`` (or a bare ``<name>``)."""
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    return (isinstance(func, ast.Attribute) and func.attr == name) or \
        (isinstance(func, ast.Name) and func.id == name)


def _shared_in_two_loops(tree: ast.Module, factory: str) -> Known | None:
    """A shared buffer used by two ``T.Pipelined`` loops: the line of the second loop."""
    functions = [n for n in ast.walk(tree)
                 if isinstance(n, ast.FunctionDef) and n.name == factory]
    if not functions:
        return None
    body = functions[0]
    shared = {target.id for node in ast.walk(body) if isinstance(node, ast.Assign)
              and _calls(node.value, "alloc_shared")
              for target in node.targets if isinstance(target, ast.Name)}
    loops = [node for node in ast.walk(body)
             if isinstance(node, ast.For) and _calls(node.iter, "Pipelined")]
    seen: dict[str, ast.For] = {}
    for loop in sorted(loops, key=lambda n: n.lineno):
        used = {n.id for n in ast.walk(loop) if isinstance(n, ast.Name)} & shared
        again = sorted(name for name in used if name in seen and seen[name] is not loop)
        if again:
            first = seen[again[0]]
            return Known(
                f"{', '.join(again)} {'is' if len(again) == 1 else 'are'} used by the "
                f"T.Pipelined loops of lines {first.lineno} and {loop.lineno}; the software "
                "pipeliner gives a shared buffer a version dimension for each loop that "
                "pipelines it, and layout inference cannot map the result (a known TileLang "
                "failure on sm_90a). Give each pipelined loop its own shared buffers "
                "(T.alloc_shared once per loop)", loop.lineno)
        for name in used:
            seen.setdefault(name, loop)
    return None


# (a regex on the message, what to look for in the source)
_KNOWN: tuple[tuple[re.Pattern[str], Callable[[ast.Module, str], Known | None]], ...] = (
    (re.compile(r"LayoutInference.*CanProveEqual\(input_shape_product", re.S),
     _shared_in_two_loops),
)


def explain(message: str, source: str, factory: str) -> Known | None:
    """The hint for a TileLang failure with ``message`` lowering ``factory`` of
    ``source``, or None where its cause is not known."""
    for pattern, look in _KNOWN:
        if pattern.search(message):
            try:
                tree = ast.parse(source)
            except SyntaxError:
                return None
            found = look(tree, factory)
            if found is not None:
                return found
    return None
