"""Turning kernel text into the factory that builds the kernel, inside a worker.

The text runs as its own module would when imported: compiled with no compiler flags of
ours (``dont_inherit``: this module's ``from __future__ import annotations`` would turn
the kernel's annotations into strings, and TileLang resolves names such as ``q_shape``
in ``Q: T.Tensor(q_shape, dtype)`` from them), with ``__name__`` and ``__file__`` set,
registered in ``sys.modules`` while it runs, and its folder (and ``tlstages_python_path``)
first on the import path, so ``from quantize import ...`` finds the helper beside it.

One worker lowers many variants, so a kernel's helpers must not leak into the next
kernel: modules imported from the kernel's folders are recorded (path and SHA-256, which
the cache checks on lookup) and dropped from ``sys.modules`` when the variant is done, and
a module of the same name that was loaded before is hidden meanwhile and put back after.
TileLang's builder reads the kernel back through ``inspect``/``linecache``, so the text is
registered there under the name it compiles as.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import hashlib
import importlib
import linecache
import os
import sys
import types
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tilelang
import tilelang.language as T

from ..core.errors import SourceError
from ..core.kernel.source import find_factories
from ..core.plan.options import literal_value
from ..core.protocol.messages import Task
from .factory import build


@dataclass
class KernelModule:
    """A kernel's namespace while it is loaded, and the local files it imported."""

    namespace: dict[str, Any]
    imported: list[dict[str, str]] = field(default_factory=list)  # {"path", "sha256"}


def _local_names(folders: Sequence[str]) -> set[str]:
    """Top-level module names the kernel's folders provide (``utils.py``, ``pkg/``)."""
    names: set[str] = set()
    for folder in folders:
        with contextlib.suppress(OSError):
            for entry in os.scandir(folder):
                stem, suffix = os.path.splitext(entry.name)
                if entry.is_file() and suffix == ".py":
                    names.add(stem)
                elif entry.is_dir() and os.path.isfile(os.path.join(entry.path, "__init__.py")):
                    names.add(entry.name)
    return names


def _inside(path: str, folders: Sequence[str]) -> bool:
    resolved = Path(path).resolve()
    return any(resolved.is_relative_to(Path(folder).resolve()) for folder in folders)


def _digest(path: str) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


@contextlib.contextmanager
def kernel_module(source: str, source_name: str, file: str | None = None,
                  folders: Sequence[str] = ()) -> Iterator[KernelModule]:
    """Execute kernel text as a module; yield its namespace until the variant is done
    (``file``: the path of a ``:file:`` kernel; ``folders``: first on the import path)."""
    folders = [str(f) for f in folders]
    # mtime None keeps linecache.checkcache from dropping an entry with no file behind it.
    linecache.cache[source_name] = (len(source), None, source.splitlines(True), source_name)
    name = Path(source_name).stem
    shadowed = _local_names(folders) | {name}
    hidden = {key: sys.modules.pop(key) for key in list(sys.modules)
              if key.split(".")[0] in shadowed}
    before = set(sys.modules)
    saved_path = list(sys.path)
    sys.path[:0] = folders
    importlib.invalidate_caches()  # a helper written or edited since the last variant
    module = types.ModuleType(name)
    module.__file__ = file or str(Path(folders[0] if folders else ".", source_name))
    # TileLang's usual names come free (a kernel that imports them just rebinds them).
    module.__dict__.update(tilelang=tilelang, T=T)
    # Registered (dataclasses and pickling look modules up by name), unless that would hide
    # a standard module from TileLang while the kernel lowers.
    registered = name not in sys.stdlib_module_names
    if registered:
        sys.modules[name] = module
    loaded = KernelModule(module.__dict__)
    try:
        exec(compile(source, source_name, "exec", dont_inherit=True), module.__dict__)
        yield loaded
    finally:
        if registered:
            sys.modules.pop(name, None)  # the kernel itself: its text is in the key
        for key in sorted(set(sys.modules) - before):
            found = getattr(sys.modules[key], "__file__", None)
            if found and _inside(found, folders):
                with contextlib.suppress(OSError):
                    loaded.imported.append({"path": str(Path(found).resolve()),
                                            "sha256": _digest(found)})
                del sys.modules[key]
        sys.modules.update(hidden)
        sys.path[:] = saved_path


def factory_object(module: KernelModule, task: Task) -> Any:
    """What the kernel bound to its factory's name once it ran; where it bound nothing
    (a guard such as ``if HAS_TILELANG:`` false here), a :class:`SourceError` at the
    binding's line saying what was looked for and what the module does bind."""
    if task.factory in module.namespace:
        return module.namespace[task.factory]
    tree = ast.parse(task.source)
    bound = {f.name: f for f in find_factories(tree, task.source)}
    chosen = bound.get(task.factory)
    callables = sorted(name for name, value in module.namespace.items()
                       if callable(value) and not name.startswith("__")
                       and not isinstance(value, types.ModuleType)
                       and getattr(value, "__module__", None) == module.namespace.get("__name__"))
    where = f", {chosen.guard}," if chosen and chosen.guard else ""
    raise SourceError(
        f"the kernel ran but bound no {task.factory!r}: its definition (line "
        f"{chosen.line if chosen else '?'}){where} was not executed; the module binds "
        f"{', '.join(callables) or 'no function'}", chosen.line if chosen else None)


def prim_func(obj: Any, kwargs: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """The T.prim_func a factory builds for ``kwargs``, and its pass configs, whatever
    decorators stand in front of TileLang's (see :mod:`.factory`)."""
    built = build(obj, kwargs)
    return built.func, built.pass_configs


def factory_arguments(task: Task) -> dict[str, Any]:
    """The factory's keywords: the literals of ``params`` (TileLang dtypes such as
    ``T.bfloat16`` too) and ``num_stages``, under the name its loops read it by (none
    for a kernel that fixes its depth)."""
    kwargs = {key: literal_value(value, dtype=lambda n: functools.reduce(getattr, n.split("."), T))
              for key, value in task.params}
    if task.depth_param:
        kwargs[task.depth_param] = task.num_stages
    return kwargs
