#!/usr/bin/env python3
"""What the resources part costs, as ratios of alternating runs.

* ``compile``: the part's compile step for one variant (``worker.resources.
  compile_variant``: nvcc with TileLang's flags, ``nvdisasm -gi`` (the listing and the
  line table; ``cuobjdump -sass`` before 2026-12-06), ptxas's report and the listing read,
  the occupancy) against the same two commands run directly on the
  same CUDA (goal: 1.05x), and against the same ``nvcc`` command alone (what the SASS
  listing adds), in rotating order (each side first as often as the others),
  ``--rounds`` times per variant: the seed GEMM (``book/kernels/gemm.py``, 1024^3, tile
  128x128x64) at num_stages 1-4 on ``sm_80`` and on ``sm_90a``. Wall time and the CPU
  time of the child processes; a ratio is the sum of the part's medians over the sum of
  the other side's.
* ``book``: a generated one-page book with the seed GEMM on ``sm_80`` and on ``sm_90a``
  (num_stages 1-4 each) built cold (empty output and lowering cache) with ``:show:``
  naming ``resources`` against the same book without it, alternately, ``--repeat`` times:
  what turning the part on costs a cold build.
* ``real-book``: the book (``book/``) built cold as its chapters show it, against the
  same book with ``resources`` removed from every ``:show:``, alternately.

A build's CPU time is that of every process it started, the workers a fork server
leaves behind included (``build_speed.sphinx``).

    python benchmarks/resources_cost/resources_cost.py [--rounds 3] [--repeat 3]
        [--only compile,book,real-book] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parents[1]
ROOT = BENCH.parent
# The package from this checkout, and build_speed's helpers (one way to time a build).
sys.path[:0] = [str(ROOT), str(BENCH / "build_speed")]

from build_speed import alternate, cold_build, medians, ratios  # noqa: E402

GEMM = (ROOT / "book" / "kernels" / "gemm.py").read_text(encoding="utf-8")
PARAMS = "M=1024 N=1024 K=1024 block_M=128 block_N=128 block_K=64 threads=128"
ARCHS = ("sm_80", "sm_90a")
STAGES = (1, 2, 3, 4)


def _timed(step: Any) -> dict[str, float]:
    """Wall seconds and the CPU seconds of the child processes ``step`` runs."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    step()
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"wall": wall,
            "cpu": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)}


def compile_scenario(rounds: int) -> dict[str, Any]:
    from sphinx_tlstages.core.plan import options
    from sphinx_tlstages.core.plan.targets import parse_target
    from sphinx_tlstages.core.plan.toolkit import find
    from sphinx_tlstages.core.plan.variants import matrix
    from sphinx_tlstages.worker import resources
    from sphinx_tlstages.worker.tasks import import_tilelang

    toolkit = find("auto")
    assert toolkit is not None, "pip install sphinx-tlstages[resources]"
    nvdisasm = str(Path(toolkit.nvcc).with_name("nvdisasm"))
    _, why = import_tilelang()
    assert why is None, why
    from sphinx_tlstages.worker.lowering import lower_variant

    params = options.parse_params(PARAMS)
    runs: dict[str, dict[str, list[dict[str, float]]]] = {}
    with tempfile.TemporaryDirectory(prefix="tlstages-cost-") as folder:
        for arch in ARCHS:
            for variant in matrix(GEMM, "gemm.py", "matmul", params, {}, STAGES,
                                  (parse_target(arch),)):
                result = lower_variant(variant.task())
                assert result["ok"], result
                cuda = str(result["cuda"])
                source = Path(folder, "kernel.cu")
                source.write_text(cuda, encoding="utf-8")
                bare = resources.nvcc_command(toolkit.nvcc, resources.flags(arch, {}),
                                              Path(folder, "bare.cubin"), source)

                def part(cuda: str = cuda, arch: str = arch,
                         threads: int = result["threads"],
                         dynamic: int = result["dynamic_shared_bytes"]) -> None:
                    found = resources.compile_variant(cuda, arch, {}, toolkit.payload,
                                                      threads, dynamic)
                    assert "resources" in found, found

                def nvcc(bare: list[str] = bare) -> None:
                    subprocess.run(bare, check=True, capture_output=True)

                def commands(bare: list[str] = bare) -> None:
                    subprocess.run(bare, check=True, capture_output=True)
                    subprocess.run([nvdisasm, "-gi", "-c", bare[-2]], check=True,
                                   capture_output=True)

                sides = {"part": part, "nvcc": nvcc, "commands": commands}
                times: dict[str, list[dict[str, float]]] = {side: [] for side in sides}
                part()  # warm: the first compile pays for loading the toolkit's files
                for run in range(rounds):  # each side first as often as the others
                    order = list(sides)[run % 3:] + list(sides)[:run % 3]
                    for side in order:
                        times[side].append(_timed(sides[side]))
                name = f"{arch} ns{variant.num_stages}"
                runs[name] = times
                print(f"{name}: " + ", ".join(f"{side} {medians(t)}"
                                              for side, t in times.items()),
                      file=sys.stderr, flush=True)
    per_variant = {name: {side: medians(t) for side, t in r.items()}
                   for name, r in runs.items()}
    total = {side: {kind: sum(v[side][kind] for v in per_variant.values())
                    for kind in ("wall", "cpu")} for side in ("part", "nvcc", "commands")}
    report = {"rounds": rounds, "per_variant": per_variant, "ratio": {
        against: {kind: round(total["part"][kind] / total[against][kind], 3)
                  for kind in ("wall", "cpu")} for against in ("commands", "nvcc")}}
    print(f"compile: the part {report['ratio']['commands']['wall']:.3f}x its two commands "
          f"run directly, {report['ratio']['nvcc']['wall']:.3f}x nvcc alone (wall); "
          f"{report['ratio']['commands']['cpu']:.3f}x and "
          f"{report['ratio']['nvcc']['cpu']:.3f}x (CPU)", flush=True)
    return report


def generated_book(folder: Path, show: str) -> None:
    """One page: the seed GEMM on sm_80 and on sm_90a, num_stages 1-4, ``:show:`` as given."""
    folder.mkdir(parents=True)
    (folder / "conf.py").write_text('extensions = ["sphinx_tlstages"]\nproject = "cost"\n',
                                    encoding="utf-8")
    body = "\n".join(f"   {line}" if line else "" for line in GEMM.splitlines())
    page = ["Cost\n====\n"]
    for arch in ARCHS:
        page.append(f".. tl-pipeline:: GEMM on {arch}\n   :name: gemm-{arch}\n"
                    f"   :num-stages: 1 2 3 4\n   :target: {arch}\n   :params: {PARAMS}\n"
                    f"   :show: {show}\n\n{body}\n")
    (folder / "index.rst").write_text("\n".join(page), encoding="utf-8")


def book_scenario(work: Path, repeat: int) -> dict[str, Any]:
    base = "chart shared sync"
    with_part, without = work / "with", work / "without"
    generated_book(with_part, f"{base} resources")
    generated_book(without, base)
    ours: list[dict[str, float]] = []
    theirs: list[dict[str, float]] = []

    def cold(src: Path, into: list[dict[str, float]]) -> None:
        into.append(_said(src, cold_build(src, work, "-W")))

    loads = []
    for run in range(repeat):
        loads.append(os.getloadavg()[0])
        alternate(run, lambda: cold(with_part, ours), lambda: cold(without, theirs))
    report = {"repeat": repeat, "seconds": medians(ours), "without_seconds": medians(theirs),
              "ratio": ratios(ours, theirs), "load_average": round(sum(loads) / len(loads), 1)}
    print(f"book: cold with the part {report['ratio']['wall']:.2f}x without it (wall), "
          f"{report['ratio']['cpu']:.2f}x (CPU)", flush=True)
    return report


def _said(src: Path, built: dict[str, float]) -> dict[str, float]:
    """``built``, once printed with the load average (the runs are long)."""
    print(f"  {src.name}: {built['wall']:.1f} s wall, {built['cpu']:.1f} s CPU, load "
          f"{os.getloadavg()[0]:.1f}", file=sys.stderr, flush=True)
    return built


_SHOW = re.compile(r"^(\s*:show:.*?)\s+resources\b", re.M)


def without_resources(text: str) -> str:
    """A page with ``resources`` removed from every ``:show:``."""
    return _SHOW.sub(r"\1", text)


def real_book_scenario(work: Path, repeat: int) -> dict[str, Any]:
    """The book (``book/``) built cold as its chapters show it, against the same book with
    ``resources`` removed from every ``:show:``, alternately."""
    with_part, without = work / "book-with", work / "book-without"
    shutil.copytree(ROOT / "book", with_part, ignore=shutil.ignore_patterns("_build"))
    shutil.copytree(ROOT / "book", without, ignore=shutil.ignore_patterns("_build"))
    changed = []
    for page in sorted([*without.rglob("*.rst"), *without.rglob("*.md")]):
        text = page.read_text(encoding="utf-8")
        if without_resources(text) != text:
            page.write_text(without_resources(text), encoding="utf-8")
            changed.append(str(page.relative_to(without)))
    ours: list[dict[str, float]] = []
    theirs: list[dict[str, float]] = []

    def cold(src: Path, into: list[dict[str, float]]) -> None:
        into.append(_said(src, cold_build(src, work)))

    loads = []
    for run in range(repeat):
        loads.append(os.getloadavg()[0])
        alternate(run, lambda: cold(with_part, ours), lambda: cold(without, theirs))
    report = {"repeat": repeat, "pages_changed": changed, "seconds": medians(ours),
              "without_seconds": medians(theirs), "ratio": ratios(ours, theirs),
              "load_average": round(sum(loads) / len(loads), 1)}
    print(f"real book: cold with the part {report['ratio']['wall']:.2f}x without it (wall), "
          f"{report['ratio']['cpu']:.2f}x (CPU)", flush=True)
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", default="compile,book,real-book")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    from sphinx_tlstages.core.plan.toolkit import find
    from sphinx_tlstages.core.results.stamps import tilelang_version
    from sphinx_tlstages.worker.resources import version

    toolkit = find("auto")
    report: dict[str, Any] = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                    "tilelang": tilelang_version(),
                    "nvcc": version(toolkit.nvcc) if toolkit else None}}
    parts = args.only.split(",")
    if "compile" in parts:
        report["compile"] = compile_scenario(args.rounds)
    if "book" in parts:
        with tempfile.TemporaryDirectory(prefix="tlstages-cost-book-") as work:
            report["book"] = book_scenario(Path(work), args.repeat)
    if "real-book" in parts:
        with tempfile.TemporaryDirectory(prefix="tlstages-cost-real-book-") as work:
            report["real_book"] = real_book_scenario(Path(work), args.repeat)
    text = json.dumps(report, indent=1, sort_keys=True) + "\n"
    if args.json:
        args.json.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
