#!/usr/bin/env python3
"""The build-speed promise, kept: its ratios measured in one run, recorded with the commit
they were measured on, and compared with the last recorded run.

Each figure is the median over ``--repeat`` runs of a per-run ratio, the two sides of a
ratio run alternately (ours first in even runs) so that a busy machine weighs on both:

* ``page_cold``: the chapter-22 page (seed GEMM, num_stages 1-4, sm_80) built cold
  against the same page through sphinxcontrib-programoutput running the seed script
  (wall time; ``page_cold_cpu``: CPU time of the build's whole process tree), with
  ``tlstages_toolkit = "none"``: the resources part compiles nothing, as where no NVIDIA
  compiler is installed (the seed script compiles nothing either);
* ``lowering``: ``tlstages``' lowering of the seed GEMM at 1-4 stages against TileLang
  alone doing the same in one process, on one core (CPU time,
  ``benchmarks/build_speed/lowering_overhead.py``);
* ``page_warm``: a warm ``-E`` rebuild of the page (lowering cache and fragments warm)
  against the same page with the directive a plain code block and the extension
  unloaded (wall time; ``page_warm_cpu``: CPU time);
* ``book_noop``, ``book_fresh_env``, ``book_edit``: this book against the same sources
  with every directive a code block, as ``build_speed.py`` builds them (wall time).

A figure's noise is half the spread (largest minus smallest) of its per-run ratios, at
least ``MIN_NOISE``; a figure *moved* when its median differs from the last record's by
more than the larger of the two runs' noise. The run is appended to ``--record`` (default
``speed-ratios-2cpu.json`` beside it, committed) unless ``--no-record`` is given. Run it
before resolving work that touches the build or the worker::

    python benchmarks/speed_ratios/speed_ratios.py [--repeat 5] [--only page_cold,...] [--no-record]
"""

from __future__ import annotations

import argparse
import compileall
import datetime
import importlib.metadata
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

# The build benchmark's scenarios and helpers, beside this folder.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "build_speed"))
import build_speed as bs

ROOT = bs.ROOT
RECORD = Path(__file__).resolve().parent / "speed-ratios-2cpu.json"
# The promise (issue 38): at most these, on two cores, as ratios in one run.
GOALS = {"page_cold": 0.70, "lowering": 1.03, "page_warm": 1.10}
MIN_NOISE = 0.01
SCENARIOS = ("page_cold", "lowering", "page_warm", "book")
Runs = dict[str, list[float]]  # figure -> its per-run ratios


def _alternating(repeat: int, ours: Callable[[], tuple[float, float]],
                 theirs: Callable[[], tuple[float, float]]) -> tuple[list[float], list[float]]:
    """Per-run (wall, CPU) ratios of ``ours`` over ``theirs``, run alternately."""
    walls, cpus = [], []
    got: dict[str, tuple[float, float]] = {}

    def mine() -> None:
        got["ours"] = ours()

    def peer() -> None:
        got["theirs"] = theirs()

    for run in range(repeat):
        bs.alternate(run, mine, peer)
        walls.append(got["ours"][0] / got["theirs"][0])
        cpus.append(got["ours"][1] / got["theirs"][1])
    return walls, cpus


def page_cold(work: Path, repeat: int) -> Runs:
    ours, peer = work / "page", work / "page-programoutput"
    if not ours.exists():
        bs.chapter_pages(ours, peer)

    def cold(src: Path, *extra: str) -> tuple[float, float]:
        built = bs.cold_build(src, work, *extra)
        return built["wall"], built["cpu"]

    # Without NVIDIA's compiler, as the bench-build session installs none: where one is
    # installed, the page's resources part compiles each variant (about 2.5 s of CPU,
    # more than its lowering), which the seed script does not do.
    walls, cpus = _alternating(repeat, lambda: cold(ours, "-D", "tlstages_toolkit=none"),
                               lambda: cold(peer))
    return {"page_cold": walls, "page_cold_cpu": cpus}


def page_warm(work: Path, repeat: int) -> Runs:
    ours, peer = work / "page", work / "page-programoutput"
    if not ours.exists():
        bs.chapter_pages(ours, peer)
    plain = work / "page-plain"
    plain.mkdir(exist_ok=True)
    (plain / "index.rst").write_text(bs.plain((ours / "index.rst").read_text("utf-8")),
                                     encoding="utf-8")
    (plain / "conf.py").write_text(
        (ours / "conf.py").read_text("utf-8").replace(', "sphinx_tlstages"', ""), "utf-8")
    env = bs.environment(work / "page-warm-cache")

    def rebuild(src: Path) -> tuple[float, float]:
        return bs.sphinx(src, work / f"{src.name}-warm-out", env, "-E")

    for src in (ours, plain):  # warm: the lowering cache, the fragments, the workers' none
        bs.sphinx(src, work / f"{src.name}-warm-out", env)
    walls, cpus = _alternating(repeat, lambda: rebuild(ours), lambda: rebuild(plain))
    return {"page_warm": walls, "page_warm_cpu": cpus}


def lowering(work: Path, repeat: int) -> Runs:
    out = work / "overhead.json"
    subprocess.run([sys.executable, str(bs.BENCH / "lowering_overhead.py"), "--rounds",
                    str(max(5, repeat)), "--json", str(out)], check=True,
                   env=bs.environment(work / "overhead-cache"))
    report = json.loads(out.read_text(encoding="utf-8"))
    return {"lowering": report["round_ratios"]}


def book(work: Path, repeat: int) -> Runs:
    src = work / "book"
    shutil.copytree(ROOT / "book", src, ignore=shutil.ignore_patterns("_build"))
    plain_src = work / "book-plain"
    bs.plain_copy(src, plain_src)
    page = next(p for p in sorted(src.rglob("*.rst"))
                if "tl-pipeline" in p.read_text() and "M=1024" in p.read_text())
    found: Runs = {"book_noop": [], "book_fresh_env": [], "book_edit": []}
    got: dict[str, dict[str, float]] = {}
    for run in range(repeat):
        def mine(run: int = run) -> None:
            got["ours"] = bs.book_builds(src, page, work / "book-runs", run)

        def peer(run: int = run) -> None:
            got["theirs"] = bs.book_builds(plain_src, plain_src / page.relative_to(src),
                                           work / "book-plain-runs", run)

        bs.alternate(run, mine, peer)
        for kind in ("noop", "fresh_env", "edit"):
            found[f"book_{kind}"].append(got["ours"][kind] / got["theirs"][kind])
    return found


def summarise(runs: Runs) -> dict[str, dict[str, Any]]:
    """Each figure's median, noise and per-run ratios."""
    return {name: {"ratio": round(statistics.median(values), 3),
                   "noise": round(max(MIN_NOISE, (max(values) - min(values)) / 2), 3),
                   "runs": [round(v, 3) for v in values]}
            for name, values in runs.items()}


def moved(now: dict[str, dict[str, Any]], runs: list[dict[str, Any]]) -> list[str]:
    """Sentences for the figures that moved by more than their noise since the last
    recorded run that measured them (a run may measure only some)."""
    said = []
    for name, figure in now.items():
        earlier = [run for run in runs if name in run["figures"]]
        if not earlier:
            continue
        before = earlier[-1]["figures"][name]
        change = figure["ratio"] - before["ratio"]
        noise = max(figure["noise"], before["noise"])
        if abs(change) > noise:
            said.append(f"{name} {'rose' if change > 0 else 'fell'} from {before['ratio']:.3f} "
                        f"to {figure['ratio']:.3f} since {earlier[-1]['commit']} "
                        f"(noise {noise:.3f})")
    return said


def commit() -> str:
    """The commit measured, ``+dirty`` where the working tree differs from it."""
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True,
                              check=False).stdout.strip()

    head = git("rev-parse", "--short", "HEAD") or "unknown"
    return head + ("+dirty" if git("status", "--porcelain", "--untracked-files=no") else "")


# What both sides of a ratio import: their versions move the figures (ml_dtypes 0.7.0's
# import alone costs 0.9 s of every TileLang import, on both sides of page_cold).
PACKAGES = ("tilelang", "torch", "numpy", "ml_dtypes", "sphinx")


def _versions() -> dict[str, str]:
    found = {}
    for name in PACKAGES:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            found[name] = "missing"
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--only", default=",".join(SCENARIOS),
                        help=f"comma-separated scenarios among {', '.join(SCENARIOS)}")
    parser.add_argument("--record", type=Path, default=RECORD)
    parser.add_argument("--no-record", action="store_true")
    parser.add_argument("--commit", help="the commit measured, where the sources measured "
                                         "are not this checkout's working tree")
    args = parser.parse_args()
    scenarios: dict[str, Callable[[Path, int], Runs]] = {
        "page_cold": page_cold, "lowering": lowering, "page_warm": page_warm, "book": book}
    chosen = [name for name in args.only.split(",") if name]
    unknown = [name for name in chosen if name not in scenarios]
    if unknown:  # book_noop and its kin are figures of the "book" scenario
        parser.error(f"unknown scenario {', '.join(unknown)}: choose among "
                     f"{', '.join(scenarios)}")
    run: dict[str, Any] = {
        "commit": args.commit or commit(),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{platform.machine()}, {len(os.sched_getaffinity(0))} CPUs usable, "
                   f"Python {platform.python_version()}",
        "packages": _versions(),
        "repeat": args.repeat,
        "load_average_before": [round(x, 2) for x in os.getloadavg()],
    }
    compileall.compile_dir(ROOT / "sphinx_tlstages", quiet=1)  # as a wheel is: compiled
    runs: Runs = {}
    with tempfile.TemporaryDirectory(prefix="tlstages-ratios-") as tmp:
        for name in chosen:
            runs.update(scenarios[name](Path(tmp), args.repeat))
    run["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    run["figures"] = summarise(runs)
    history: dict[str, Any] = {"goals": GOALS, "runs": []}
    if args.record.exists():
        history = json.loads(args.record.read_text(encoding="utf-8"))
    for name, figure in run["figures"].items():
        goal = GOALS.get(name)
        verdict = "" if goal is None else (
            f" (goal <= {goal:.2f}: {'met' if figure['ratio'] <= goal else 'MISSED'})")
        print(f"{name}: {figure['ratio']:.3f} +- {figure['noise']:.3f}{verdict}; runs "
              + " ".join(f"{x:.3f}" for x in figure["runs"]), flush=True)
    if not history["runs"]:
        print("no earlier record to compare with")
    else:
        changes = moved(run["figures"], history["runs"])
        print("; ".join(changes) if changes else
              "no figure moved by more than its noise since the last run that measured it")
    if not args.no_record:
        history["goals"] = GOALS
        history["runs"].append(run)
        args.record.write_text(json.dumps(history, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
