"""Compiling a variant twice for this machine's GPU, as is and with timing probes, for
``tlstages timeline`` (never for the docs).

Both builds go through TileLang's own JIT (``tilelang.compile``), so the launch is the
one TileLang's host code makes: grid, block, dynamic shared memory and, on Hopper, the
TMA descriptors. Two of TileLang's callbacks are taken over while it compiles: the one
that post-processes the generated CUDA (where the probes go in, as text, into exactly
the code the page lists: the same pass configs, ``#line`` directives included) and the
one that runs nvcc (the same call, for this GPU's arch: code lowered for ``sm_80`` is
compiled for ``sm_90a`` on a Hopper GPU, where cp.async and mma.sync are valid but an
sm_80 binary does not load). TileLang's kernel cache is off for the process: a cached
kernel would skip both callbacks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import tilelang
import tvm_ffi
from tilelang import tvm

from ..core.protocol.messages import Task
from ..core.results import cuda as cuda_text
from ..core.results.probes import Probed
from .gpu import build

_POSTPROC = "tilelang_callback_cuda_postproc"
_COMPILE = "tilelang_callback_cuda_compile"


@dataclass
class Built:
    """One compiled kernel and the CUDA TileLang generated for it (before any probe)."""

    kernel: Any
    cuda: str
    probed: Probed | None = None


@contextmanager
def _callbacks(arch: str, rewrite: Callable[[str], Probed] | None,
               seen: dict[str, Any]) -> Iterator[None]:
    from tilelang.cuda.backend import tilelang_callback_cuda_compile as compile_cuda

    def postproc(code: str, target: Any) -> str:
        seen["cuda"] = str(code)
        if rewrite is None:
            return str(code)
        probed = rewrite(str(code))
        seen["probed"] = probed
        return probed.code

    def compile_for_gpu(code: str, target: Any, pass_config: Any = None) -> Any:
        return compile_cuda(code, tvm.target.Target({"kind": "cuda", "arch": arch}),
                            pass_config)

    previous = tvm_ffi.get_global_func(_POSTPROC, allow_missing=True)
    tvm_ffi.register_global_func(_POSTPROC, f=postproc, override=True)
    tvm_ffi.register_global_func(_COMPILE, f=compile_for_gpu, override=True)
    try:
        yield
    finally:
        tvm_ffi.register_global_func(_COMPILE, f=compile_cuda, override=True)
        if previous is not None:
            tvm_ffi.register_global_func(_POSTPROC, f=previous, override=True)
        else:
            tvm_ffi.remove_global_func(_POSTPROC)


def _no_cache() -> None:
    from tilelang import env

    disable = getattr(tilelang, "disable_cache", None) or getattr(env, "disable_cache", None)
    if disable is None:
        raise RuntimeError("this TileLang offers no way to turn its kernel cache off")
    disable()


def compile_kernel(task: Task, arch: str,
                   rewrite: Callable[[str], Probed] | None = None) -> Built:
    """The variant compiled for ``arch`` (this GPU's) from the code lowered for its own
    target, with ``rewrite`` applied to the generated CUDA before nvcc sees it."""
    from tilelang.transform import PassConfigKey

    _no_cache()
    func, pass_configs = build(task)
    config: dict[str, Any] = {}
    line_key = getattr(PassConfigKey, "TL_EMIT_LINE_DIRECTIVES", None)
    if line_key is not None:  # as the page's lowering: its listing is this code
        config[line_key] = True
    config.update(pass_configs)
    seen: dict[str, Any] = {}
    with _callbacks(arch, rewrite, seen):
        kernel = tilelang.compile(func, target=task.target, execution_backend="tvm_ffi",
                                  pass_configs=config)
    if "cuda" not in seen:
        raise RuntimeError("TileLang compiled the kernel without generating CUDA here "
                           "(a cached kernel?): nothing was probed")
    return Built(kernel, cuda_text.normalise(seen["cuda"], task.source_name),
                 seen.get("probed"))

