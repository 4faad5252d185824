"""``tlstages report --pass SRCDIR``: the IR diff of the pass a drift names.

For each variant of the last report whose drift names its first changed pass, the
variant is lowered again with this TileLang, keeping what that pass run did (the IR
before and after it, as ``:passes:`` keeps it), and the diff is printed. The recorded
side's IR is looked for in the local cache (a result of the same variant whose pass
fingerprints are the recorded ones, holding that run's diff): where it is not there, the
output says so; ``tlstages upgrade-check`` lowers both sides when the drift came with
another TileLang.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..core.records import snapshots
from ..core.records.drift import Report
from ..core.results.result import Result
from ..runner.launch import Job
from ..runner.pool import run_jobs

_NAMED = re.compile(r"^first changed by (\S+#\d+)")


def _named(report: Report) -> Iterator[tuple[str, str, str]]:
    """(directive, variant heading, pass run) of each drift that names its pass."""
    for entry in report.listed():
        for finding in entry.ordered():
            match = _NAMED.match(finding.words) if finding.kind == "cause" else None
            if match:
                yield entry.name, finding.variant, match[1]


def _cached(cache: Path, recorded: object, run: str) -> str | None:
    """The recorded side's diff of ``run``: a cached result with the recorded
    fingerprints that kept it (lowered with :passes: naming it)."""
    if not isinstance(recorded, list) or not cache.is_dir():
        return None
    for path in sorted(cache.glob("??/*.json")):
        try:
            result = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(result, dict) and result.get("pass_fingerprints") == recorded:
            diff = (result.get("pass_diffs") or {}).get(run)
            if isinstance(diff, str):
                return diff
    return None


def print_pass_diffs(report: Report, srcdir: Path, cache: Path | None) -> None:
    """Print, per drift that names its pass, that pass's IR diff on each side known."""
    from ..ext.project import read_project, snapshot_folder

    wanted = list(_named(report))
    if not wanted:
        print("\nNo drift in this report names a first changed pass.")
        return
    specs = {spec.name: spec for spec in read_project(srcdir)[0]}
    folder = snapshot_folder(srcdir)
    jobs: list[Job] = []
    asked: dict[str, tuple[str, str, str, str]] = {}
    for name, heading, run in wanted:
        spec = specs.get(name)
        variant = next((v for v in spec.variants if snapshots.describe(v.id) == heading),
                       None) if spec else None
        if spec is None or variant is None:
            print(f"\n{name}, {heading}: no longer in the book at {srcdir}")
            continue
        task = dataclasses.replace(variant.task(), ir_passes=(run,), record_passes=True,
                                   toolkit=None)
        jobs.append(Job(str(len(jobs)), task, float(spec.timeout or 600.0)))
        asked[jobs[-1].id] = (name, heading, run, variant.id)
    found: dict[str, Result] = {}
    run_jobs(jobs, 1, lambda job, result: found.__setitem__(job.id, result))
    for job_id, (name, heading, run, key) in asked.items():
        print(f"\n## {name}, {heading}: {run}")
        golden = snapshots.load(snapshots.golden_path(folder, name)) or {"variants": {}}
        recorded: Any = golden["variants"].get(key, {}).get("pass_fingerprints")
        old = _cached(cache, recorded, run) if cache is not None else None
        print(f"\nRecorded side ({golden.get('tilelang')}):")
        print(old if old else "  its IR is not in the local cache (a cache keeps the IR of "
              "a pass only where :passes: names it); tlstages upgrade-check --python "
              "<an environment with that TileLang> lowers both sides")
        result: Result | dict[str, Any] = found.get(job_id, {})
        diff = (result.get("pass_diffs") or {}).get(run) if result.get("ok") else None
        print("\nThis build's side:")
        print(diff if diff else f"  {run} does not change the IR here (or no longer runs)"
              if result.get("ok") else f"  failed to lower: {result.get('error')}")
