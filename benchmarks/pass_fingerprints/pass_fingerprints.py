#!/usr/bin/env python3
"""What the pass fingerprints cost against the lowering they record, on one CPU, and
whether they are stable.

Cost: for the seed GEMM on sm_80 at num_stages 1-4, ``--rounds`` times, the variant is
lowered as a worker lowers it without fingerprints, with the structural hash after every
pass run (``hash``, what the extension records) and with the printed IR's digest
(``text``: the structural hash after every run, the IR printed where it moved), the
three in a rotating order. Times are the process's CPU seconds (``time.process_time``),
medians per variant; each ratio is the sum of a side's medians over the sum of the
lowering's without (the goal: at most 5 % more).

Stability: ``--prints FILE`` writes both kinds of fingerprint of every run (seed GEMM,
sm_80 ns3 and sm_90a ns3) as JSON; run it under two TileLang releases, or twice, and
compare with ``--compare A B``: a run whose text fingerprint is the same on both sides
(the same IR) must have the same hash.

    python benchmarks/pass_fingerprints/pass_fingerprints.py [--rounds 5] [--cpu N] [--json FILE]
    python benchmarks/pass_fingerprints/pass_fingerprints.py --prints FILE
    python benchmarks/pass_fingerprints/pass_fingerprints.py --compare A B
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
PARAMS = {"M": 1024, "N": 1024, "K": 1024, "block_M": 128, "block_N": 128, "block_K": 64,
          "threads": 128}
MODES = (None, "hash", "text")


def _lower(arch: str, stages: int, how: str | None) -> tuple[float, list[str]]:
    from sphinx_tlstages.worker.kernel_module import kernel_module, prim_func
    from sphinx_tlstages.worker.lowering import lower_fingerprinted

    source = "import tilelang\nimport tilelang.language as T\n\n" + \
        (ROOT / "book" / "kernels" / "gemm.py").read_text(encoding="utf-8")
    with kernel_module(source, "bench_gemm.py", None) as module:
        func, configs = prim_func(module.namespace["matmul"], {**PARAMS, "num_stages": stages})
        return lower_fingerprinted(func, configs, {"kind": "cuda", "arch": arch}, how)


def cost(rounds: int) -> dict[str, Any]:
    times: dict[str, dict[str, list[float]]] = {}
    for r in range(rounds):
        for stages in (1, 2, 3, 4):
            for i in range(len(MODES)):
                how = MODES[(i + r) % len(MODES)]
                seconds, _ = _lower("sm_80", stages, how)
                times.setdefault(f"ns{stages}", {}).setdefault(how or "none", []).append(seconds)
    rows = {name: {how: statistics.median(values) for how, values in sides.items()}
            for name, sides in times.items()}
    total = {how or "none": sum(row[how or "none"] for row in rows.values()) for how in MODES}
    return {"rounds": rounds, "variants": rows,
            "ratio_hash": total["hash"] / total["none"] - 1,
            "ratio_text": total["text"] / total["none"] - 1}


def prints() -> dict[str, Any]:
    import tilelang

    found: dict[str, Any] = {"tilelang": tilelang.__version__}
    for arch in ("sm_80", "sm_90a"):
        _, hashed = _lower(arch, 3, "hash")
        _, texts = _lower(arch, 3, "text")
        found[arch] = [[h.split(" ")[0], h.split(" ")[1], t.split(" ")[1]]
                       for h, t in zip(hashed, texts, strict=True)]
    return found


def compare(one: dict[str, Any], two: dict[str, Any]) -> dict[str, Any]:
    """Per arch: runs lined up by name, same text with the same hash or not."""
    said: dict[str, Any] = {"versions": [one["tilelang"], two["tilelang"]]}
    for arch in ("sm_80", "sm_90a"):
        a = {run: (h, t) for run, h, t in one[arch]}
        b = {run: (h, t) for run, h, t in two[arch]}
        both = [run for run in a if run in b]
        same_text = [run for run in both if a[run][1] == b[run][1]]
        said[arch] = {"runs": [len(a), len(b)], "in_both": len(both),
                      "same_text": len(same_text),
                      "same_text_same_hash": sum(1 for r in same_text if a[r][0] == b[r][0]),
                      "same_hash": sum(1 for r in both if a[r][0] == b[r][0]),
                      "first_text_difference": next((r for r in both if a[r][1] != b[r][1]),
                                                    None)}
    return said


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--cpu", type=int, default=None, help="pin to this CPU")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--prints", type=Path, default=None)
    parser.add_argument("--compare", type=Path, nargs=2, default=None)
    args = parser.parse_args()
    if args.cpu is not None:
        os.sched_setaffinity(0, {args.cpu})
    if args.compare:
        one, two = (json.loads(p.read_text(encoding="utf-8")) for p in args.compare)
        print(json.dumps(compare(one, two), indent=1, sort_keys=True))
        return
    if args.prints:
        args.prints.write_text(json.dumps(prints(), indent=1) + "\n", encoding="utf-8")
        return
    found = cost(args.rounds)
    for name, row in found["variants"].items():
        print(f"{name}: none {row['none']:.3f} s  hash {row['hash']:.3f} s  "
              f"text {row['text']:.3f} s")
    print(f"hash: +{100 * found['ratio_hash']:.1f} %, text: +{100 * found['ratio_text']:.1f} % "
          f"(sums of medians, {args.rounds} rounds)")
    if args.json:
        args.json.write_text(json.dumps(found, indent=1, sort_keys=True) + "\n",
                             encoding="utf-8")


if __name__ == "__main__":
    main()
