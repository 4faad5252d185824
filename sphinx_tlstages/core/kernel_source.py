"""Reading kernel source as Python text: factories, their parameters, pipelined loops.

Pure ``ast`` work, shared by the directive (which checks a kernel while Sphinx reads) and
the worker (which names the statements of each pipelined loop). Nothing here imports
TileLang.
"""

from __future__ import annotations

import ast
import textwrap
from dataclasses import dataclass

from .errors import SourceError

FACTORY_KINDS = ("jit", "autotune", "plain")


def normalise_source(text: str) -> str:
    """Dedent, strip trailing blanks and end with one newline, so keys ignore layout noise."""
    lines = [line.rstrip() for line in textwrap.dedent(text.expandtabs()).splitlines()]
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines) + "\n"


def parse_kernel(source: str, filename: str) -> ast.Module:
    """Parse kernel source; a syntax error becomes a :class:`SourceError` at its line."""
    try:
        return ast.parse(source, filename=filename)
    except SyntaxError as exc:
        raise SourceError(f"syntax error in kernel: {exc.msg}", exc.lineno) from None


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
    """A loop's depth as its text gives it: ``num_stages=3``, ``num_stages=DEPTH (2)``."""
    if not expression:
        return f"no num_stages, TileLang's default {depth}"
    said = f"num_stages={expression}"
    return said if expression == str(depth) else f"{said} ({depth})"


@dataclass(frozen=True)
class Factory:
    """A top-level callable that may build the kernel."""

    name: str
    kind: str  # one of FACTORY_KINDS
    params: tuple[str, ...]
    required: tuple[str, ...]
    has_kwargs: bool
    line: int
    # Eager-style @tilelang.jit: parameters annotated as tensors in the body (``A:
    # T.Tensor((M, K), dtype)``), which get_tir does not take, and the sizes it takes
    # instead, named by ``M, N, K = T.const("M, N, K")``.
    tensors: tuple[str, ...] = ()
    consts: tuple[str, ...] = ()
    # None: no T.Pipelined loop whose depth could be given or read (refused if chosen),
    # for the reason ``depth_problem`` gives.
    depth: Depth | None = None
    depth_problem: str = ""
    decorators: tuple[str, ...] = ()  # last names: jit, autotune, macro, prim_func...

    @property
    def keywords(self) -> tuple[str, ...]:
        """What the factory takes as keywords (TileLang's ``get_tir`` for eager ones)."""
        return (*(p for p in self.params if p not in self.tensors), *self.consts)

    @property
    def takes_depth(self) -> bool:
        """Whether the directive's num_stages values can be given to it."""
        return self.depth is not None and self.depth.param is not None

    @property
    def depth_param(self) -> str | None:
        """The keyword num_stages is given as (None: the kernel fixes its depth)."""
        return self.depth.param if self.depth else "num_stages"

    @property
    def written_depth(self) -> tuple[tuple[int, str], ...]:
        """(kernel line, what it says) of each depth a kernel lowered as written fixes."""
        return self.depth.each if self.depth and self.depth.param is None else ()


def _decorator_name(node: ast.expr) -> str:
    if isinstance(node, ast.Call):
        node = node.func
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


_TENSOR_ANNOTATIONS = ("Tensor", "Buffer", "StridedTensor", "FlattenedTensor")


def _is_tensor(annotation: ast.expr) -> bool:
    """``T.Tensor((M, K), dtype)``, or its other spelling ``T.Tensor[(M, K), dtype]``."""
    if isinstance(annotation, ast.Subscript):
        annotation = annotation.value
    return _decorator_name(annotation).rsplit(".", 1)[-1] in _TENSOR_ANNOTATIONS


def _eager_names(node: ast.FunctionDef, params: tuple[str, ...]) -> tuple[tuple[str, ...],
                                                                          tuple[str, ...]]:
    """(tensor parameters, T.const names) of an eager-style factory's body."""
    tensors: list[str] = []
    consts: list[str] = []
    for arg in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]:
        if arg.annotation is not None and _is_tensor(arg.annotation):
            tensors.append(arg.arg)
    for found in ast.walk(node):
        if isinstance(found, ast.AnnAssign) and isinstance(found.target, ast.Name) \
                and found.target.id in params and found.target.id not in tensors \
                and _is_tensor(found.annotation):
            tensors.append(found.target.id)
        if isinstance(found, ast.Call) and _decorator_name(found.func).endswith("const") \
                and _decorator_name(found.func).split(".")[0] in ("T", "tl", "language",
                                                                 "tilelang") \
                and found.args and isinstance(found.args[0], ast.Constant) \
                and isinstance(found.args[0].value, str):
            consts += [name for name in found.args[0].value.replace(",", " ").split()
                       if name not in consts]
    return tuple(tensors), tuple(consts)


def find_factories(tree: ast.Module) -> list[Factory]:
    """Top-level functions, each classified by its decorators."""
    found: list[Factory] = []
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef):
            continue
        names = [_decorator_name(d).rsplit(".", 1)[-1] for d in node.decorator_list]
        kind = "autotune" if "autotune" in names else "jit" if "jit" in names else "plain"
        args = node.args
        positional = [a.arg for a in [*args.posonlyargs, *args.args]]
        required = positional[: len(positional) - len(args.defaults)]
        defaults = zip(args.kwonlyargs, args.kw_defaults, strict=True)
        required += [a.arg for a, d in defaults if d is None]
        params = (*positional, *(a.arg for a in args.kwonlyargs))
        tensors, consts = _eager_names(node, params) if kind != "plain" else ((), ())
        required = [*(p for p in required if p not in tensors), *consts]
        has_kwargs = args.kwarg is not None
        depth, depth_problem = _depth(node, tree, (*params, *consts), has_kwargs)
        found.append(
            Factory(node.name, kind, tuple(params), tuple(required), has_kwargs,
                    node.lineno, tensors, consts, depth, depth_problem,
                    tuple(names))
        )
    return found


_STARRED = object()  # a T.Pipelined call whose arguments come through * or **


def _loop_depths(node: ast.FunctionDef) -> list[tuple[int, object]]:
    """(line, ``num_stages`` expression, None when it gives none, or ``_STARRED``) of each
    T.Pipelined loop in ``node``, in source order (``T.Pipelined(n, num_stages=3)``, or
    the third positional, after an explicit start and stop)."""
    found: list[tuple[int, object]] = []
    for loop in ast.walk(node):
        if isinstance(loop, ast.For) and _is_pipelined(loop):
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


def _depth(node: ast.FunctionDef, tree: ast.Module, params: tuple[str, ...],
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
    for line, value in loops:
        if value is None:
            written.append((line, 0, ""))
            continue
        assert isinstance(value, ast.expr)
        depth = value.value if isinstance(value, ast.Constant) and type(value.value) is int \
            else _constant(value.id, node, tree) if isinstance(value, ast.Name) else None
        if depth is None:
            return swept or (None, f"its T.Pipelined loop (line {line}) takes "
                                   f"num_stages={ast.unparse(value)}, which is neither a "
                                   "parameter nor a number")
        written.append((line, int(depth), ast.unparse(value)))
    # Loops that set different depths (a split kernel and its combine step, say) lower
    # as written too; the first one's depth names the variant, the note lists them all.
    return Depth(None, tuple(written)), ""


def choose_factory(factories: list[Factory], requested: str | None) -> Factory:
    """Pick the factory: the one requested, else the only jit/autotune one, else the only
    plain function whose pipeline depth it can give or read (see :class:`Depth`)."""
    listing = ", ".join(f"{f.name} (line {f.line}, {f.kind})" for f in factories) or "none"
    if requested:
        for factory in factories:
            if factory.name == requested:
                break
        else:
            raise SourceError(
                f"no top-level function {requested!r} in the kernel; found: {listing}")
    else:
        decorated = [f for f in factories if f.kind != "plain"]
        # Plain functions: one taking num_stages first; else one whose loops set the depth
        # (never a @T.macro or @T.prim_func helper, which has loops of its own).
        plain = [f for f in factories if f.kind == "plain"
                 and not {"macro", "prim_func"} & set(f.decorators)]
        candidates = decorated or [f for f in plain if f.takes_depth] \
            or [f for f in plain if f.depth is not None]
        if not candidates:
            raise SourceError(
                "no kernel factory: expected a @tilelang.jit or @autotune function, or a "
                f"function taking num_stages or with a T.Pipelined loop; found: {listing}"
            )
        if len(candidates) > 1:
            names = ", ".join(f"{f.name} (line {f.line})" for f in candidates)
            raise SourceError(f"several kernel factories: {names}; choose one with :factory:")
        factory = candidates[0]
    if factory.depth is None:
        hint = (f"; {factory.depth_problem}: give the factory a num_stages parameter and "
                 "pass it to its T.Pipelined loops") if factory.depth_problem else ""
        raise SourceError(
            f"factory {factory.name!r} has no num_stages parameter "
            f"(its parameters: {', '.join(factory.params) or 'none'}){hint}",
            factory.line,
        )
    return factory


def check_params(factory: Factory, params: dict[str, object]) -> None:
    """Check keyword arguments against the factory's signature, before anything runs."""
    depth_param = factory.depth_param
    for given in ("num_stages", depth_param):
        if given and given in params:
            raise SourceError(f"{given} comes from :num-stages:, not from :params:")
    takes = factory.keywords
    passed_tensors = sorted(set(params) & set(factory.tensors))
    if passed_tensors:
        raise SourceError(
            f"factory {factory.name!r} takes {', '.join(passed_tensors)} as tensors; give "
            f"their sizes instead ({', '.join(factory.consts) or 'its T.const names'})")
    if not factory.has_kwargs:
        unknown = sorted(set(params) - set(takes))
        if unknown:
            raise SourceError(
                f"factory {factory.name!r} takes no parameter {', '.join(unknown)} "
                f"(its parameters: {', '.join(takes)})"
            )
    missing = [p for p in factory.required if p not in params and p != depth_param]
    if missing:
        raise SourceError(f"factory {factory.name!r} needs :params: for {', '.join(missing)}")


@dataclass(frozen=True)
class Statement:
    """One statement of a pipelined loop body: its text, kernel line and the names it uses."""

    text: str
    line: int
    names: frozenset[str]


def _is_pipelined(node: ast.For) -> bool:
    call = node.iter
    return isinstance(call, ast.Call) and _decorator_name(call.func).endswith("Pipelined")


def _one_line(segment: str, limit: int = 96) -> str:
    text = " ".join(segment.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def pipelined_loops(source: str, factory_name: str) -> list[list[Statement]]:
    """The body statements of each ``T.Pipelined`` loop in the factory, in source order."""
    tree = ast.parse(source)
    scope: ast.AST = tree
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == factory_name:
            scope = node
    loops: list[list[Statement]] = []
    for found in ast.walk(scope):
        if isinstance(found, ast.For) and _is_pipelined(found):
            body = []
            for stmt in found.body:
                segment = ast.get_source_segment(source, stmt) or ast.unparse(stmt)
                names = frozenset(n.id for n in ast.walk(stmt) if isinstance(n, ast.Name))
                body.append(Statement(_one_line(segment), stmt.lineno, names))
            loops.append(body)
    loops.sort(key=lambda body: body[0].line if body else 0)
    return loops


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
    tree = ast.parse(source)
    scope: ast.AST = tree
    for top in tree.body:
        if isinstance(top, ast.FunctionDef) and top.name == factory_name:
            scope = top
    found = []
    for node in ast.walk(scope):
        if isinstance(node, ast.Call) and _decorator_name(node.func).rsplit(".", 1)[-1] \
                .endswith("gemm") and "." in _decorator_name(node.func):
            operands = frozenset(_base_name(arg) for arg in node.args[:3])
            found.append(Statement(_call_text(source, node), node.lineno, operands))
    found.sort(key=lambda s: s.line)
    return found
