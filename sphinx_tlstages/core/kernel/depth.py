"""Where a kernel factory's ``T.Pipelined`` loops get their depth: a parameter the
directive's num_stages values are given to, or the kernel text itself (a number, a constant
bound once, or TileLang's default). Pure ``ast``."""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass, replace

from .computed import Computed, read_computed
from .syntax import is_pipelined


@dataclass(frozen=True)
class Depth:
    """Where the factory's ``T.Pipelined`` loops get their depth from: a parameter that
    the directive's num_stages values are given to (``num_stages``, or whatever name the
    loops read), or, with ``param`` None, the kernel text itself (``num_stages=3`` written
    in the loop, a constant, or TileLang's default 0): one variant, lowered as written."""

    param: str | None
    # Each loop's (kernel line, depth, what it gives as num_stages: ``3``, ``DEPTH``, or ""
    # for none), in source order (``param`` None); the first one's depth names the variant.
    loops: tuple[tuple[int, int, str], ...] = ()
    # The loops whose depth the factory computes from its arguments (``num_stages = 0 if
    # inplace else 2``): (loop line, how). Their depth in ``loops`` is a placeholder until
    # :meth:`evaluated` fills it for the arguments a variant passes.
    computed: tuple[tuple[int, Computed], ...] = ()

    def evaluated(self, arguments: Mapping[str, object]) -> Depth:
        """This depth with each computed loop's value for ``arguments`` (raises
        :class:`~.computed.Unknown` where the text cannot tell it)."""
        how = dict(self.computed)
        loops = tuple((line, how[line].value(arguments), how[line].said(arguments))
                      if line in how else (line, depth, said)
                      for line, depth, said in self.loops)
        return replace(self, loops=loops)

    @property
    def written(self) -> int:
        return self.loops[0][1]

    @property
    def line(self) -> int:
        return self.loops[0][0]

    @property
    def described(self) -> str:
        """``num_stages=3``, ``num_stages=DEPTH (2)``, or TileLang's default."""
        return describe(self.written, self.loops[0][2])

    @property
    def each(self) -> tuple[tuple[int, str], ...]:
        """(kernel line, :attr:`described`) of every loop, the first one's alone when
        they all agree."""
        if len({depth for _, depth, _ in self.loops}) < 2:
            return ((self.line, self.described),)
        return tuple((line, describe(depth, said)) for line, depth, said in self.loops)


def describe(depth: int, expression: str) -> str:
    """A loop's depth as its text gives it: ``num_stages=3``, ``num_stages=DEPTH (2)``,
    or, computed, ``num_stages = 0 if inplace else 2 with inplace=False (2)``."""
    if not expression:
        return f"no num_stages, TileLang's default {depth}"
    if " = " in expression or " with " in expression:
        return f"{expression} ({depth})"
    said = f"num_stages={expression}"
    return said if expression == str(depth) else f"{said} ({depth})"


_STARRED = object()  # a T.Pipelined call whose arguments come through * or **


def _loop_depths(node: ast.FunctionDef) -> list[tuple[int, object]]:
    """(line, ``num_stages`` expression, None when it gives none, or ``_STARRED``) of each
    T.Pipelined loop in ``node``, in source order (``T.Pipelined(n, num_stages=3)``, or
    the third positional, after an explicit start and stop)."""
    found: list[tuple[int, object]] = []
    for loop in ast.walk(node):
        if isinstance(loop, ast.For) and is_pipelined(loop):
            assert isinstance(loop.iter, ast.Call)
            call = loop.iter
            given = {k.arg: k.value for k in call.keywords}
            value: object
            if "num_stages" in given:
                value = given["num_stages"]
            elif None in given or any(isinstance(a, ast.Starred) for a in call.args):
                value = _STARRED
            else:
                # T.Pipelined(start, stop, num_stages, ...): only a call with an explicit
                # stop has its depth third; T.Pipelined(n, 3) reads 3 as the stop.
                value = call.args[2] if len(call.args) > 2 else None
            found.append((loop.lineno, value))
    return sorted(found, key=lambda entry: entry[0])


_UNBOUND = object()


def _scope_nodes(scope: ast.AST) -> list[ast.AST]:
    """Every node of a factory; of a module, those of its own scope (not inside the
    functions and classes it defines, whose names it binds all the same)."""
    if not isinstance(scope, ast.Module):
        return list(ast.walk(scope))
    found: list[ast.AST] = []
    todo: list[ast.AST] = list(scope.body)
    while todo:
        node = todo.pop()
        found.append(node)
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef,
                                 ast.Lambda)):
            todo.extend(ast.iter_child_nodes(node))
    return found


def _binds_otherwise(node: ast.AST, name: str) -> bool:
    """``node`` binds ``name`` other than by assignment: an import, ``global``, a def, an
    ``except ... as``. (A nested function's parameter of the same name is not counted: the
    pattern is ``num_stages = 2`` handed on as ``kernel_func(..., num_stages)``.)"""
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return any((a.asname or a.name.split(".")[0]) == name for a in node.names)
    if isinstance(node, (ast.Global, ast.Nonlocal)):
        return name in node.names
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef,
                         ast.ExceptHandler)):
        return node.name == name
    return False


def _bound_once(name: str, scope: ast.AST) -> object:
    """The int ``name`` is bound to in ``scope`` when its one binding there is
    ``name = <int>``; None when it is bound otherwise or more than once (a tuple target, a
    loop, an import, a second assignment under an ``if``...); ``_UNBOUND`` when unbound."""
    nodes = _scope_nodes(scope)
    stores = [n for n in nodes if isinstance(n, ast.Name) and n.id == name
              and isinstance(n.ctx, (ast.Store, ast.Del))]
    others = [n for n in nodes if _binds_otherwise(n, name) and n is not scope]
    if not stores and not others:
        return _UNBOUND
    if others or len(stores) != 1:
        return None
    for node in nodes:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if targets == [stores[0]] and isinstance(node.value, ast.Constant) \
                    and type(node.value.value) is int:
                return int(node.value.value)
    return None


def _constant(name: str, *scopes: ast.AST) -> int | None:
    """The int a name is bound to once, by ``name = <int>``, in the first scope binding it
    (the factory, then the module)."""
    for scope in scopes:
        found = _bound_once(name, scope)
        if found is not _UNBOUND:
            return found if isinstance(found, int) else None
    return None


def loop_depth(node: ast.FunctionDef, tree: ast.Module, params: tuple[str, ...],
           has_kwargs: bool) -> tuple[Depth | None, str]:
    """How ``node``'s loops get their depth, or (None, why not): the words that follow
    "has no num_stages parameter" when the factory is refused (empty: no loop to read)."""
    if "num_stages" in params:
        return Depth("num_stages"), ""
    swept = (Depth("num_stages"), "") if has_kwargs else None  # num_stages via **kwargs
    loops = _loop_depths(node)
    if not loops:
        return swept or (None, "")
    starred = [line for line, value in loops if value is _STARRED]
    if starred:
        return swept or (None, f"its T.Pipelined loop (line {starred[0]}) takes its "
                               "arguments through * or **, so its depth cannot be read")
    named: dict[str, int] = {}
    for line, value in loops:
        if isinstance(value, ast.Name) and value.id in params:
            named.setdefault(value.id, line)
    if len(named) == 1:
        return Depth(next(iter(named))), ""  # T.Pipelined(..., num_stages=stages)
    if named:
        said = ", ".join(f"{name} (line {line})" for name, line in named.items())
        return None, (f"its T.Pipelined loops read different parameters as their depth: "
                      f"{said}")
    written: list[tuple[int, int, str]] = []
    computed: list[tuple[int, Computed]] = []
    for line, value in loops:
        if value is None:
            written.append((line, 0, ""))
            continue
        assert isinstance(value, ast.expr)
        depth = value.value if isinstance(value, ast.Constant) and type(value.value) is int \
            else _constant(value.id, node, tree) if isinstance(value, ast.Name) else None
        if depth is None:
            # Computed from the arguments: lowered as written, its value told per variant.
            how = read_computed(value, node, params)
            if how is None:
                return swept or (None, f"its T.Pipelined loop (line {line}) takes "
                                       f"num_stages={ast.unparse(value)}, which is neither a "
                                       "parameter, a number, nor computed from the "
                                       "factory's arguments")
            computed.append((line, how))
            depth = 0
        written.append((line, int(depth), ast.unparse(value)))
    # Loops that set different depths (a split kernel and its combine step, say) lower
    # as written too; the first one's depth names the variant, the note lists them all.
    return Depth(None, tuple(written), tuple(computed)), ""
