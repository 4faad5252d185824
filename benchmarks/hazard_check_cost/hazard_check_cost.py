#!/usr/bin/env python3
"""What the hazard check costs against the lowering it checks, on one CPU.

For each variant of the seed GEMM (num_stages 1-4, on sm_80 and sm_90a) or of the book's
flash attention, ``--rounds`` times, alternately: the variant is lowered as a worker
lowers it (the pass instrument keeping the modules the facts are read from), then the
hazard check runs on what that lowering kept (with, where it finds no race, the search
for synchronisation no dependence needs: ``core/hazards/needed.py``). Times are the
process's CPU seconds (``time.process_time``), medians per variant; the ratio is the sum
of the check's medians over the sum of the lowering's (the goal: at most 5 %).

    python benchmarks/hazard_check_cost/hazard_check_cost.py [--rounds 5] [--cpu N] [--json FILE]
        [--kernel gemm|attention]

``--kernel attention``: the book's flash attention (``book/kernels/attention.py``) as its
chapters lower it, ``sm_80`` ``num_stages`` 1-3 and ``sm_90a`` 0 and 2.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
# Per kernel of the book: its file, its function, its parameters, the variants the book
# lowers (the seed GEMM over every stage count, the flash attention as its chapters do).
KERNELS = {
    "gemm": ("gemm.py", "matmul",
             {"M": 1024, "N": 1024, "K": 1024, "block_M": 128, "block_N": 128,
              "block_K": 64, "threads": 128},
             [(arch, stages) for arch in ("sm_80", "sm_90a") for stages in (1, 2, 3, 4)]),
    "attention": ("attention.py", "attention",
                  {"batch": 1, "heads": 8, "seq_len": 2048, "dim": 64, "block_M": 64,
                   "block_N": 64, "threads": 128},
                  [("sm_80", 1), ("sm_80", 2), ("sm_80", 3), ("sm_90a", 0), ("sm_90a", 2)]),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--cpu", type=int, default=None, help="pin to this CPU")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--kernel", choices=sorted(KERNELS), default="gemm")
    args = parser.parse_args()
    if args.cpu is not None:
        os.sched_setaffinity(0, {args.cpu})

    from sphinx_tlstages.worker.hazards import verdict as hazard_check
    from sphinx_tlstages.worker.ir import facts as ir_facts
    from sphinx_tlstages.worker.kernel_module import kernel_module, prim_func
    from sphinx_tlstages.worker.lowering import lower_kept

    file, function, params, variants = KERNELS[args.kernel]
    source = "import tilelang\nimport tilelang.language as T\n\n" + \
        (ROOT / "book" / "kernels" / file).read_text(encoding="utf-8")
    lowering: dict[str, list[float]] = {}
    checking: dict[str, list[float]] = {}
    verdicts: dict[str, str] = {}
    for _ in range(args.rounds):
        for arch, stages in variants:
            name = f"{arch} ns{stages}"
            target = {"kind": "cuda", "arch": arch}
            started = time.process_time()
            with kernel_module(source, f"bench_{args.kernel}.py", None) as module:
                func, configs = prim_func(module.namespace[function],
                                          {**params, "num_stages": stages})
                after, _ = lower_kept(func, configs, target)
            lowered = time.process_time()
            both = hazard_check.check(after, target, ir_facts.main_function,
                                      ir_facts.device_function)
            checked = time.process_time()
            lowering.setdefault(name, []).append(lowered - started)
            checking.setdefault(name, []).append(checked - lowered)
            found = both["hazards"]
            verdicts[name] = found["text"] + "".join(
                f"; {entry['text'].split(':')[0]} not needed" for entry in both["unneeded_sync"])
    rows = {name: {"lowering_s": statistics.median(lowering[name]),
                   "check_s": statistics.median(checking[name]), "verdict": verdicts[name]}
            for name in lowering}
    total_lower = sum(r["lowering_s"] for r in rows.values())
    total_check = sum(r["check_s"] for r in rows.values())
    for name, row in rows.items():
        print(f"{name:12} lowering {row['lowering_s']:.3f} s  check {row['check_s']:.4f} s  "
              f"({100 * row['check_s'] / row['lowering_s']:.1f} %)  {row['verdict']}")
    ratio = total_check / total_lower
    print(f"check / lowering: {100 * ratio:.1f} % (sums of medians, {args.rounds} rounds)")
    if args.json:
        args.json.write_text(json.dumps({"kernel": args.kernel, "rounds": args.rounds,
                                         "variants": rows,
                                         "ratio": ratio}, indent=1, sort_keys=True) + "\n",
                             encoding="utf-8")


if __name__ == "__main__":
    main()
