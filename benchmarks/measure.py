#!/usr/bin/env python3
"""Run a command and report its wall time and the peak memory of its whole process tree.

    python benchmarks/measure.py [--label NAME] [--json FILE] -- COMMAND ...

The memory figure is the largest sum, over all processes descended from the command, of
their resident set sizes, sampled every 0.1 s (Linux /proc): what a build machine's
memory limit sees, workers included.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            tree.setdefault(ppid, []).append(int(entry.name))
    return tree


def _rss_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def tree_rss_mib(root: int) -> float:
    tree, total, todo = _children(), 0, [root]
    while todo:
        pid = todo.pop()
        total += _rss_kib(pid)
        todo.extend(tree.get(pid, []))
    return total / 1024


def measure(command: list[str]) -> tuple[int, float, float]:
    started = time.perf_counter()
    proc = subprocess.Popen(command)
    peak = 0.0
    while proc.poll() is None:
        peak = max(peak, tree_rss_mib(proc.pid))
        time.sleep(0.1)
    return proc.returncode, time.perf_counter() - started, peak


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--label", default="command")
    parser.add_argument("--json", type=Path)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    code, seconds, peak = measure(command)
    print(f"{args.label}: {seconds:.1f} s, peak memory {peak:.0f} MiB (exit {code})",
          file=sys.stderr)
    if args.json:
        figures = json.loads(args.json.read_text()) if args.json.exists() else {}
        figures[args.label] = {"seconds": round(seconds, 1), "peak_mib": round(peak),
                               "exit": code}
        args.json.write_text(json.dumps(figures, indent=1, sort_keys=True) + "\n")
    return code


if __name__ == "__main__":
    sys.exit(main())
