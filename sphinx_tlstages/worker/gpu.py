"""Compiling a variant for a real GPU, for ``tlstages bench`` (never for the docs).

Needs nvcc and a GPU. It lives on the worker side because it imports TileLang; the
``tlstages bench`` command calls it in its own process.
"""

from __future__ import annotations

from typing import Any

import tilelang

from .kernel_module import factory_arguments, kernel_module, prim_func


def _build(payload: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    with kernel_module(str(payload["source"]), str(payload["source_name"]),
                       payload.get("origin")) as module:
        return prim_func(module.namespace[str(payload["factory"])], factory_arguments(payload))


def tensor_params(payload: dict[str, Any]) -> list[dict[str, Any]]:
    """The kernel's tensor parameters (name, shape, dtype) in call order."""
    func, _ = _build(payload)
    return _tensors(func)


def _tensors(func: Any) -> list[dict[str, Any]]:
    found = []
    for param in func.params:
        buffer = func.buffer_map[param]
        found.append({"name": str(buffer.name), "dtype": str(buffer.dtype),
                      "shape": [int(extent) for extent in buffer.shape]})
    return found


def compile_variant(payload: dict[str, Any],
                    target: dict[str, str]) -> tuple[Any, list[dict[str, Any]]]:
    """Compile one variant for a real GPU; returns the kernel and its tensor parameters.
    Needs nvcc and a GPU; the docs never call this."""
    func, pass_configs = _build(payload)
    kernel = tilelang.compile(func, target=target, pass_configs=pass_configs)
    return kernel, _tensors(func)
