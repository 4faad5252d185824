"""``tlstages bench SRCDIR``: time a book's kernels on the GPU of this machine.

Finds the directives as the docs build does (Sphinx's reader, nothing lowered), compiles
each variant for this GPU's own arch (a directive's ``:target:`` is for the docs: sm_80
binaries do not load on Hopper), checks it against ``:reference:`` before any timing is
trusted, times it and the reference, and writes one JSON file for this GPU. torch and
TileLang are imported only when it runs; the helpers are testable on a CPU.
"""

from __future__ import annotations

import ast
import dataclasses
import datetime
import functools
import importlib.metadata
import json
import statistics
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..core.files import write_atomic
from ..core.plan.options import literal_value
from ..core.plan.spec import DirectiveSpec, VariantSpec
from ..core.records.bench_data import (
    BENCH_SCHEMA,
    benched,
    code_fingerprint,
    cuda_fingerprint,
    fingerprint,
    gpu_slug,
    validate,
)
from ..ext.project import conf_values, read_directives
from ..worker.inputs import make_inputs

METHOD = ("CUDA events around each launch; the L2 cache flushed (a 256 MiB write) before "
          "each; {warmup} warm-up launches, then the median and the 20th-80th percentile of "
          "{reps} timed launches; outputs checked against the reference first")
# Largest error allowed against the reference, relative to the reference's largest value.
TOLERANCES = {"float16": 1e-2, "bfloat16": 2e-2, "float32": 1e-4, "float64": 1e-8}
DEFAULT_TOLERANCE = 5e-2


def evaluate(expression: str, names: dict[str, Any]) -> Any:
    """An author's expression (``2*M*N*K``, ``A @ B.T``) over ``names``, no builtins."""
    return eval(compile(expression, "<expression>", "eval"), {"__builtins__": {}}, names)


def output_names(tensors: Sequence[dict[str, Any]], reference: str) -> list[str]:
    """The tensors the kernel writes: those the reference expression does not read."""
    read = {n.id for n in ast.walk(ast.parse(reference, mode="eval")) if isinstance(n, ast.Name)}
    return [t["name"] for t in tensors if t["name"] not in read] or [tensors[-1]["name"]]


def relative_error(output: Any, expected: Any) -> float:
    diff = (output.double() - expected.double()).abs().max().item()
    scale = expected.double().abs().max().item() or 1.0
    return float(diff / scale)


def percentiles(samples_ms: Sequence[float]) -> dict[str, float]:
    ordered = sorted(samples_ms)
    q = statistics.quantiles(ordered, n=10, method="inclusive")
    return {"median_ms": round(statistics.median(ordered), 5), "p20_ms": round(q[1], 5),
            "p80_ms": round(q[7], 5)}


def time_launches(launch: Callable[[], object], warmup: int, reps: int) -> dict[str, float]:
    """Time ``launch`` on the current CUDA device: see :data:`METHOD`."""
    import torch

    flush = torch.empty(256 << 20, dtype=torch.int8, device="cuda")
    for _ in range(warmup):
        launch()
    torch.cuda.synchronize()
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
              for _ in range(reps)]
    for start, end in events:
        flush.zero_()
        start.record()
        launch()
        end.record()
    torch.cuda.synchronize()
    return percentiles([start.elapsed_time(end) for start, end in events])


def gpu_info() -> dict[str, str]:
    import torch

    major, minor = torch.cuda.get_device_capability()
    try:
        query = ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"]
        driver = subprocess.run(query, capture_output=True, text=True,
                                check=True).stdout.split()[0]
    except (OSError, subprocess.CalledProcessError, IndexError):
        driver = "unknown"
    return {
        "name": torch.cuda.get_device_name(),
        "sm": f"sm_{major}{minor}{'a' if major >= 9 else ''}",
        "driver": driver,
        "cuda": str(torch.version.cuda),
        "torch": torch.__version__.split("+")[0],
        "tilelang": importlib.metadata.version("tilelang"),
    }


def _flops(spec: DirectiveSpec, variant: VariantSpec) -> float | None:
    if not spec.flops:
        return None
    params = {k: literal_value(v) for k, v in variant.params}
    return float(evaluate(spec.flops, {**params, "num_stages": variant.num_stages}))


def bench_directive(spec: DirectiveSpec, gpu: dict[str, str], warmup: int, reps: int,
                    log: Callable[[str], None]) -> dict[str, Any]:
    """Numbers for one directive's variants on this GPU (and its reference, if any)."""
    from ..worker import gpu as compiler
    from ..worker import lowering

    target = {"kind": "cuda", "arch": gpu["sm"]}
    entry: dict[str, Any] = {"variants": {}}
    inputs: list[Any] = []
    tensors: list[dict[str, Any]] = []
    for variant in benched(spec):
        kernel, tensors = compiler.compile_variant(variant.task(), target)
        inputs = make_inputs(tensors, seed=0, device="cuda")
        # The code that runs, as the docs lower it for this arch: a TileLang upgrade that
        # changes none of it keeps these numbers attached.
        lowered = lowering.lower_variant(dataclasses.replace(variant.task(), target=target))
        numbers: dict[str, Any] = {"fingerprint": fingerprint(variant),
                                   "code": code_fingerprint(lowered),
                                   "cuda": cuda_fingerprint(lowered)}
        if spec.reference:
            kernel(*inputs)
            by_name = {t["name"]: x for t, x in zip(tensors, inputs, strict=True)}
            expected = evaluate(spec.reference, by_name)
            produced = by_name[output_names(tensors, spec.reference)[0]]
            error = relative_error(produced, expected)
            tolerance = spec.tolerance or TOLERANCES.get(tensors[-1]["dtype"], DEFAULT_TOLERANCE)
            numbers.update({"correct": error <= tolerance, "error": round(error, 8),
                            "tolerance": tolerance})
        numbers.update(time_launches(functools.partial(kernel, *inputs), warmup, reps))
        flops = _flops(spec, variant)
        if flops:
            numbers["tflops"] = round(flops / (numbers["median_ms"] * 1e-3) / 1e12, 2)
        entry["variants"][variant.id] = numbers
        log(f"{spec.name} {variant.heading}: {numbers['median_ms']:.4f} ms"
            + (f", {numbers['tflops']} TFLOP/s" if "tflops" in numbers else "")
            + ("" if numbers.get("correct", True) else ", WRONG RESULT"))
    if spec.reference and inputs:
        by_name = {t["name"]: x for t, x in zip(tensors, inputs, strict=True)}
        reference = time_launches(lambda: evaluate(spec.reference or "", by_name), warmup, reps)
        flops = _flops(spec, spec.variants[0])
        if flops:
            reference["tflops"] = round(flops / (reference["median_ms"] * 1e-3) / 1e12, 2)
        entry["reference"] = {"expression": spec.reference, **reference}
        log(f"{spec.name} reference {spec.reference}: {reference['median_ms']:.4f} ms")
    return entry


def run(srcdir: Path, names: Sequence[str], warmup: int, reps: int, out: Path | None,
        command: str) -> Path:
    """Bench the chosen directives (all with :flops: or :reference: when none are named)."""
    directives = read_directives(srcdir)
    unknown = set(names) - {s.name for s in directives}
    if unknown:
        raise SystemExit(f"no tl-pipeline directive named {', '.join(sorted(unknown))}")
    specs = [s for s in directives if (s.name in names if names else s.flops or s.reference)]
    gpu = gpu_info()
    data: dict[str, Any] = {
        "schema": BENCH_SCHEMA, "gpu": gpu, "command": command,
        "date": datetime.date.today().isoformat(),
        "method": METHOD.format(warmup=warmup, reps=reps), "directives": {},
    }
    for spec in specs:
        data["directives"][spec.name] = bench_directive(spec, gpu, warmup, reps,
                                                        lambda line: print(line, flush=True))
    folder = out or srcdir / str(conf_values(srcdir).get("tlstages_bench_dir", "_tlstages/bench"))
    path = folder / f"{gpu_slug(gpu['name'])}.json"
    write_atomic(path, json.dumps(validate(data, path.name), indent=1, sort_keys=True) + "\n")
    print(f"wrote {path}", file=sys.stderr)
    return path
