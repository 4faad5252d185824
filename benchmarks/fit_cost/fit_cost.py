#!/usr/bin/env python3
"""What the fit part costs a build: one directive, with and without ``fit`` in ``:show:``.

The seed GEMM (``num_stages`` 1-4, ``sm_80``, the book's parameters) on a page of its own,
built by ``sphinx-build`` in a fresh process with a fresh lowering cache (cold), then
again after the page is edited (warm: every variant cached), ``--rounds`` times, the two
sides alternately (the plain page first in even rounds). The part adds one lowering per
depth for each target family the page does not lower: 24 here. Medians in seconds of
wall time; the ratios are the fit side's over the plain side's.

    python benchmarks/fit_cost/fit_cost.py [--rounds 3] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PARAMS = "M=1024 N=1024 K=1024 block_M=128 block_N=128 block_K=64 threads=128"
CONF = 'extensions = ["sphinx_tlstages"]\nproject = "fit"\ntlstages_snapshots = "off"\n'


def _page(show: str) -> str:
    kernel = (ROOT / "book" / "kernels" / "gemm.py").read_text(encoding="utf-8")
    body = "".join(f"   {line}\n" if line else "\n" for line in kernel.splitlines())
    return (f"Page\n====\n\n.. tl-pipeline:: Seed GEMM\n   :name: seed\n   :show: {show}\n"
            f"   :params: {PARAMS}\n\n{body}")


def _build(folder: Path) -> float:
    """One ``sphinx-build`` of ``folder/src`` with the cache ``folder/cache``: seconds."""
    env = {**os.environ, "TLSTAGES_CACHE_DIR": str(folder / "cache"),
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "sphinx", "-q", "-W", "-b", "html",
                    str(folder / "src"), str(folder / "out")], env=env, check=True)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    sides = {"plain": "figure shared", "fit": "figure shared fit"}
    times: dict[str, list[float]] = {f"{side} {when}": [] for side in sides
                                     for when in ("cold", "warm")}
    with tempfile.TemporaryDirectory() as scratch:
        for round_ in range(args.rounds):
            order = list(sides) if round_ % 2 == 0 else list(reversed(sides))
            for side in order:
                folder = Path(scratch) / side
                shutil.rmtree(folder, ignore_errors=True)
                (folder / "src").mkdir(parents=True)
                (folder / "src" / "conf.py").write_text(CONF, encoding="utf-8")
                page = folder / "src" / "index.rst"
                page.write_text(_page(sides[side]), encoding="utf-8")
                times[f"{side} cold"].append(_build(folder))
                page.write_text(page.read_text(encoding="utf-8") + "\nEdited.\n",
                                encoding="utf-8")
                times[f"{side} warm"].append(_build(folder))
    medians = {name: statistics.median(found) for name, found in times.items()}
    ratios = {when: medians[f"fit {when}"] / medians[f"plain {when}"]
              for when in ("cold", "warm")}
    for name, median in medians.items():
        print(f"{name:10} {median:6.2f} s  ({', '.join(f'{t:.2f}' for t in times[name])})")
    print(f"fit / plain: cold {ratios['cold']:.2f}x, warm {ratios['warm']:.2f}x")
    if args.json:
        args.json.write_text(json.dumps({"rounds": args.rounds, "seconds": times,
                                         "medians": medians, "ratios": ratios},
                                        indent=1, sort_keys=True) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
