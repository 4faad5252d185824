"""The depths a kernel file says it tries: its own tuning list, read from the text.

Where the factory is wrapped in ``@tilelang.autotune(configs=...)`` (or ``autotune``
imported from ``tilelang.autotuner``), the configurations are read for the values they
give ``num_stages`` (or the parameter the factory's loops read as their depth): a list of
dicts, a function or lambda that builds them (``dict(num_stages=s, ...) for ... in
itertools.product(..., [1, 2, 3], ...)``, ``iter_params = dict(num_stages=[1, 2, 3])``),
or a name bound to either. Where no configuration names the depth, the file's own
``num_stages`` lists are read instead: ``num_stages = [2, 3, 4]``, ``for num_stages in
(2, 3):``, ``{"num_stages": [2, 3]}``. Only the depths are read, never the rest of a
configuration. Pure ``ast``: nothing runs.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from .bindings import module_functions
from .syntax import dotted_name


@dataclass(frozen=True)
class Tuning:
    """The depths a kernel file tries, and where it lists them."""

    depths: tuple[int, ...]  # distinct, ascending
    lines: tuple[int, ...]  # the kernel lines that give them, ascending
    autotune: bool  # from @autotune's configurations (else from a num_stages list)

    @property
    def what(self) -> str:
        return "the @autotune configurations" if self.autotune else "the num_stages list"


def _ints(node: ast.expr, names: dict[str, ast.expr], seen: frozenset[str] = frozenset()
          ) -> list[int] | None:
    """The whole numbers ``node`` gives: one, a literal list, tuple or set of them,
    ``range(...)`` of literals, or a name bound once to one of those; None otherwise."""
    if isinstance(node, ast.Constant):
        value = node.value
        return [value] if type(value) is int and value >= 0 else None
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        found: list[int] = []
        for element in node.elts:
            one = _ints(element, names, seen)
            if one is None or len(one) != 1:
                return None
            found += one
        return found
    if isinstance(node, ast.Call) and dotted_name(node.func) == "range" \
            and not node.keywords and 1 <= len(node.args) <= 3:
        bounds = [a.value for a in node.args if isinstance(a, ast.Constant)
                  and type(a.value) is int]
        if len(bounds) == len(node.args):
            return [v for v in range(*bounds) if v >= 0]
    if isinstance(node, ast.Name) and node.id in names and node.id not in seen:
        return _ints(names[node.id], names, seen | {node.id})
    return None


def _bound_once(scope: ast.AST) -> dict[str, ast.expr]:
    """Names assigned exactly once in ``scope`` (a function, or a module), and what to."""
    found: dict[str, ast.expr] = {}
    twice: set[str] = set()
    for node in ast.walk(scope):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name):
                    if target.id in found:
                        twice.add(target.id)
                    found[target.id] = node.value
    return {name: value for name, value in found.items() if name not in twice}


def _module_scope(tree: ast.Module) -> ast.Module:
    """The module without its top-level functions (each is a scope of its own)."""
    return ast.Module(body=[s for s in tree.body if not isinstance(s, ast.FunctionDef)],
                      type_ignores=[])


def _generators(scope: ast.AST) -> Iterator[tuple[ast.expr, ast.expr]]:
    """(target, iterable) of every ``for`` loop and comprehension in ``scope``."""
    for node in ast.walk(scope):
        if isinstance(node, (ast.For, ast.comprehension)):
            yield node.target, node.iter


def _iterated(name: str, scope: ast.AST, names: dict[str, ast.expr]) -> list[int] | None:
    """The values a loop or comprehension gives ``name``: ``for s in [1, 2]``, or its
    place in ``for m, s in itertools.product([64, 128], [1, 2])`` (or ``zip``)."""
    for target, iterable in _generators(scope):
        if isinstance(iterable, ast.Name) and iterable.id in names:
            iterable = names[iterable.id]  # grid = itertools.product(...); ... in grid
        if isinstance(target, ast.Name) and target.id == name:
            return _ints(iterable, names)
        if isinstance(target, ast.Tuple) and isinstance(iterable, ast.Call) \
                and dotted_name(iterable.func).rsplit(".", 1)[-1] in ("product", "zip"):
            places = [i for i, t in enumerate(target.elts)
                      if isinstance(t, ast.Name) and t.id == name]
            if places and not any(isinstance(a, ast.Starred) for a in iterable.args) \
                    and places[0] < len(iterable.args):
                return _ints(iterable.args[places[0]], names)
    return None


def _given(scope: ast.AST, keys: Iterable[str], names: dict[str, ast.expr],
           loops: bool) -> list[tuple[int, list[int]]]:
    """(line, depths) of each place in ``scope`` that gives a depth under one of
    ``keys``: a dict's key, ``dict(...)``'s keyword, and with ``loops`` (a file's own
    lists, not a configuration) a name assigned a list or looped over."""
    wanted = set(keys)
    found: list[tuple[int, list[int]]] = []

    def value(node: ast.expr, line: int) -> None:
        depths = _ints(node, names)
        if depths is None and isinstance(node, ast.Name):
            depths = _iterated(node.id, scope, names)
        if depths:
            found.append((line, depths))

    for node in ast.walk(scope):
        if isinstance(node, ast.Dict):
            for key, item in zip(node.keys, node.values, strict=True):
                if isinstance(key, ast.Constant) and key.value in wanted:
                    value(item, key.lineno)
        elif isinstance(node, ast.Call) and dotted_name(node.func) == "dict":
            for keyword in node.keywords:
                if keyword.arg in wanted:
                    value(keyword.value, keyword.value.lineno)
        elif loops and isinstance(node, (ast.Assign, ast.AnnAssign)) \
                and node.value is not None \
                and isinstance(node.value, (ast.List, ast.Tuple, ast.Set, ast.Call)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id in wanted for t in targets):
                value(node.value, node.lineno)
        elif loops and isinstance(node, ast.For) and isinstance(node.target, ast.Name) \
                and node.target.id in wanted:
            value(node.iter, node.lineno)
    return found


def _configs(tree: ast.Module, factory: str, source: str) -> ast.expr | None:
    """The ``configs`` given to the ``autotune`` that wraps ``factory``: as its decorator,
    or in the assignment that binds it (``f = autotune(configs=c)(jit(g))``)."""
    calls: list[ast.expr] = []
    binding = module_functions(tree, source).get(factory)
    if binding is not None:
        calls += binding.node.decorator_list
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == factory
                                                for t in node.targets):
            calls += [n for n in ast.walk(node.value) if isinstance(n, ast.Call)]
    for call in calls:
        if isinstance(call, ast.Call) and dotted_name(call.func).rsplit(".", 1)[-1] == "autotune":
            given = {k.arg: k.value for k in call.keywords}
            if "configs" in given:
                return given["configs"]
            if call.args:
                return call.args[0]
    return None


def _config_scope(configs: ast.expr, tree: ast.Module, source: str) -> ast.AST:
    """Where the configurations are written: the function that builds them (called or
    passed), a lambda's body, the value a module-level name is bound to, or the
    expression itself."""
    functions = module_functions(tree, source)
    module = _bound_once(_module_scope(tree))
    node: ast.expr = configs
    for _ in range(4):  # a name bound to a call of a function: a few hops at most
        if isinstance(node, ast.Lambda):
            return node.body
        name = node.func if isinstance(node, ast.Call) else node
        if isinstance(name, ast.Name) and name.id in functions:
            return functions[name.id].node
        if isinstance(node, ast.Name) and node.id in module:
            node = module[node.id]
            continue
        break
    return node


def tried(tree: ast.Module, factory: str, source: str, keys: Iterable[str]
          ) -> Tuning | None:
    """The depths the kernel file tries for ``factory``, by ``keys`` (``num_stages``
    and the parameter its loops read); None where it lists none."""
    keys = tuple(dict.fromkeys(keys))
    module = _module_scope(tree)
    module_names = _bound_once(module)
    configs = _configs(tree, factory, source)
    if configs is not None:
        scope = _config_scope(configs, tree, source)
        names = {**module_names, **_bound_once(scope)}
        found = _given(scope, keys, names, loops=False)
        # A function that binds the depths to a name and builds dicts from a product of
        # such names by position (``c[3]``) names them only where it binds them.
        found = found or _given(scope, keys, names, loops=True)
        if found:
            return _tuning(found, autotune=True)
    # The file's own lists: in the module's statements and in its plain functions (a
    # main() that loops over depths), not in kernels nor in another kernel's configs.
    found = _given(module, keys, module_names, loops=True)
    functions = module_functions(tree, source)
    others = [_configs(tree, name, source) for name in functions if name != factory]
    theirs = {id(_config_scope(c, tree, source)) for c in others if c is not None}
    for binding in functions.values():
        if set(binding.decorators) & _KERNELS or id(binding.node) in theirs:
            continue
        body = ast.Module(body=binding.node.body, type_ignores=[])
        found += _given(body, keys, {**module_names, **_bound_once(body)}, loops=True)
    return _tuning(found, autotune=False) if found else None


# Decorators of kernel code, whose bodies are no list of depths to try.
_KERNELS = {"jit", "autotune", "macro", "prim_func", "lazy_jit"}


def _tuning(found: list[tuple[int, list[int]]], autotune: bool) -> Tuning:
    return Tuning(tuple(sorted({d for _, depths in found for d in depths})),
                  tuple(sorted({line for line, _ in found})), autotune)
