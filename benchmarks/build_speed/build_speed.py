#!/usr/bin/env python3
"""Build-time benchmark of sphinx-tlstages, as ratios measured in one run.

Every figure is a median over ``--repeat`` runs of ``sphinx-build`` in a fresh process,
the two sides of each ratio run alternately (ours first in even runs, the peer first in
odd ones) so that a machine busy with something else weighs on both alike:

* ``page``: the chapter-22 page (the seed GEMM, num_stages 1-4, sm_80) built cold (empty
  output folder and lowering cache, no kept workers) against the same page through
  sphinxcontrib-programoutput running the chapter's seed script
  (``lower_num_stages.py`` beside it): wall time and CPU time (the build's whole process
  tree);
* ``overhead``: what the extension adds to TileLang's own lowering of one variant, on one
  CPU (``lowering_overhead.py`` beside it);
* ``book`` and ``generated``: this book and a generated book of ``--directives``
  different kernels x 4 variants, against the same sources with every ``tl-pipeline``
  a plain code block and the extension unloaded: cold, no-op, ``-E`` with a warm cache,
  one directive's params edited; for the generated book also the cold build against one
  process lowering its variants one after another (each variant's lowering time plus one
  TileLang import);
* ``live``: this book as ``nox -s docs-live`` builds it (kept workers on): one
  directive's params edited (a new value each run), against a no-op rebuild plus
  TileLang alone lowering the edited directive's variants one after another in a process
  that has already imported it.

    python benchmarks/build_speed/build_speed.py [--repeat 3] [--only page,overhead,...]
        [--json FILE]
"""

from __future__ import annotations

import argparse
import compileall
import ctypes
import json
import os
import platform
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent  # this benchmark's folder: its scripts beside it
ROOT = BENCH.parents[1]
GEMM = (ROOT / "book" / "kernels" / "gemm.py").read_text(encoding="utf-8")
CHAPTER = ROOT / "book" / "chapters" / "num-stages.rst"
SEED_SCRIPT = BENCH / "lower_num_stages.py"
DIRECTIVE = re.compile(r"^\.\. tl-pipeline::.*\n((?:   :.*\n)*)\n?((?:   .*\n|\n)*)", re.M)
FENCE = re.compile(r"^```\{tl-pipeline\}.*\n((?::.*\n)*)\n?(.*?)^```", re.M | re.S)
PARTS = ("page", "overhead", "book", "generated", "live")


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


def chapter_pages(ours: Path, peer: Path) -> None:
    """The chapter-22 page (its Ampere part: the seed GEMM, num_stages 1-4, sm_80) as a
    one-page book, and its programoutput peer: the same prose, the seed script listed
    and run where the directive stood."""
    page = CHAPTER.read_text(encoding="utf-8").split("The same kernel on Hopper")[0]
    start = page.index(".. tl-pipeline::")
    end = start + re.search(r"\n\S", page[start:]).start() + 1  # type: ignore[union-attr]
    run = (".. literalinclude:: lower_num_stages.py\n   :language: python\n\n"
           f".. program-output:: {sys.executable} lower_num_stages.py\n\n")
    conf = 'project = "page"\nhtml_theme = "furo"\nextensions = ["myst_parser", "{}"]\n'
    for folder, text, extension in ((ours, page, "sphinx_tlstages"),
                                    (peer, page[:start] + run + page[end:],
                                     "sphinxcontrib.programoutput")):
        folder.mkdir(parents=True)
        (folder / "index.rst").write_text(text, encoding="utf-8")
        (folder / "conf.py").write_text(conf.format(extension), encoding="utf-8")
    shutil.copy(SEED_SCRIPT, peer / "lower_num_stages.py")


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


def environment(cache: Path, **extra: str) -> dict[str, str]:
    env = {**os.environ, "TLSTAGES_CACHE_DIR": str(cache), "TLSTAGES_SNAPSHOTS": "off",
           "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH"))
                                         if p)}
    env.pop("TLSTAGES_KEEP_WORKERS", None)
    env.update(extra)
    return env


def _subreaper() -> bool:
    """Make this process the reaper of its orphaned descendants (Linux): a lowering
    worker whose fork server exits before reaping it is re-parented here, not to init,
    so that its CPU time is counted in ``RUSAGE_CHILDREN`` once :func:`_reap` waits for it.
    Without this a build's CPU missed the worker still running when its server left
    (about a third of the page's cold build, measured with per-process accounting)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        return False


SUBREAPER = _subreaper()


def _reap(patience: float = 5.0) -> None:
    """Wait for the descendants re-parented here, which exit with the build; a kept
    fork server (the ``live`` scenario's) outlives it and is left alone after
    ``patience`` seconds."""
    deadline = time.perf_counter() + patience
    while SUBREAPER and time.perf_counter() < deadline:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if not pid:
            time.sleep(0.01)


def sphinx(src: Path, out: Path, env: dict[str, str], *extra: str) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the whole process tree: its forked workers too,
    where the system lets this process reap them) of one build."""
    args = [sys.executable, "-m", "sphinx", "-q", "-b", "html", str(src), str(out), *extra]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(args, check=True, env=env, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - started
    _reap(0.0 if env.get("TLSTAGES_KEEP_WORKERS") else 5.0)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def cold_build(src: Path, work: Path, *extra: str) -> dict[str, float]:
    """One cold build of ``src`` (its output folder and lowering cache in ``work``, emptied
    first): ``{"wall": s, "cpu": s}``, the CPU of its whole process tree (:func:`sphinx`)."""
    out, cache = work / f"{src.name}-out", work / f"{src.name}-cache"
    shutil.rmtree(out, ignore_errors=True)
    shutil.rmtree(cache, ignore_errors=True)
    wall, cpu = sphinx(src, out, environment(cache), *extra)
    return {"wall": wall, "cpu": cpu}


def edited(text: str, m: int = 2048) -> str:
    """One directive's params changed (in the plain book, its page's text). M, because
    no chapter's :assert: claims depend on it."""
    if "M=1024" in text:
        return text.replace("M=1024", f"M={m}", 1)
    return text + f"\nOne more line ({m}).\n"


def alternate(run: int, ours: Callable[[], None], theirs: Callable[[], None]) -> None:
    for side in ((ours, theirs) if run % 2 == 0 else (theirs, ours)):
        side()


def medians(runs: list[dict[str, float]]) -> dict[str, float]:
    return {kind: round(statistics.median(run[kind] for run in runs), 3) for kind in runs[0]}


def ratios(ours: list[dict[str, float]], theirs: list[dict[str, float]]) -> dict[str, float]:
    """Median over runs of each run's ratio."""
    return {kind: round(statistics.median(o[kind] / t[kind] for o, t in zip(ours, theirs,
                                                                              strict=True)), 2)
            for kind in ours[0]}


def book_builds(src: Path, page: Path, work: Path, run: int) -> dict[str, float]:
    """Cold, no-op, -E and an edit of ``src``; the edit is made to ``page``."""
    out, cache = work / f"out{run}", work / f"cache{run}"
    shutil.rmtree(out, ignore_errors=True)
    shutil.rmtree(cache, ignore_errors=True)
    env = environment(cache)
    times = {"cold": sphinx(src, out, env)[0], "noop": sphinx(src, out, env)[0],
             "fresh_env": sphinx(src, out, env, "-E")[0]}
    original = page.read_text(encoding="utf-8")
    page.write_text(edited(original), encoding="utf-8")
    try:
        times["edit"] = sphinx(src, out, env)[0]
    finally:
        page.write_text(original, encoding="utf-8")
    return times


def book_scenario(name: str, src: Path, work: Path, repeat: int) -> dict[str, Any]:
    plain_src = work / f"{name}-plain"
    plain_copy(src, plain_src)
    page = next(p for p in sorted(src.rglob("*.rst"))
                if "tl-pipeline" in p.read_text() and "M=1024" in p.read_text())
    ours: list[dict[str, float]] = []
    theirs: list[dict[str, float]] = []
    for run in range(repeat):
        def mine(run: int = run) -> None:
            ours.append(book_builds(src, page, work / f"{name}-runs", run))

        def plain_one(run: int = run) -> None:
            theirs.append(book_builds(plain_src, plain_src / page.relative_to(src),
                                      work / f"{name}-plain-runs", run))

        alternate(run, mine, plain_one)
    report = {"seconds": medians(ours), "plain_seconds": medians(theirs),
              "ratio": ratios(ours, theirs)}
    print(f"{name}: " + ", ".join(f"{kind} {report['seconds'][kind]:.2f} s "
                                  f"({report['ratio'][kind]:.2f}x plain)" for kind in ours[0]),
          flush=True)
    return report


def page_scenario(work: Path, repeat: int) -> dict[str, Any]:
    ours_src, peer_src = work / "page", work / "page-programoutput"
    chapter_pages(ours_src, peer_src)
    ours: list[dict[str, float]] = []
    theirs: list[dict[str, float]] = []

    for run in range(repeat):
        alternate(run, lambda: ours.append(cold_build(ours_src, work)),
                  lambda: theirs.append(cold_build(peer_src, work)))
    report = {"seconds": medians(ours), "programoutput_seconds": medians(theirs),
              "ratio": ratios(ours, theirs)}
    print(f"page: cold {report['seconds']['wall']:.2f} s against programoutput's "
          f"{report['programoutput_seconds']['wall']:.2f} s: {report['ratio']['wall']:.2f}x "
          f"the wall time, {report['ratio']['cpu']:.2f}x the CPU time", flush=True)
    return report


def overhead_scenario(work: Path, repeat: int) -> dict[str, Any]:
    out = work / "overhead.json"
    subprocess.run([sys.executable, str(BENCH / "lowering_overhead.py"), "--rounds",
                    str(max(5, repeat)), "--json", str(out)], check=True,
                   env=environment(work / "overhead-cache"))
    report: dict[str, Any] = json.loads(out.read_text())
    print(f"overhead: {report['ratio']:.3f}x TileLang alone per variant on one CPU",
          flush=True)
    return report


def live_scenario(work: Path, repeat: int) -> dict[str, Any]:
    """The docs-live loop: kept workers, one directive edited per rebuild."""
    src, out, cache = work / "live", work / "live-out", work / "live-cache"
    shutil.copytree(ROOT / "book", src, ignore=shutil.ignore_patterns("_build"))
    page = src / "chapters" / "num-stages.rst"
    original = page.read_text(encoding="utf-8")
    sockets = work / "kept"
    env = environment(cache, TLSTAGES_KEEP_WORKERS="600", TLSTAGES_WORKERS_DIR=str(sockets))
    edits, noops, values = [], [], []
    try:
        sphinx(src, out, env)  # cold: starts the kept workers
        sphinx(src, out, env)
        for run in range(repeat):
            m = 2048 + 1024 * run  # a new value each time: always lowered, never cached
            values.append(m)
            page.write_text(edited(original, m), encoding="utf-8")
            edit = sphinx(src, out, env)[0]
            noop = sphinx(src, out, env)[0]
            edits.append(edit)
            noops.append(noop)
    finally:
        page.write_text(original, encoding="utf-8")
        subprocess.run([sys.executable, "-m", "sphinx_tlstages", "workers", "stop"],
                       env=env, check=False, stdout=subprocess.DEVNULL)
    alone_file = work / "alone.json"
    subprocess.run([sys.executable, str(BENCH / "lowering_overhead.py"), "--alone",
                    *map(str, values), "--json", str(alone_file)], check=True, env=env)
    alone = json.loads(alone_file.read_text())["alone_seconds"]
    edit, noop = statistics.median(edits), statistics.median(noops)
    ratio = statistics.median(e / (n + a) for e, n, a in zip(edits, noops, alone, strict=True))
    report = {"edit_seconds": round(edit, 3), "noop_seconds": round(noop, 3),
              "tilelang_alone_seconds": round(statistics.median(alone), 3),
              "ratio": round(ratio, 2), "edited": "gemm-sm80 (4 variants), M changed"}
    print(f"live: an edit rebuilt in {edit:.2f} s = {ratio:.2f}x (a no-op rebuild, "
          f"{noop:.2f} s, + TileLang alone lowering the 4 changed variants, "
          f"{statistics.median(alone):.2f} s)", flush=True)
    return report


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
    parser.add_argument("--only", default=",".join(PARTS),
                        help=f"comma-separated parts among {', '.join(PARTS)}")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    parts = [part for part in args.only.split(",") if part]
    report: dict[str, Any] = {
        "machine": f"{platform.machine()}, {len(os.sched_getaffinity(0))} CPUs usable, "
                   f"Python {platform.python_version()}",
        "load_average_before": [round(x, 2) for x in os.getloadavg()],
        "repeat": args.repeat,
    }
    # As an installed wheel is: compiled. A checkout installed in place, where
    # PYTHONDONTWRITEBYTECODE is set, would compile every module of the extension in every
    # build, while Sphinx and the peers come compiled from their wheels.
    compileall.compile_dir(ROOT / "sphinx_tlstages", quiet=1)
    with tempfile.TemporaryDirectory(prefix="tlstages-bench-") as tmp:
        work = Path(tmp)
        if "page" in parts:
            report["page"] = page_scenario(work, args.repeat)
        if "overhead" in parts:
            report["overhead"] = overhead_scenario(work, args.repeat)
        if "book" in parts:
            # A copy: the edit scenario rewrites a page, which must never be the real one.
            shutil.copytree(ROOT / "book", work / "book", ignore=shutil.ignore_patterns("_build"))
            report["book"] = book_scenario("book", work / "book", work, args.repeat)
        if "generated" in parts:
            (work / "generated").mkdir()
            generated_book(work / "generated", args.directives)
            report["generated"] = book_scenario("generated", work / "generated", work,
                                                args.repeat)
            serial = lowering_costs(work / "generated-runs" / "cache0") + import_seconds()
            cold = report["generated"]["seconds"]["cold"]
            report["generated_cold_vs_serial_lowering"] = round(cold / serial, 2)
            print(f"generated cold build {cold:.1f} s = {cold / serial:.2f}x the serial "
                  f"lowering cost ({serial:.1f} s: every variant's lowering time plus one "
                  "import)", flush=True)
        if "live" in parts:
            report["live"] = live_scenario(work, args.repeat)
    report["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    if args.json:
        args.json.write_text(json.dumps(report, indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
