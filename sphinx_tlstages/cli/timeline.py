"""``tlstages timeline SRCDIR``: record, on this machine's GPU, the measured timeline of
each variant a directive's ``:timeline:`` asks for, and write one JSON file for this GPU.

Per variant: the docs' own lowering (the code the page lists, for the page's target), a
plain build and a build with probes of that code for this GPU's arch
(:mod:`..worker.timeline`), a check that both write the same output, the two timed
against each other, then one launch of the probed build read back. torch and TileLang
are imported only when it runs; the helpers are testable on a CPU.
"""

from __future__ import annotations

import datetime
import json
import math
import re
import sys
import traceback
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..core.figures.model import schedule_figures
from ..core.files import write_atomic
from ..core.plan.spec import DirectiveSpec, VariantSpec
from ..core.plan.targets import Target
from ..core.records.bench_data import gpu_slug
from ..core.records.timeline_data import (
    TIMELINE_SCHEMA,
    cost,
    make_entry,
    order_problems,
    plan_of,
    recorded,
    validate,
)
from ..core.results.cuda import visible_cuda
from ..core.results.probes import WarpRecord, decode, instrument
from ..ext.project import conf_values, read_directives
from ..worker.inputs import make_inputs
from .bench import gpu_info, percentiles

METHOD = ("the code the page lists, compiled for this GPU's arch twice, as is and with a "
          "probe at each wait, commit, barrier and tensor-core call of its pipelined loops "
          "(lane 0 of each warp of the first {blocks} blocks writes clock64(), the site and "
          "the loop iteration to a global buffer); the two builds timed alternately with "
          "CUDA events, the L2 cache flushed before each launch, {warmup} warm-up launches "
          "each, then the median and the 20th-80th percentile of {reps}; the timeline is "
          "one further launch of the probed build, the L2 flushed before it")
DEFAULT_DIR = "_tlstages/timeline"
WORD = (1 << 64) - 1


def runs_on(target: Target, gpu_sm: str) -> bool:
    """Whether code lowered for ``target`` runs on a GPU of ``gpu_sm`` (``sm_90a``):
    older NVIDIA arches run on newer GPUs; an arch-specific one (``sm_90a``) only on
    its own."""
    page = re.fullmatch(r"sm_(\d+)([af]?)", str(target.arch or ""))
    here = re.fullmatch(r"sm_(\d+)[af]?", gpu_sm)
    if target.kind != "cuda" or page is None or here is None:
        return False
    if page.group(2):
        return page.group(1) == here.group(1)
    return int(page.group(1)) <= int(here.group(1))


def relative(records: Sequence[WarpRecord]) -> list[dict[str, Any]]:
    """Each warp's events with cycles counted from its block's first probe (warps of a
    block share one SM's clock; blocks on other SMs do not)."""
    first: dict[int, int] = {}
    for record in records:
        if record.events:
            start = min(cycle for _, _, cycle in record.events)
            first[record.block] = min(first.get(record.block, start), start)
    return [{"block": r.block, "warp": r.warp, "ns": r.nanoseconds, "lost": r.lost,
             "events": [[site, iteration, cycle - first[r.block]]
                        for site, iteration, cycle in r.events]}
            for r in records if r.events]


def time_alternately(first: Callable[[], object], second: Callable[[], object],
                     warmup: int, reps: int) -> tuple[dict[str, float], dict[str, float]]:
    """Both launches timed as :func:`.bench.time_launches` times one, taking turns, so
    that the GPU's clocks and temperature treat them alike."""
    import torch

    flush = torch.empty(256 << 20, dtype=torch.int8, device="cuda")
    for _ in range(warmup):
        first()
        second()
    torch.cuda.synchronize()
    events = [[(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
               for _ in range(reps)] for _ in range(2)]
    for n in range(reps):
        for side, launch in enumerate((first, second)):
            start, end = events[side][n]
            flush.zero_()
            start.record()
            launch()
            end.record()
    torch.cuda.synchronize()
    a, b = ([s.elapsed_time(e) for s, e in side] for side in events)
    return percentiles(a), percentiles(b)


def record_variant(variant: VariantSpec, gpu: dict[str, str], blocks: int, capacity: int,
                   warmup: int, reps: int, log: Callable[[str], None]) -> dict[str, Any]:
    """One variant's recording (:func:`..core.records.timeline_data.make_entry`)."""
    import torch

    from ..worker import gpu as compiler
    from ..worker import lowering
    from ..worker import timeline as probing

    # The code only: no registers (the resources part's compile), no pass records.
    task = replace(variant, toolkit=None, ir_passes=(), record_passes=False,
                   fingerprints=False).task()
    lowered = lowering.lower_variant(task)
    if not lowered.get("ok"):
        raise RuntimeError(f"it does not lower: {lowered.get('message')}")
    warps = max(1, math.ceil(int(lowered.get("threads") or 32) / 32))
    buffer = torch.zeros(blocks * warps * capacity * 2, dtype=torch.int64, device="cuda")
    address = int(buffer.data_ptr())
    plain = probing.compile_kernel(task, gpu["sm"])
    probed = probing.compile_kernel(
        task, gpu["sm"], lambda code: instrument(code, address, blocks, warps, capacity))
    assert probed.probed is not None
    same_code = visible_cuda(plain.cuda.splitlines()) == \
        visible_cuda(str(lowered["cuda"]).splitlines())
    inputs = make_inputs(compiler.tensor_params(task), seed=0, device="cuda")
    outputs = []
    for built in (plain, probed):
        tensors = [x.clone() for x in inputs]
        built.kernel(*tensors)
        outputs.append(tensors)
    torch.cuda.synchronize()
    same_output = all(torch.equal(a, b) for a, b in zip(*outputs, strict=True))
    timed = time_alternately(lambda: plain.kernel(*inputs), lambda: probed.kernel(*inputs),
                             warmup, reps)
    flush = torch.empty(256 << 20, dtype=torch.int8, device="cuda")
    buffer.zero_()
    flush.zero_()
    probed.kernel(*inputs)
    torch.cuda.synchronize()
    words = [word & WORD for word in buffer.cpu().tolist()]
    figures, _ = schedule_figures(lowered)
    entry = make_entry(variant, lowered, compiled_for=gpu["sm"], same_code=same_code,
                       same_output=same_output, plain=timed[0], probed=timed[1],
                       sites=[site.as_json() for site in probed.probed.sites],
                       warps=relative(decode(words, blocks, warps, capacity)),
                       plan=plan_of(figures))
    events = sum(len(w["events"]) for w in entry["warps"])
    log(f"{timed[0]['median_ms']:.4f} ms, probed "
        f"{timed[1]['median_ms']:.4f} ms ({100 * cost(entry):+.1f} %), "
        f"{len(entry['sites'])} probe sites, {events} events from {len(entry['warps'])} "
        "warps" + ("" if same_code else "; the code probed is not the page's")
        + ("" if same_output else "; OUTPUT DIFFERS"))
    for problem in order_problems(entry):
        log(f"  {problem}")
    return entry


def dumps(data: dict[str, Any]) -> str:
    """The file's text: indented, but each warp's events on one line (thousands of
    them, one per line, would bury the rest in a diff)."""
    lines: dict[str, str] = {}

    def placeholder(value: list[Any]) -> str:
        key = f"@events{len(lines)}@"
        lines[key] = json.dumps(value, separators=(",", ":"))
        return key

    copy = json.loads(json.dumps(data))
    for entry in copy["directives"].values():
        for recording in entry["variants"].values():
            for warp in recording["warps"]:
                warp["events"] = placeholder(warp["events"])
    text = json.dumps(copy, indent=1, sort_keys=True)
    return re.sub(r'"(@events\d+@)"', lambda m: lines[m.group(1)], text) + "\n"


def run(srcdir: Path, names: Sequence[str], blocks: int, capacity: int, warmup: int,
        reps: int, out: Path | None, command: str) -> Path:
    """Record every variant that ``:timeline:`` asks for (of the directives named)."""
    directives = read_directives(srcdir)
    unknown = set(names) - {s.name for s in directives}
    if unknown:
        raise SystemExit(f"no tl-pipeline directive named {', '.join(sorted(unknown))}")
    specs = [s for s in directives if recorded(s) and (not names or s.name in names)]
    folder = out or srcdir / str(conf_values(srcdir).get("tlstages_timeline_dir", DEFAULT_DIR))
    return record_all(specs, blocks, capacity, warmup, reps, folder, command)


def record_all(specs: Sequence[DirectiveSpec], blocks: int, capacity: int, warmup: int,
               reps: int, folder: Path, command: str) -> Path:
    """Record the directives' chosen variants and write this GPU's file into ``folder``."""
    gpu = gpu_info()
    data: dict[str, Any] = {
        "schema": TIMELINE_SCHEMA, "gpu": gpu, "command": command,
        "date": datetime.date.today().isoformat(),
        "method": METHOD.format(blocks=blocks, warmup=warmup, reps=reps), "directives": {},
    }
    failed = 0
    for spec in specs:
        variants: dict[str, Any] = {}
        for variant in recorded(spec):
            name = f"{spec.name} {variant.heading}"
            if not runs_on(variant.target, gpu["sm"]):
                print(f"{name}: skipped, {variant.target.label} code does not run on "
                      f"{gpu['sm']}", flush=True)
                continue
            def log(line: str, name: str = name) -> None:
                print(f"{name}: {line}", flush=True)

            try:
                variants[variant.id] = record_variant(variant, gpu, blocks, capacity,
                                                      warmup, reps, log)
            except Exception:
                failed += 1
                print(f"{name}: FAILED\n{traceback.format_exc()}", file=sys.stderr, flush=True)
        if variants:
            data["directives"][spec.name] = {"variants": variants}
    path = folder / f"{gpu_slug(gpu['name'])}.json"
    write_atomic(path, dumps(validate(data, path.name)))
    print(f"wrote {path}" + (f"; {failed} variant(s) failed" if failed else ""),
          file=sys.stderr)
    return path
