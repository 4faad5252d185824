"""The function TileLang lowers, behind whatever decorators stand between a factory's name
and TileLang.

A factory is reached as its author wrote it: ``@tilelang.jit`` (TileLang's ``JITImpl``,
read by ``get_tir``), ``@autotune`` over it (``AutoTuneImpl``, its ``jit_impl``), or the
author's own decorator in front: a shim that makes TileLang optional and JIT-compiles
on the first call (``functools.wraps`` over the factory, TileLang imported inside), which
called as it is would compile for the machine's GPU. Nothing here calls a wrapper: the
``__wrapped__`` chain is walked down to TileLang's object or to the author's function,
which TileLang's own ``jit`` then wraps with the options the shim holds, and only
``get_tir`` runs, on the CPU.

The pass configs come from TileLang's object where there is one, else from what the shim
keeps (an attribute, or a value its closure holds: ``pass_configs``, or the keywords it
was given), else from the decorator's ``pass_configs=`` as the kernel's text writes it,
evaluated in the kernel's namespace. Where the text names configs that none of these
gives, :class:`Built` says which were not applied, and why.
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import tilelang

from ..core.errors import SourceError
from ..core.kernel.bindings import module_functions
from ..core.kernel.syntax import dotted_name

# The keywords of ``tilelang.jit`` a shim keeps to pass on (only its pass configs change
# the lowering; the others say how to compile and call the kernel).
_JIT_KEYWORDS = ("out_idx", "target", "target_host", "execution_backend", "verbose",
                 "pass_configs", "debug_root_path", "compile_flags")


@dataclass
class Built:
    """The prim_func a factory built, its pass configs, and the configs the kernel's text
    names that could not be applied (``unapplied``: their keys as written, ``why``, and
    the kernel line of the decorator that holds them)."""

    func: Any
    pass_configs: dict[str, Any] = field(default_factory=dict)
    unapplied: list[str] = field(default_factory=list)
    why: str = ""
    line: int | None = None


def _tilelang(obj: Any) -> bool:
    return type(obj).__module__.split(".")[0] == "tilelang"


def _chain(obj: Any) -> Iterator[Any]:
    """``obj`` and each object its ``__wrapped__`` chain holds, outermost first."""
    seen: set[int] = set()
    while obj is not None and id(obj) not in seen:
        seen.add(id(obj))
        yield obj
        obj = getattr(obj, "__wrapped__", None)


def _jit_of(obj: Any) -> Any | None:
    """TileLang's ``JITImpl`` that ``obj`` is or holds (``@autotune``'s ``jit_impl``)."""
    inner = getattr(obj, "jit_impl", None)
    if inner is not None and hasattr(inner, "get_tir"):
        return inner
    return obj if _tilelang(obj) and hasattr(obj, "get_tir") else None


def _held(obj: Any) -> Iterator[tuple[str, Any]]:
    """What a wrapper keeps: its attributes and the values its closure holds, by name."""
    yield from (getattr(obj, "__dict__", None) or {}).items()
    code = getattr(obj, "__code__", None)
    for name, cell in zip(getattr(code, "co_freevars", ()), getattr(obj, "__closure__", None)
                          or (), strict=False):
        try:
            yield name, cell.cell_contents
        except ValueError:  # a cell not filled yet
            continue


def _kept_options(wrappers: list[Any]) -> tuple[Any | None, dict[str, Any] | None]:
    """A ``JITImpl`` a wrapper already holds (a shim that built it eagerly), or the jit
    keywords it keeps; the pass configs among them (None: none found)."""
    options: dict[str, Any] | None = None
    for wrapper in wrappers:
        for name, value in _held(wrapper):
            jit = _jit_of(value)
            if jit is not None:
                return jit, None
            if not isinstance(value, dict):
                continue
            if name == "pass_configs":
                options = {**(options or {}), "pass_configs": value}
            elif set(value) & set(_JIT_KEYWORDS) and all(isinstance(k, str) for k in value):
                options = {**(options or {}), **value}
    return None, options


def _written(source: str, name: str) -> list[ast.Call]:
    """The decorator calls (and wrapping calls) the kernel's text applies to ``name``."""
    binding = module_functions(ast.parse(source), source).get(name)
    if binding is None:
        return []
    found = [d for d in binding.node.decorator_list if isinstance(d, ast.Call)]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name
                                                for t in node.targets):
            value = node.value
            while isinstance(value, ast.Call):
                if isinstance(value.func, ast.Call):
                    found.append(value.func)
                value = value.args[0] if value.args else None  # type: ignore[assignment]
    return found


def _written_configs(source: str, name: str, namespace: dict[str, Any]
                     ) -> tuple[dict[str, Any] | None, list[str], str, int | None]:
    """The ``pass_configs=`` a decorator of ``name`` is given in the kernel's text (at
    any depth of its call), evaluated in the kernel's namespace; where that gives no
    dict, the keys as written (the whole text where it is not a dict) and why."""
    for call in _written(source, name):
        for keyword in (n for n in ast.walk(call) if isinstance(n, ast.keyword)):
            if keyword.arg != "pass_configs":
                continue
            node = keyword.value
            text = ast.get_source_segment(source, node) or ast.unparse(node)
            keys = [ast.get_source_segment(source, k) or ast.unparse(k)
                    for k in getattr(node, "keys", []) if k is not None] or [text]
            where = f"@{dotted_name(call.func)}(pass_configs=...)"
            try:
                value = eval(compile(ast.Expression(node), "<pass_configs>", "eval"),
                             dict(namespace))
            except Exception as exc:
                return None, keys, (f"{where} keeps them where TileLang's lowering cannot "
                                    f"read them, and their text does not evaluate here "
                                    f"({type(exc).__name__}: {exc})"), call.lineno
            if isinstance(value, dict):
                return value, [], "", None
            return None, keys, (f"{where} gives a {type(value).__name__}, not the dict of "
                                "configs TileLang applies while lowering; the decorator "
                                "makes them only when the kernel runs"), call.lineno
    return None, [], "", None


def _as_written(obj: Any) -> tuple[Any, list[Any]]:
    """The author's function under ``obj`` and the wrappers in front of it, outermost
    first; a wrapper that does not say what it wraps (no ``__wrapped__``) but keeps jit
    keywords and one function is taken as wrapping that function."""
    chain = list(_chain(obj))
    inner, wrappers = chain[-1], chain[:-1]
    if not wrappers:
        functions = [v for _, v in _held(inner) if inspect.isfunction(v)]
        if _kept_options([inner])[1] is not None and len(functions) == 1:
            return functions[0], [inner]
    return inner, wrappers


def _pass_configs(wrappers: list[Any], source: str, name: str, namespace: dict[str, Any]
                  ) -> tuple[dict[str, Any], list[str], str, int | None]:
    """The pass configs the author's wrappers keep, else those the text gives them; the
    keys written that neither gives, and why."""
    _, options = _kept_options(wrappers)
    if options is not None and isinstance(options.get("pass_configs"), dict):
        return dict(options["pass_configs"]), [], "", None
    written, unapplied, why, line = _written_configs(source, name, namespace)
    return dict(written or {}), unapplied, why, line


def _called(result: Any) -> tuple[Any, dict[str, Any]]:
    """A factory's return value as TileLang lowers it: a prim_func, or what ``get_tir``
    of a kernel object gives (its pass configs too)."""
    if hasattr(result, "get_tir"):
        return result.get_tir(), dict(getattr(result, "pass_configs", None) or {})
    if not isinstance(result, tilelang.tvm.tirx.PrimFunc):
        raise SourceError(f"the factory returned {type(result).__name__}, not a T.prim_func")
    return result, {}


def build(obj: Any, kwargs: dict[str, Any], source: str = "", name: str = "",
          namespace: dict[str, Any] | None = None) -> Built:
    """The prim_func the factory ``obj`` (bound to ``name`` in ``source``) builds for
    ``kwargs``, never calling a wrapper that would compile: see the module's docstring."""
    for layer in _chain(obj):
        jit = _jit_of(layer)
        if jit is not None:
            return Built(jit.get_tir(**kwargs), dict(getattr(jit, "pass_configs", None) or {}))
    inner, wrappers = _as_written(obj)
    held, _ = _kept_options(wrappers)
    if held is not None:  # a shim that built TileLang's object already
        return Built(held.get_tir(**kwargs), dict(getattr(held, "pass_configs", None) or {}))
    if not wrappers:  # the author's own function: called as it is
        return Built(*_called(inner(**kwargs)))
    configs, unapplied, why, line = _pass_configs(wrappers, source, name, namespace or {})
    if inspect.isfunction(inner):
        # TileLang's own jit, as the wrapper would make it: the author's function may be
        # written in either of its styles (returning a prim_func, or eager).
        jit = tilelang.jit(pass_configs=configs or None)(inner)
        try:
            return Built(jit.get_tir(**kwargs), configs, unapplied, why, line)
        except AssertionError:  # it returns a kernel object of its own: called as it is
            pass
    func, own = _called(inner(**kwargs))
    return Built(func, {**configs, **own}, unapplied, why, line)
