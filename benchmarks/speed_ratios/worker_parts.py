#!/usr/bin/env python3
"""Where a worker's CPU goes, part by part, when it lowers the seed GEMM at 1-4 stages.

In one process pinned to one CPU, set up as a worker is (TileLang imported, then
``gc.freeze()``), each variant is lowered by ``lower_variant`` once to warm up and then
``--rounds`` times, with the parts below each wrapped in a clock (``time.process_time``).
It prints the CPU milliseconds of each part per round of the four variants, for a
directive with the default parts (as ``tlstages lower`` lowers it, and a page checked
against its snapshot), for the same recording its snapshot (the pass fingerprints taken)
and for one that shows the passes part (the chapter's ``:passes:``): TileLang's
lowering itself (the recorder's hooks inside it), and what the extension adds around and
inside it. The sum of the parts is less than the total: what is not wrapped (loading the
kernel's module, assembling the result) is the rest.

    python benchmarks/speed_ratios/worker_parts.py [--rounds 3] [--cpu N]
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks" / "build_speed"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cpu", type=int, help="the CPU to run on (default: the last usable)")
    args = parser.parse_args()
    cpus = sorted(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {args.cpu if args.cpu is not None else cpus[-1]})
    from sphinx_tlstages.worker.tasks import import_tilelang

    import_tilelang()
    import lowering_overhead as bench

    from sphinx_tlstages.core.results import cuda, facts, passes
    from sphinx_tlstages.worker import lowering

    spent: dict[str, float] = collections.defaultdict(float)

    def clock(owner: Any, name: str, label: str) -> None:
        inner: Callable[..., Any] = getattr(owner, name)

        def timed(*a: Any, **k: Any) -> Any:
            began = time.process_time()
            try:
                return inner(*a, **k)
            finally:
                spent[label] += time.process_time() - began

        setattr(owner, name, timed)

    for owner, name, label in (
            (lowering, "_lower", "TileLang's lowering (the recorder's hooks inside it)"),
            (lowering, "_hash", "  structural hash per pass run (fingerprints, pass log)"),
            (lowering, "_script", "  IR printed after each changed run (passes part)"),
            (passes, "_digest", "  pass log: digests of the changed lines"),
            (passes, "_changed_lines", "  pass log: changed lines"),
            (lowering, "prim_func", "the factory called (the kernel's prim_func)"),
            (lowering.ir_facts, "read", "IR facts"),
            (lowering, "_schedule", "the schedule the figures draw"),
            # What lower_variant calls: the verdict and the unneeded-sync search.
            (lowering.hazard_check, "check", "the hazard check"),
            (cuda, "sync_counts", "sync counts off the CUDA"),
            (facts, "success", "the result assembled (sync counts included)"),
            (lowering, "template_digest", "template headers' digest")):
        clock(owner, name, label)
    for title, shows_passes, fingerprints in (
            ("default parts (tlstages lower, a page checked against its snapshot)", False,
             False),
            ("default parts, recording the snapshot (the pass fingerprints)", False, True),
            ("showing the passes part", True, True)):
        for stages in bench.STAGES:
            lowering.lower_variant(bench.payload(stages, shows_passes, fingerprints))
        spent.clear()
        began = time.process_time()
        for _ in range(args.rounds):
            for stages in bench.STAGES:
                lowering.lower_variant(bench.payload(stages, shows_passes, fingerprints))
        total = (time.process_time() - began) / args.rounds * 1000
        print(f"\n{title}: {total:.0f} ms of CPU per round of num_stages 1-4")
        for label, seconds in spent.items():
            ms = seconds / args.rounds * 1000
            print(f"  {ms:8.1f} ms {100 * ms / total:5.1f} %  {label}")


if __name__ == "__main__":
    main()
