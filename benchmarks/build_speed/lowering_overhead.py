#!/usr/bin/env python3
"""What the extension adds to TileLang's own lowering of one variant, on one CPU.

In one process pinned to one CPU, with TileLang imported once, each variant of the seed
GEMM (num_stages 1-4, sm_80) is lowered four ways, in rotating order, ``--rounds``
times:

* TileLang alone: the kernel text executed, its factory called, and ``tilelang.lower``
  with ``enable_device_compile=False`` in the ``PassContext`` TileLang's own
  ``compile_kernel_source`` opens (``#line`` directives on);
* the extension, as ``tlstages lower`` runs it and for a directive with the default
  parts checked against its snapshot: ``lower_variant`` as a worker runs it (the kernel
  loaded as its own module, the pass instrument, the facts, the hazard check, the
  schedule the figures draw, the normalised CUDA): the figure ``ratio``;
* the same for a directive whose snapshot is being recorded: the IR's structural hash
  taken after every pass run (the pass fingerprints the snapshot keeps);
* the extension, for a directive that shows the "passes" part (as the chapter's, with
  its ``:passes:``): the same, and the IR printed after every pass run that changed it.

All run in a process set up as a worker is (TileLang imported, then ``gc.freeze()``).
Times are the process's CPU seconds (``time.process_time``), medians per variant; a
ratio is the sum of the extension's medians over the sum of TileLang's. The hazard check's
share is timed inside the extension's own runs (the worker's call to it wrapped in a
clock): the sum of its medians over the sum of the extension's. ``benchmarks/hazard_check_cost``
times it on ``sm_90a`` too.

    python benchmarks/build_speed/lowering_overhead.py [--rounds 5] [--cpu N] [--json FILE]

``--alone M ...`` instead times TileLang alone lowering the four variants with each
given ``M`` one after another (wall seconds, TileLang imported beforehand): the
denominator of the live-editing ratio of ``build_speed.py``.
"""

from __future__ import annotations

import argparse
import json
import linecache
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sphinx_tlstages.core.protocol.messages import Task

ROOT = Path(__file__).resolve().parents[2]
GEMM = (ROOT / "book" / "kernels" / "gemm.py").read_text(encoding="utf-8")
PARAMS = {"M": 1024, "N": 1024, "K": 1024, "block_M": 128, "block_N": 128, "block_K": 64,
          "threads": 128}
TARGET = {"kind": "cuda", "arch": "sm_80"}
PASSES = ["PipelinePlanning", "InjectSoftwarePipeline"]  # as the chapter's directive
STAGES = (1, 2, 3, 4)


def payload(num_stages: int, passes: bool = False, fingerprints: bool = False) -> Task:
    """The worker's task for one variant, as ``tlstages lower`` or a directive checked
    against its snapshot sends it: with the default parts, or showing the "passes" part
    with the chapter's ``:passes:``; ``fingerprints``: as a directive whose snapshot is
    being recorded sends it (the pass fingerprints taken)."""
    return Task(GEMM, "kernel.py", "matmul", tuple((k, repr(v)) for k, v in PARAMS.items()),
                num_stages, TARGET, ir_passes=tuple(PASSES) if passes else (),
                record_passes=passes, fingerprints=fingerprints)


def tilelang_alone(num_stages: int, **params: int) -> str:
    """The same lowering with nothing of the extension: what the kernel's author runs."""
    import tilelang
    import tilelang.language as T
    from tilelang import tvm
    from tilelang.transform import PassConfigKey

    name = "kernel_alone.py"
    linecache.cache[name] = (len(GEMM), None, GEMM.splitlines(True), name)
    namespace: dict[str, Any] = {"tilelang": tilelang, "T": T, "__name__": "kernel_alone"}
    exec(compile(GEMM, name, "exec", dont_inherit=True), namespace)
    func = namespace["matmul"].get_tir(**{**PARAMS, **params}, num_stages=num_stages)
    config = {PassConfigKey.TL_EMIT_LINE_DIRECTIVES: True}
    target = tvm.target.Target(TARGET)
    with tilelang.transform.PassContext(opt_level=3, config=config), target:
        artifact = tilelang.lower(func, target=target, enable_device_compile=False)
    return str(artifact.kernel_source)


def alone_seconds(values: list[int], out: Path | None) -> None:
    """Wall seconds of TileLang alone lowering num_stages 1-4 with each ``M``, serially."""
    import tilelang  # noqa: F401 - imported before the clock starts, as kept workers have

    tilelang_alone(2, M=512)  # and warmed up, as a worker that lowered before is
    seconds = []
    for m in values:
        began = time.perf_counter()
        for stages in STAGES:
            tilelang_alone(stages, M=m)
        seconds.append(round(time.perf_counter() - began, 3))
    text = json.dumps({"M": values, "alone_seconds": seconds}, sort_keys=True)
    if out:
        out.write_text(text + "\n")
    print(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--cpu", type=int, help="the CPU to run on (default: the last usable)")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--alone", type=int, nargs="+", metavar="M")
    args = parser.parse_args()
    if args.alone:
        alone_seconds(args.alone, args.json)
        return
    cpus = sorted(os.sched_getaffinity(0))
    cpu = args.cpu if args.cpu is not None else cpus[-1]
    os.sched_setaffinity(0, {cpu})
    sys.path.insert(0, str(ROOT))
    started = time.process_time()
    from sphinx_tlstages.worker.tasks import import_tilelang

    import_tilelang()  # as a worker starts: TileLang imported, what it made frozen
    import_seconds = time.process_time() - started
    from sphinx_tlstages.core.results.passes import recorded
    from sphinx_tlstages.worker.hazards import verdict as hazard_check
    from sphinx_tlstages.worker.lowering import lower_variant

    checking: list[float] = []  # the last extension run's hazard check, CPU seconds
    check = hazard_check.check  # what lower_variant calls: the verdict and unneeded_sync

    def timed_check(*args: Any, **kwargs: Any) -> Any:
        began = time.process_time()
        try:
            return check(*args, **kwargs)
        finally:
            checking.append(time.process_time() - began)

    hazard_check.check = timed_check
    check_times: dict[int, list[float]] = {s: [] for s in STAGES}

    def extension(num_stages: int, passes: bool = False, fingerprints: bool = False) -> str:
        checking.clear()
        result = lower_variant(payload(num_stages, passes, fingerprints))
        assert result["ok"], result
        assert ("pass_fingerprints" in result) == (passes or fingerprints)
        if not passes and not fingerprints:
            check_times[num_stages].append(sum(checking))
        assert recorded(result["passes"]) == passes, "pass changes recorded or not"
        return str(result["cuda"])

    kinds: dict[str, Callable[[int], str]] = {
        "tilelang": tilelang_alone, "extension": extension,
        "extension_passes": lambda stages: extension(stages, passes=True),
        "extension_recording": lambda stages: extension(stages, fingerprints=True)}
    for stages in STAGES:  # warm every path up: first calls pay lazy imports
        for run in kinds.values():
            run(stages)
    for per in check_times.values():
        per.clear()
    times: dict[str, dict[int, list[float]]] = {k: {s: [] for s in STAGES} for k in kinds}
    for round_ in range(args.rounds):
        for stages in STAGES:
            shift = (round_ + stages) % len(kinds)  # each kind first as often as the others
            order = list(kinds)[shift:] + list(kinds)[:shift]
            for kind in order:
                began = time.process_time()
                kinds[kind](stages)
                times[kind][stages].append(time.process_time() - began)
    medians = {k: {s: statistics.median(v) for s, v in per.items()} for k, per in times.items()}
    total = {kind: sum(per.values()) for kind, per in medians.items()}
    alone = total["tilelang"]
    check_total = sum(statistics.median(v) for v in check_times.values())
    report = {
        "cpu": cpu, "rounds": args.rounds, "import_cpu_seconds": round(import_seconds, 3),
        "per_variant": {str(s): {kind: round(medians[kind][s], 3) for kind in kinds}
                        for s in STAGES},
        "tilelang_seconds": round(alone, 3), "extension_seconds": round(total["extension"], 3),
        "extension_passes_seconds": round(total["extension_passes"], 3),
        "ratio": round(total["extension"] / alone, 3),
        "ratio_with_passes": round(total["extension_passes"] / alone, 3),
        # A directive whose snapshot is being written takes the pass fingerprints.
        "ratio_recording_snapshot": round(total["extension_recording"] / alone, 3),
        "hazard_check_seconds": round(check_total, 3),
        "hazard_check_share": round(check_total / total["extension"], 4),
        # Each round's ratio: their spread is the figure's noise (benchmarks/speed_ratios).
        "round_ratios": [round(sum(times["extension"][s][r] for s in STAGES)
                               / sum(times["tilelang"][s][r] for s in STAGES), 4)
                         for r in range(args.rounds)],
    }
    for stages in STAGES:
        print(f"num_stages={stages}: TileLang {medians['tilelang'][stages]:.3f} s, "
              f"with the extension {medians['extension'][stages]:.3f} s, showing passes "
              f"{medians['extension_passes'][stages]:.3f} s", file=sys.stderr)
    print(f"per-variant overhead on one CPU: {total['extension']:.2f} s / {alone:.2f} s = "
          f"{report['ratio']:.3f}x TileLang alone; showing the passes part "
          f"{report['ratio_with_passes']:.3f}x; recording a snapshot (the pass "
          f"fingerprints taken) {report['ratio_recording_snapshot']:.3f}x", file=sys.stderr)
    print(f"the hazard check within it: {check_total:.3f} s = "
          f"{100 * report['hazard_check_share']:.1f} % of the extension's lowering",
          file=sys.stderr)
    if args.json:
        args.json.write_text(json.dumps(report, indent=1, sort_keys=True) + "\n")
    else:
        print(json.dumps(report, sort_keys=True))


if __name__ == "__main__":
    main()
