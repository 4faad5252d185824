#!/usr/bin/env python3
"""Build-time benchmark of sphinx-tlstages, as ratios against a plain book.

The plain book is the same sources with every ``tl-pipeline`` replaced by a code block
of its kernel and the extension unloaded. Each figure is the median of ``--repeat`` runs
of ``sphinx-build`` in a fresh process:

* cold: empty output folder and empty lowering cache;
* no-op: nothing changed since the last build;
* -E: a fresh environment (every page read and written again), warm cache;
* edit: one directive's params changed.

For the generated book (``--directives`` kernels, each different, four num_stages each)
the cold build is also compared with the sum of its variants' single lowering times plus
one TileLang import, which is what one process lowering them one by one would cost.

    python benchmarks/build_speed.py [--repeat 3] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GEMM = (ROOT / "book" / "kernels" / "gemm.py").read_text(encoding="utf-8")
DIRECTIVE = re.compile(r"^\.\. tl-pipeline::.*\n((?:   :.*\n)*)\n?((?:   .*\n|\n)*)", re.M)
FENCE = re.compile(r"^```\{tl-pipeline\}.*\n((?::.*\n)*)\n?(.*?)^```", re.M | re.S)


def plain(text: str) -> str:
    """The page with each directive replaced by its kernel as a code block."""
    def rst(match: re.Match[str]) -> str:
        file = re.search(r":file: (\S+)", match.group(1))
        if file:
            return f".. literalinclude:: {file.group(1)}\n   :language: python\n\n"
        return ".. code-block:: python\n\n" + match.group(2)

    text = DIRECTIVE.sub(rst, text)
    return FENCE.sub(lambda m: "```python\n" + m.group(2) + "```", text)


def generated_book(folder: Path, directives: int) -> None:
    """``directives`` pages, one different GEMM each (K differs), num_stages 1-4."""
    (folder / "conf.py").write_text(
        'extensions = ["sphinx_tlstages"]\nproject = "bench"\n', encoding="utf-8")
    names = [f"k{i:02d}" for i in range(directives)]
    toctree = "\n".join(f"   {name}" for name in names)
    (folder / "index.rst").write_text(f"Bench\n=====\n\n.. toctree::\n\n{toctree}\n",
                                      encoding="utf-8")
    for i, name in enumerate(names):
        params = (f"M=1024 N=1024 K={512 + 64 * i} block_M=128 block_N=128 block_K=64 "
                  "threads=128")
        body = "\n".join(f"   {line}" if line else "" for line in GEMM.splitlines())
        (folder / f"{name}.rst").write_text(
            f"Kernel {i:02d}\n=========\n\nProse before the kernel.\n\n"
            f".. tl-pipeline:: GEMM {i}\n   :name: {name}\n   :num-stages: 1 2 3 4\n"
            f"   :params: {params}\n\n{body}\n\nProse after it.\n", encoding="utf-8")


def plain_copy(src: Path, dst: Path) -> None:
    """The plain book: directives as code blocks, the extension left out of conf.py."""
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("_build"))
    for path in list(dst.rglob("*.rst")) + list(dst.rglob("*.md")):
        path.write_text(plain(path.read_text(encoding="utf-8")), encoding="utf-8")
    conf = dst / "conf.py"
    text = conf.read_text(encoding="utf-8")
    for spelling in ('"sphinx_tlstages", ', ', "sphinx_tlstages"', '"sphinx_tlstages"'):
        text = text.replace(spelling, "")
    conf.write_text(text, encoding="utf-8")


def sphinx(src: Path, out: Path, cache: Path, *extra: str) -> float:
    args = [sys.executable, "-m", "sphinx", "-q", "-b", "html", str(src), str(out), *extra]
    env = {**os.environ, "TLSTAGES_CACHE_DIR": str(cache), "TLSTAGES_SNAPSHOTS": "off"}
    started = time.perf_counter()
    subprocess.run(args, check=True, env=env, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


def edited(text: str) -> str:
    """One directive's params changed (in the plain book, its page's text). M, because
    no chapter's :assert: claims depend on it."""
    if "M=1024" in text:
        return text.replace("M=1024", "M=2048", 1)
    return text + "\nOne more line.\n"


def scenario(src: Path, page: Path, work: Path, repeat: int) -> dict[str, float]:
    """Median seconds of each kind of build of ``src``; the edit is made to ``page``."""
    times: dict[str, list[float]] = {"cold": [], "noop": [], "fresh_env": [], "edit": []}
    original = page.read_text(encoding="utf-8")
    for run in range(repeat):
        out, cache = work / f"out{run}", work / f"cache{run}"
        shutil.rmtree(out, ignore_errors=True)
        shutil.rmtree(cache, ignore_errors=True)
        times["cold"].append(sphinx(src, out, cache))
        times["noop"].append(sphinx(src, out, cache))
        times["fresh_env"].append(sphinx(src, out, cache, "-E"))
        page.write_text(edited(original), encoding="utf-8")
        times["edit"].append(sphinx(src, out, cache))
        page.write_text(original, encoding="utf-8")
    return {kind: statistics.median(values) for kind, values in times.items()}


def lowering_costs(cache: Path) -> float:
    """Sum of the single-variant lowering times recorded in a cache."""
    return sum(json.loads(p.read_text())["seconds"] for p in cache.rglob("*.json"))


def import_seconds() -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import tilelang"], check=True)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--directives", type=int, default=50)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    report: dict[str, object] = {
        "machine": f"{platform.machine()}, {len(os.sched_getaffinity(0))} CPUs usable, "
                   f"Python {platform.python_version()}",
        "repeat": args.repeat,
    }
    with tempfile.TemporaryDirectory(prefix="tlstages-bench-") as tmp:
        work = Path(tmp)
        # A copy: the edit scenario rewrites a page, which must never be the real one.
        books = {"book": work / "book", "generated": work / "generated"}
        shutil.copytree(ROOT / "book", books["book"], ignore=shutil.ignore_patterns("_build"))
        books["generated"].mkdir()
        generated_book(books["generated"], args.directives)
        for name, src in books.items():
            plain_src = work / f"{name}-plain"
            plain_copy(src, plain_src)
            page = next(p for p in sorted(src.rglob("*.rst"))
                        if "tl-pipeline" in p.read_text() and "M=1024" in p.read_text())
            ours = scenario(src, page, work / f"{name}-runs", args.repeat)
            theirs = scenario(plain_src, plain_src / page.relative_to(src),
                              work / f"{name}-plain-runs", args.repeat)
            report[name] = {
                "seconds": ours, "plain_seconds": theirs,
                "ratio": {kind: round(ours[kind] / theirs[kind], 2) for kind in ours},
            }
            print(f"{name}: " + ", ".join(
                f"{kind} {ours[kind]:.1f} s ({ours[kind] / theirs[kind]:.2f}x plain)"
                for kind in ours), flush=True)
        serial = lowering_costs(work / "generated-runs" / "cache0") + import_seconds()
        cold = report["generated"]["seconds"]["cold"]  # type: ignore[index]
        report["generated_cold_vs_serial_lowering"] = round(cold / serial, 2)
        print(f"generated cold build {cold:.1f} s = {cold / serial:.2f}x the serial lowering "
              f"cost ({serial:.1f} s: every variant's lowering time plus one import)")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
