"""``tlstages report [BUILDDIR]`` and ``tlstages snapshots diff SRCDIR``: the drift report
from the terminal, of the last build or of the pending snapshots.

``report`` reads a build's JSON back (:func:`..core.records.drift.from_json`) and renders
it in any format; ``snapshots diff`` builds the same sections from the golden and pending
files, with the ``:assert:`` claims checked on the facts a snapshot keeps for them.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..core.claims import check, namespace, one_line
from ..core.plan.spec import DirectiveSpec
from ..core.records import drift_render, snapshots
from ..core.records.drift import Directive, Report, add_drift, from_json
from ..core.records.places import searched
from ..core.records.snapshot_policy import accept_command
from ..core.results.stamps import tilelang_version
from ..ext.checks.drift_report import JSON
from ..ext.project import conf_values, read_project, snapshot_folder


def said(report: Report, form: str) -> str:
    if form == "json":
        return report.as_json()
    return drift_render.markdown(report) if form == "markdown" else drift_render.plain(report)


def find_reports(places: Sequence[Path]) -> list[Path]:
    """The reports under ``places`` (doctree or build folders), newest first."""
    found: set[Path] = set()
    for place in searched(places):
        for depth in ("", "*/", "*/*/", "*/*/*/"):
            found.update(p.resolve() for p in place.glob(f"{depth}{JSON}") if p.is_file())
    return sorted(found, key=lambda p: p.stat().st_mtime, reverse=True)


def last_report(places: Sequence[Path], form: str, pass_srcdir: Path | None = None) -> int:
    """Print the newest build's report (then, with ``pass_srcdir``, the IR diff of each
    first changed pass it names); 1 when there is none."""
    if not places:
        places = [Path("_build"), *(conf.parent / "_build" for conf in sorted(
            Path(".").glob("*/conf.py")))]
    found = find_reports(places)
    if not found:
        print(f"no tl-pipeline report under {', '.join(map(str, places))}: build the docs "
              "first, or name the build folder", file=sys.stderr)
        return 1
    try:
        report = from_json(found[0].read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        print(f"{found[0]}: {exc}", file=sys.stderr)
        return 1
    sys.stdout.write(said(report, form))
    if pass_srcdir is not None:
        from .pass_diff import print_pass_diffs

        # The build's local cache: the variable's, else the default beside the report.
        cache = os.environ.get("TLSTAGES_CACHE_DIR")
        print_pass_diffs(report, pass_srcdir.resolve(),
                         Path(cache) if cache else found[0].parent / "tlstages-cache")
    return 0


def pending_report(srcdir: Path) -> Report:
    """The report of the pending snapshots, as the build that left them said it: what
    changed, the ``:assert:`` claims that fail, what a snapshot does not guard, what is
    missing or unused (the benchmark numbers need a build)."""
    specs, sources = read_project(srcdir)
    folder = snapshot_folder(srcdir)
    conf = conf_values(srcdir)
    base, suffix = str(conf.get("html_baseurl") or ""), conf.get("html_file_suffix") or ".html"
    report = Report("", accept_command(srcdir), directives_total=len(specs),
                    built_with=tilelang_version(), pending=0)
    names = {spec.name for spec in specs}
    for spec in specs:
        url = f"{base.rstrip('/')}/{spec.docname}{suffix}" + (
            f"#{spec.node_id}" if spec.node_id else "") if base else None
        here = report.directive(spec.name, sources[spec.docname], spec.lineno, url)
        golden = snapshots.golden_path(folder, spec.name)
        shown = snapshots.report_path(golden, srcdir)
        try:
            old = snapshots.load(golden)
            new = snapshots.load(snapshots.pending_path(folder, spec.name))
        except ValueError as exc:
            report.add(here, "broken", "", str(exc).replace(str(golden), shown))
            continue
        if old is None:
            report.add(here, "missing", "", f"no snapshot at {shown}")
            continue
        report.recorded(old.get("tilelang"))
        if new is not None:  # compared only where a build left what it lowered
            report.pending = (report.pending or 0) + 1
            report.variants_verified += len(new["variants"])
        if new is not None and new.get("tilelang"):
            report.built_with = str(new["tilelang"])
        lacking = snapshots.unguarded(spec, old, Path(shown))
        if lacking:
            report.add(here, "unguarded", "", lacking.split(": ", 1)[1])
        if new is not None:
            add_drift(report, here, old, new)
        _claims(report, here, spec, new or old)
    report.unused_snapshots = [snapshots.report_path(path, srcdir)
                               for name, path, pending in snapshots.stored(folder)
                               if not pending and name not in names]
    return report


def _claims(report: Report, here: Directive, spec: DirectiveSpec,
            snapshot: dict[str, Any]) -> None:
    """The ``:assert:`` claims, checked on the facts the snapshot keeps for them (it keeps
    every fact a claim reads), as the build checks them on the lowering."""
    for line, expression in spec.asserts:
        for variant in spec.variants:
            stored = snapshot["variants"].get(variant.id)
            result = None if stored is None else snapshots.as_result(stored, variant.num_stages)
            if result is None or not result.get("ok"):
                continue
            why = check(expression, namespace(result, variant, spec.kernel_line or 1))
            if why is not None:
                report.add(here, "assert", variant.heading,
                           f"{expression!r} {one_line(why)}", line)


def diff(srcdir: Path, form: str) -> int:
    """Print the report of the pending snapshots; 1 when it finds a drift."""
    report = pending_report(srcdir)
    sys.stdout.write(said(report, form))
    return 1 if report.failing() else 0
