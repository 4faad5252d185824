"""Compiling a variant for a real GPU, for ``tlstages bench`` (never for the docs).

Needs nvcc and a GPU. It lives on the worker side because it imports TileLang; the
``tlstages bench`` command calls it in its own process.
"""

from __future__ import annotations

from typing import Any

import tilelang

from ..core.protocol.messages import Task
from .kernel_module import factory_arguments, factory_object, kernel_module, prim_func


def build(task: Task) -> tuple[Any, dict[str, Any]]:
    """The variant's prim_func and the kernel's own pass configs."""
    with kernel_module(task.source, task.source_name, task.file, task.folders) as module:
        return prim_func(factory_object(module, task), factory_arguments(task))


def tensor_params(task: Task) -> list[dict[str, Any]]:
    """The kernel's tensor parameters (name, shape, dtype) in call order."""
    func, _ = build(task)
    return tensors_of(func)


def tensors_of(func: Any) -> list[dict[str, Any]]:
    found = []
    for param in func.params:
        buffer = func.buffer_map[param]
        found.append({"name": str(buffer.name), "dtype": str(buffer.dtype),
                      "shape": [int(extent) for extent in buffer.shape]})
    return found


def compile_variant(task: Task,
                    target: dict[str, str]) -> tuple[Any, list[dict[str, Any]]]:
    """Compile one variant for a real GPU; returns the kernel and its tensor parameters.
    Needs nvcc and a GPU; the docs never call this."""
    func, pass_configs = build(task)
    kernel = tilelang.compile(func, target=target, pass_configs=pass_configs)
    return kernel, tensors_of(func)
