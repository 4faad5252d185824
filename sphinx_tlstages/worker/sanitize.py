"""One variant compiled and launched for ``tlstages hardware``: ``python -m
sphinx_tlstages.worker.sanitize JOB.json prepare|launch``.

``prepare`` runs beside the others, before any tool: it lowers the variant as the docs do
(the code's fingerprints, the hazard check's verdict) and compiles it, which leaves the
kernel in TileLang's cache (the command gives each job a cache folder of its own, since
the edits below are not part of TileLang's key). ``launch`` runs under compute-sanitizer:
the same compile, now a cache hit, then the kernel launched on seeded inputs and
:data:`~..core.hardware.sanitizer.LAUNCHED` printed once every launch returned.

The code is compiled as TileLang compiles it, with two changes made to its text
(:mod:`..core.hardware.code_edits`): the blocks not checked return at once, and the edits
a test asks for (a deleted wait). A variant for an older architecture than the GPU's
(``sm_80`` code on Hopper) is compiled to PTX for its own architecture
(``-arch=compute_80``), which the driver compiles for the GPU when it loads it: TileLang
itself builds a cubin of ``sm_80`` machine code only, which a Hopper GPU does not load.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import tilelang
from tilelang import tvm

from ..core.hardware import code_edits
from ..core.hardware.sanitizer import LAUNCHED
from ..core.protocol.messages import Task
from ..core.results.cuda import visible_cuda
from .inputs import make_inputs
from .kernel_module import factory_arguments, factory_object, kernel_module, prim_func

PREPARED = "TLSTAGES-PREPARED "
DEFAULT_SIZE = 256  # a size known only at launch that neither the page nor a finding sets


def built_as(arch: str, gpu_sm: str) -> str:
    """How a variant for ``arch`` is built for a GPU of ``gpu_sm``: ``cubin`` (its own
    machine code) or ``ptx`` (compiled by the driver when loaded)."""
    return "cubin" if arch == gpu_sm else "ptx"


def _as_ptx() -> None:
    """Have TileLang's CUDA compile callback produce PTX for the target's own compute
    architecture: its options as they are, ``-arch=sm_NN`` as ``-arch=compute_NN``."""
    from tilelang.contrib import nvcc

    compile_cuda = nvcc.compile_cuda

    def ptx(code: str, target_format: str = "ptx", arch: Any = None, options: Any = None,
            path_target: Any = None, verbose: bool = False) -> Any:
        arch = [a.replace("-arch=sm_", "-arch=compute_") for a in arch or []]
        return compile_cuda(code, "ptx", arch, options=options, verbose=verbose)

    nvcc.compile_cuda = ptx


def _tensors(func: Any, sizes: dict[str, int]) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """The kernel's tensor parameters with each shape a list of ints, and the sizes known
    only at launch that were given a value (``sizes``, else :data:`DEFAULT_SIZE`)."""
    used: dict[str, int] = {}
    analyzer = tvm.arith.Analyzer()
    found = []
    for param in func.params:
        buffer = func.buffer_map[param]
        shape = []
        for extent in buffer.shape:
            free = [v for v in tvm.tirx.analysis.undefined_vars(extent)] \
                if not isinstance(extent, tvm.tirx.IntImm) else []
            for var in free:
                used.setdefault(str(var.name), sizes.get(str(var.name), DEFAULT_SIZE))
            value = tvm.tirx.stmt_functor.substitute(
                extent, {v: tvm.tirx.const(used[str(v.name)], v.dtype) for v in free})
            shape.append(int(analyzer.simplify(value)))
        found.append({"name": str(buffer.name), "dtype": str(buffer.dtype), "shape": shape})
    return found, used


def compile_job(job: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """The variant compiled for this run; with what was compiled, as data."""
    task = Task.decode(job["task"])
    seen: dict[str, str] = {}

    def postproc(code: str, target: Any) -> str:
        seen["cuda"] = code
        return code_edits.apply(code, job.get("blocks"), job.get("edits", []))

    tilelang.register_cuda_postproc(postproc)
    how = built_as(str(task.target.get("arch")), job["gpu_sm"])
    if how == "ptx":
        _as_ptx()
    with kernel_module(task.source, task.source_name, task.file, task.folders) as module:
        func, pass_configs = prim_func(factory_object(module, task), factory_arguments(task))
    kernel = tilelang.compile(func, target=task.target, pass_configs=pass_configs)
    tensors, sizes = _tensors(func, dict(job.get("sizes") or {}))
    code = seen.get("cuda") or kernel.get_kernel_source()
    return kernel, {"built": how, "tensors": tensors, "sizes": sizes,
                    "clustered": code_edits.clustered(code),
                    "compiled_cuda": visible_cuda(code.splitlines())}


def prepare(job: dict[str, Any]) -> dict[str, Any]:
    """The docs' lowering of the variant (fingerprints, the static verdict), then the
    compile that leaves it in the job's cache."""
    from ..core.records.bench_data import code_fingerprint, cuda_fingerprint
    from .lowering import lower_variant

    task = Task.decode(job["task"])
    result = lower_variant(task)
    said: dict[str, Any] = {"ok": bool(result.get("ok"))}
    if not result.get("ok"):
        said["error"] = result.get("error")
        return said
    said.update(code=code_fingerprint(result), cuda=cuda_fingerprint(result),
                hazards=result.get("hazards"))
    _, compiled = compile_job(job)
    # The compile's code is the page's (TileLang's own #line numbers aside), or the record
    # says it is not.
    shown = visible_cuda(result["cuda"].splitlines())
    said["same_code"] = _without_lines(compiled.pop("compiled_cuda")) == _without_lines(shown)
    said.update(compiled)
    return said


def _without_lines(lines: list[str]) -> list[str]:
    return [line for line in lines if not line.lstrip().startswith("#line")]


def launch(job: dict[str, Any]) -> dict[str, Any]:
    """The kernel launched ``launches`` times on seeded inputs; every launch waited for."""
    import torch

    kernel, compiled = compile_job(job)
    inputs = make_inputs(compiled["tensors"], seed=0, device="cuda")
    start = time.perf_counter()
    for _ in range(int(job.get("launches", 1))):
        kernel(*inputs)
        torch.cuda.synchronize()
    return {"launches": int(job.get("launches", 1)),
            "seconds": round(time.perf_counter() - start, 2), "built": compiled["built"],
            "tensors": compiled["tensors"], "sizes": compiled["sizes"]}


def main(argv: list[str]) -> int:
    job = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    if argv[1] == "prepare":
        print(PREPARED + json.dumps(prepare(job), sort_keys=True), flush=True)
    else:
        print(LAUNCHED + json.dumps(launch(job), sort_keys=True), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
