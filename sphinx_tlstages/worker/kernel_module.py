"""Turning kernel text into the factory that builds the kernel, inside a worker.

TileLang's builder reads the kernel back through ``inspect``/``linecache``, so the text
is registered there under the name it compiles as.
"""

from __future__ import annotations

import linecache
from typing import Any

import tilelang
import tilelang.language as T
from tilelang import tvm

from ..core.errors import SourceError


def load(source: str, source_name: str) -> dict[str, Any]:
    """Execute kernel text as a module; return its namespace."""
    # TileLang's builder reads the kernel back through inspect/linecache; mtime None
    # keeps linecache.checkcache from dropping an entry that has no file behind it.
    linecache.cache[source_name] = (len(source), None, source.splitlines(True), source_name)
    namespace: dict[str, Any] = {"__name__": "tlstages_kernel", "tilelang": tilelang, "T": T}
    exec(compile(source, source_name, "exec"), namespace)
    return namespace




def prim_func(obj: Any, kwargs: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """The T.prim_func a factory builds for ``kwargs``, and its pass configs."""
    # @autotune wraps the @tilelang.jit object as .jit_impl; @tilelang.jit has get_tir.
    jit = getattr(obj, "jit_impl", obj)
    if hasattr(jit, "get_tir"):
        return jit.get_tir(**kwargs), dict(getattr(jit, "pass_configs", None) or {})
    result = obj(**kwargs)
    if hasattr(result, "get_tir"):
        return result.get_tir(), dict(getattr(result, "pass_configs", None) or {})
    if not isinstance(result, tvm.tirx.PrimFunc):
        raise SourceError(f"the factory returned {type(result).__name__}, not a T.prim_func")
    return result, {}
