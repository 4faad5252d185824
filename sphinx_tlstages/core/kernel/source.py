"""Reading kernel source as Python text: the factories a kernel defines, their
parameters, and which one builds the kernel.

Pure ``ast`` work, shared by the directive (which checks a kernel while Sphinx reads) and
the worker. How a factory's loops get their depth is :mod:`.depth`; the statements
a page names are :mod:`.statements`. Nothing here imports TileLang.
"""

from __future__ import annotations

import ast
import textwrap
from dataclasses import dataclass

from ..errors import SourceError
from .bindings import module_functions
from .depth import Depth, loop_depth
from .syntax import dotted_name


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
class Factory:
    """A top-level callable that may build the kernel."""

    name: str
    kind: str  # "jit", "autotune" or "plain"
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
    guard: str = ""  # the top-level statement it is bound under, in words (bindings.Binding)

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


_TENSOR_ANNOTATIONS = ("Tensor", "Buffer", "StridedTensor", "FlattenedTensor")


def _is_tensor(annotation: ast.expr) -> bool:
    """``T.Tensor((M, K), dtype)``, or its other spelling ``T.Tensor[(M, K), dtype]``."""
    if isinstance(annotation, ast.Subscript):
        annotation = annotation.value
    return dotted_name(annotation).rsplit(".", 1)[-1] in _TENSOR_ANNOTATIONS


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
        if isinstance(found, ast.Call) and dotted_name(found.func).endswith("const") \
                and dotted_name(found.func).split(".")[0] in ("T", "tl", "language",
                                                                 "tilelang") \
                and found.args and isinstance(found.args[0], ast.Constant) \
                and isinstance(found.args[0].value, str):
            consts += [name for name in found.args[0].value.replace(",", " ").split()
                       if name not in consts]
    return tuple(tensors), tuple(consts)


def find_factories(tree: ast.Module, source: str = "") -> list[Factory]:
    """The functions the module binds at its top level (see :mod:`.bindings`: under a
    top-level ``if``/``try``/``with`` too, or wrapped by assignment), each classified by
    its decorators or wrappers."""
    found: list[Factory] = []
    for binding in module_functions(tree, source).values():
        node, names = binding.node, list(binding.decorators)
        # TileLang's decorators, or the author's stand-ins for them (``lazy_jit``).
        kind = "autotune" if any("autotune" in n for n in names) \
            else "jit" if any("jit" in n for n in names) else "plain"
        # Any other decorator may stand in front of TileLang's jit too (one that makes
        # TileLang optional): an eager factory's tensor parameters are not arguments.
        decorated = kind != "plain" or bool(set(names) - {"macro", "prim_func"})
        args = node.args
        positional = [a.arg for a in [*args.posonlyargs, *args.args]]
        required = positional[: len(positional) - len(args.defaults)]
        defaults = zip(args.kwonlyargs, args.kw_defaults, strict=True)
        required += [a.arg for a, d in defaults if d is None]
        params = (*positional, *(a.arg for a in args.kwonlyargs))
        tensors, consts = _eager_names(node, params) if decorated else ((), ())
        required = [*(p for p in required if p not in tensors), *consts]
        has_kwargs = args.kwarg is not None
        depth, depth_problem = loop_depth(node, tree, (*params, *consts), has_kwargs)
        found.append(
            Factory(binding.name, kind, tuple(params), tuple(required), has_kwargs,
                    binding.line, tensors, consts, depth, depth_problem,
                    tuple(names), binding.guard)
        )
    return found


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
                f"no function {requested!r} bound at the kernel's top level (looked for a "
                f"def or an assignment such as {requested} = tilelang.jit(...), under a "
                f"top-level if/try/with too); found: {listing}")
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
