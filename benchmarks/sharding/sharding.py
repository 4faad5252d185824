#!/usr/bin/env python3
"""A cold book lowered by N concurrent shards, against one machine lowering it whole.

A generated book of a few dozen variants (three kernels in the styles TileLang users
write, swept over num_stages, tile sizes and two targets) is lowered from empty caches:

* ``one``: ``tlstages lower-book --shard 1/1`` with ``--jobs`` workers;
* ``shards``: ``tlstages lower-book --shard I/N`` for I = 1..N at once, one worker each,
  writing a shared ``file://`` cache as a CI matrix writes a bucket.

Each shard's CPU is read from ``/proc`` every tenth of a second, summed over its session
(the command, its fork server and every worker forked from it), so TileLang's import and
Sphinx's reading in every shard are counted; a process's last tenth may be missed. The
balance is the largest shard's cost over the mean, by CPU and by the seconds of lowering
the shard's summary reports (goal: at most 1.2). On a 2-CPU machine N shards cannot run
more than twice as fast as one machine, whatever N: the wall times say what the machine
allows, the per-shard CPU what a matrix of N runners would take each.

    python benchmarks/sharding/sharding.py [--shards 2 4] [--jobs 2] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from sphinx_tlstages.core.plan import shards  # noqa: E402
from tests.conftest import write_project  # noqa: E402
from tests.kernels import rst  # noqa: E402
from tests.shard_book import ROW_SUM, SCALED_GEMM, TILE_GEMM  # noqa: E402

GOAL = 1.2
METER: CpuMeter
SUMMARY = re.compile(r"shard (\d+)/(\d+): (\d+) variants, (\d+) already cached, (\d+) lowered "
                     r"\((\d+) s in workers\), (\d+) failed")


def book() -> dict[str, str]:
    """Four pages, 30 variants."""
    gemm = "M=512 N=512 K=512"
    return {
        "index.rst": "Generated\n=========\n\n.. toctree::\n\n   gemm\n   rows\n   scaled\n",
        "gemm.rst": "GEMM\n====\n\n"
        + rst(TILE_GEMM, name="gemm-80", num_stages="1 2 3 4", params=gemm,
              sweep="block=64,128")
        + "\n" + rst(TILE_GEMM, name="gemm-90", num_stages="1 2 3", params=gemm + " block=128",
                     target="sm_90a"),
        "rows.rst": "Rows\n====\n\n"
        + rst(ROW_SUM, name="rows", num_stages="1 2 3 4", params="rows=256",
              sweep="width=128,256"),
        "scaled.rst": "Scaled\n======\n\n"
        + rst(SCALED_GEMM, name="scaled", num_stages="2 3 4", params=gemm,
              sweep="block_K=32,64")
        + "\n" + rst(SCALED_GEMM, name="scaled-90", num_stages="2 3 4", params=gemm,
                     sweep="block_K=32", target="sm_90a"),
    }


class CpuMeter:
    """CPU seconds of every process in the sessions of interest, polled from ``/proc``
    (a worker forked by a fork server is no child this process could wait for)."""

    def __init__(self) -> None:
        self.ticks: dict[int, dict[int, int]] = {}  # session -> pid -> utime + stime
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()

    def watch(self, session: int) -> None:
        self.ticks.setdefault(session, {})

    def _poll(self) -> None:
        while not self._stop.wait(0.1):
            for stat in Path("/proc").glob("[0-9]*/stat"):
                try:
                    # The fields after the command's closing parenthesis: state is 3rd.
                    fields = stat.read_text().rsplit(")", 1)[1].split()
                except (OSError, IndexError):
                    continue
                session, used = int(fields[3]), int(fields[11]) + int(fields[12])
                if session in self.ticks:
                    pid = int(stat.parent.name)
                    self.ticks[session][pid] = max(used, self.ticks[session].get(pid, 0))

    def seconds(self, session: int) -> float:
        self._stop.set()
        self._thread.join()
        return round(sum(self.ticks.get(session, {}).values()) / os.sysconf("SC_CLK_TCK"), 1)

    def restart(self) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()


def start(srcdir: Path, shard: str, cache: Path, url: str, jobs: int) -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), TLSTAGES_CACHE_DIR=str(cache),
               TLSTAGES_CACHE_URL=url, TLSTAGES_CACHE_WRITE="1", TLSTAGES_JOBS=str(jobs))
    for name in ("CI", "TLSTAGES_KEEP_WORKERS", "GITHUB_EVENT_NAME"):
        env.pop(name, None)
    # A session of its own (its id: the pid), which its fork server and workers share.
    proc = subprocess.Popen([sys.executable, "-m", "sphinx_tlstages", "lower-book",
                             str(srcdir), "--shard", shard], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    METER.watch(proc.pid)
    return proc


def finish(proc: subprocess.Popen[str], started: float) -> dict[str, object]:
    """Wait for ``proc``: its wall time and summary (its CPU: :class:`CpuMeter`)."""
    out, err = proc.communicate()
    wall = time.perf_counter() - started
    found = SUMMARY.search(out)
    if proc.returncode or found is None:
        raise SystemExit(f"a shard failed ({proc.returncode}):\n{out}\n{err}")
    return {"summary": found.group(0), "variants": int(found.group(3)),
            "lowered": int(found.group(5)), "lowering_s": int(found.group(6)),
            "wall_s": round(wall, 1), "session": proc.pid}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shards", type=int, nargs="+", default=[2, 4])
    parser.add_argument("--jobs", type=int, default=2, help="workers of the one machine")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    global METER
    METER = CpuMeter()
    with tempfile.TemporaryDirectory(prefix="tlstages-shards-") as tmp:
        work = Path(tmp)
        write_project(work / "src", book())
        started = time.perf_counter()
        one = finish(start(work / "src", "1/1", work / "one-cache",
                           (work / "one-remote").as_uri(), args.jobs), started)
        one["cpu_s"] = METER.seconds(int(str(one.pop("session"))))
        runs = [sharded(work, count, float(str(one["wall_s"]))) for count in args.shards]
    result = {
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
        "variants": one["variants"],
        "one_machine": one,
        "sharded": runs,
        "goal_balance": GOAL,
    }
    text = json.dumps(result, indent=1)
    print(text)
    if args.json:
        args.json.write_text(text + "\n", encoding="utf-8")


def sharded(work: Path, count: int, one_wall: float) -> dict[str, object]:
    """``count`` shards at once from empty caches, into a shared folder of their own."""
    METER.restart()
    started = time.perf_counter()
    running = [start(work / "src", f"{i}/{count}", work / f"n{count}-cache-{i}",
                     (work / f"n{count}-shared").as_uri(), 1) for i in range(1, count + 1)]
    each = [finish(proc, started) for proc in running]
    wall = round(time.perf_counter() - started, 1)
    for shard in each:
        shard["cpu_s"] = METER.seconds(int(str(shard.pop("session"))))
    cpu = [float(str(s["cpu_s"])) for s in each]
    lowering = [float(str(s["lowering_s"])) for s in each]
    return {
        "shards": count,
        "wall_s": wall,
        "wall_ratio_one_over_shards": round(one_wall / wall, 2),
        "cpu_s": round(sum(cpu), 1),
        "balance_cpu": round(max(cpu) / (sum(cpu) / len(cpu)), 3),
        "balance_lowering": round(max(lowering) / (sum(lowering) / len(lowering)), 3),
        "balance_estimated": _estimates(work / "src", count),
        "each": each,
    }


def _estimates(srcdir: Path, count: int) -> float:
    """The split's own balance, by the estimates it balances."""
    from sphinx_tlstages.core.results.stamps import tilelang_stamp
    from sphinx_tlstages.ext.project import read_directives

    stamp = tilelang_stamp() or "missing"  # the keys the shards split by
    variants = {v.key(stamp): v for spec in read_directives(srcdir) for v in spec.variants}
    where = shards.assign(variants, stamp, count)
    loads = [sum(shards.estimate(v) for k, v in variants.items() if where[k] == i)
             for i in range(1, count + 1)]
    return round(max(loads) / (sum(loads) / count), 3)


if __name__ == "__main__":
    main()
