"""Checking each directive against its golden snapshot, after the batch has lowered.

A drift is an error at the directive's line, with what changed in words and the command
that accepts it; the build exits non-zero at the end (``build-finished``) without ``-W``.
Every directive is checked, so one build reports every drift, not only the first.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...core.records import drift, snapshot_compare, snapshots
from ...core.records.drift import Finding
from ...core.results.pass_compare import moved, numbered
from ...core.results.result import Result
from ..findings import Findings
from ..lowering.batch import lower_with_fingerprints
from ..state import settings

if TYPE_CHECKING:
    from sphinx.application import Sphinx

    from ...core.plan.spec import DirectiveSpec
    from ..state import BuildState

def _accept_hint(app: Sphinx) -> str:
    srcdir = str(app.srcdir)
    try:
        relative = os.path.relpath(srcdir)
        srcdir = srcdir if relative.startswith("..") else relative
    except ValueError:  # another drive on Windows
        pass
    return f"tlstages snapshots accept {srcdir}"


def _results(spec: DirectiveSpec, state: BuildState) -> dict[str, Result]:
    return {v.id: state.result(v) for v in spec.variants}


def check_snapshots(app: Sphinx, specs: list[DirectiveSpec], state: BuildState) -> None:
    """Compare, record or update every directive's snapshot, per the mode."""
    config = settings(app)
    mode, strict, folder = config.snapshot_mode, config.strict, config.snapshot_dir
    if mode == "off":
        return
    writes = mode == "update" or (mode == "auto" and not strict)
    hint = _accept_hint(app)
    findings = state.findings
    report = findings.report or findings.start(app, len(specs), strict)
    srcdir = Path(app.srcdir)
    for spec in specs:
        location = (spec.docname, spec.lineno)
        golden = snapshots.golden_path(folder, spec.name)
        shown = _relative(golden, srcdir)  # as the report names it: no machine path
        pending = snapshots.pending_path(folder, spec.name)
        results = _results(spec, state)
        new = snapshots.build(spec, results, state.version)
        if new is None or any(r.get("from_snapshot") for r in results.values()):
            if strict:
                _fail(findings, spec, f"{spec.name}: not verified against its snapshot: "
                      "TileLang could not lower every variant here",
                      Finding("unverified", "", "not verified against its snapshot: TileLang "
                              "could not lower every variant here"))
            continue
        try:
            old = snapshots.load(golden)
        except ValueError as exc:
            _fail(findings, spec, f"{spec.name}: {exc}",
                  Finding("broken", "", str(exc).replace(str(golden), shown)))
            continue
        if old is None and not new["variants"]:
            continue  # nothing lowered: each failure is reported, nothing is recorded
        if old is None:
            if writes:
                snapshots.write(golden, _fingerprinted(app, state, spec, new))
                report.new_snapshots.append(shown)
                findings.note(f"tl-pipeline: recorded snapshot {golden}")
            else:
                _fail(findings, spec, f"{spec.name}: no snapshot at {golden}; record it "
                      "with TLSTAGES_SNAPSHOTS=update",
                      Finding("missing", "", f"no snapshot at {shown}"))
            continue
        # A variant the snapshot lacks while the directive's inputs are as recorded had
        # not lowered then, or is a depth added since: recorded, not drift. Where the
        # inputs changed (another sweep or params), it is part of that drift: "new".
        if mode != "update" and not snapshot_compare.input_changes(old, new):
            if writes and snapshots.added(old, new):
                new = _fingerprinted(app, state, spec, new)
            old, unrecorded = _record_added(findings, spec, old, new, writes, golden)
            if unrecorded:
                _fail(findings, spec, f"{spec.name}: {golden} has no record of {unrecorded}; "
                      "record it where the docs are written: TLSTAGES_SNAPSHOTS=update, or "
                      f"{hint} after a local build",
                      Finding("missing", "", f"no record of {unrecorded} in {shown}"))
        _note_moved_runs(findings, spec, old, new)
        version, changes = snapshot_compare.compare(old, new)
        lacking = snapshots.unguarded(spec, old, golden)
        report.variants_verified += len(new["variants"])
        report.recorded(old.get("tilelang"))
        # The shown facts the snapshot does not guard, as the report words it (the path
        # relative to the sources); said with the drift, or on its own below.
        said = snapshots.unguarded(spec, old, Path(shown))
        unguarded = [Finding("unguarded", "", said.split(": ", 1)[1])] if said else []
        if not changes and not lacking:
            pending.unlink(missing_ok=True)
            if mode == "update" and snapshots.write(golden,
                                                    _fingerprinted(app, state, spec, new)):
                findings.note(f"tl-pipeline: {spec.name}: snapshot re-recorded with "
                              f"TileLang {new.get('tilelang')}")
            elif version or old.get("schema") != new.get("schema"):
                # Provenance, reported and never failed: the reader sees the same thing.
                findings.note(f"tl-pipeline: {spec.name}: recorded with TileLang "
                              f"{old.get('tilelang')} (result schema {old.get('schema')}), "
                              f"verified with TileLang {new.get('tilelang')}: same facts "
                              "and code")
            continue
        # Written (the golden file, or the pending one accept fills it in from) or
        # explained (which pass made the change): with the variants' pass fingerprints.
        new = _fingerprinted(app, state, spec, new)
        if mode == "update":
            snapshots.write(golden, new)
            pending.unlink(missing_ok=True)
            findings.note(f"tl-pipeline: updated snapshot {golden}")
            continue
        if not strict:
            snapshots.write(pending, new)
        if not changes:
            # Counted as a missing snapshot is: recorded where the docs are written (the
            # pending file, which accept fills in), an error where they are published.
            assert lacking is not None
            if strict:
                _fail(findings, spec, f"{lacking}; record it where the docs are written: "
                      f"TLSTAGES_SNAPSHOTS=update, or {hint} after a local build", *unguarded)
            else:
                findings.note(f"tl-pipeline: {lacking}; fill it in with: {hint}",
                              location=location, spec=spec, drift=unguarded)
            continue
        lines = [f"{spec.name}: the lowering no longer matches {golden}"]
        if version:
            lines.append(f"  recorded with {version.replace(' -> ', ', built with ')}; what "
                         "changed for a reader:")
        # What changed, worked out once for the causes, the count and the report.
        found = snapshot_compare.changes(old, new)
        why = dict(drift.causes(old, new, found))
        for stages, change in changes:
            lines.append(f"  {snapshots.describe(stages)}: {change}" if stages
                         else f"  {change}")
            if stages in why:  # the compiler's side of it: which pass made the change
                lines.append(f"    why: {why[stages]}")
        if lacking:
            lines.append(f"  and {lacking.split(': ', 1)[1]}")
        lines.append(f"  accept it with: {hint}" if not strict else
                     "  accept it where the docs are written: "
                     f"{hint} (after a local build) or TLSTAGES_SNAPSHOTS=update")
        report.variants_drifted += drift.drifted_variants(old, new, found)
        _fail(findings, spec, "\n".join(lines), *unguarded,
              *drift.drift_findings(old, new, found),
              versions=snapshot_compare.version_change(old, new))
    _report_unused(findings, folder, {spec.name for spec in specs}, mode, srcdir)


def _fingerprinted(app: Sphinx, state: BuildState, spec: DirectiveSpec,
                   new: dict[str, Any]) -> dict[str, Any]:
    """``new``, the snapshot of ``spec``, with every variant's pass fingerprints: the
    variants lowered without them (where no snapshot was to be written) are lowered again
    (:func:`..lowering.batch.lower_with_fingerprints`) before it is written or a drift in
    it explained."""
    if not lower_with_fingerprints(app, state, spec):
        return new
    return snapshots.build(spec, _results(spec, state), state.version) or new


def _record_added(findings: Findings, spec: DirectiveSpec, old: dict[str, Any],
                  new: dict[str, Any], writes: bool,
                  golden: Path) -> tuple[dict[str, Any], str | None]:
    """Record the variants the snapshot lacks (they had not lowered, or are new depths),
    where snapshots are written. Return the snapshot to compare with, which has them,
    and the ones it lacks where nothing may be written (``num_stages=1``), else None."""
    keys = snapshots.added(old, new)
    if not keys:
        return old, None
    said = ", ".join(snapshots.describe(key) for key in keys)
    recorded = snapshots.with_added(old, new, keys)
    if not writes:
        return recorded, said
    snapshots.write(golden, recorded)
    findings.note(f"tl-pipeline: {spec.name}: recorded {said} in {golden} (not in it "
                  "before: it had not lowered, or is new)", location=(spec.docname, spec.lineno))
    return recorded, None


def _note_moved_runs(findings: Findings, spec: DirectiveSpec, old: dict[str, object],
                     new: dict[str, object]) -> None:
    """A note at the option's line where ``Simplify#3`` names another run than it did in
    the pipeline the snapshot was recorded with (a release added or dropped a run before
    it). A note, not a failure: what the page shows is checked by the snapshot itself.
    Both snapshots hold their pipeline only where the directive names a run by number."""
    recorded, now = old.get("pass_pipeline"), new.get("pass_pipeline")
    if not isinstance(recorded, list) or not isinstance(now, list) or not now:
        return
    lines = [(spec.passes_line or spec.lineno, numbered(spec.passes, ()))]
    lines += [(line, numbered((), (expression,))) for line, expression in spec.asserts]
    for line, selectors in lines:
        for selector in selectors:
            said = moved(selector, recorded, now)
            if said:
                findings.note(f"tl-pipeline: {spec.name}: {selector} {said} when the "
                              f"snapshot was recorded (TileLang {old.get('tilelang')}); check "
                              "that it names the run you meant (a bare pass name names every "
                              "run)", location=(spec.docname, line))


def _relative(path: Path, srcdir: Path) -> str:
    """A snapshot's path as a report shows it: relative to the source folder."""
    try:
        return path.relative_to(srcdir).as_posix()
    except ValueError:  # tlstages_snapshot_dir outside the sources: its name
        return path.name


def _report_unused(findings: Findings, folder: Path, used: set[str], mode: str,
                   srcdir: Path) -> None:
    # The environment holds every document's directives even when sphinx-build was given
    # a list of files (unchanged documents come from the pickle), so this never misreports.
    for name, path, pending in snapshots.stored(folder):
        if name in used:
            continue
        if mode == "update":
            path.unlink()
            findings.note(f"tl-pipeline: removed unused snapshot {path}")
        elif not pending:
            if findings.report is not None:
                findings.report.unused_snapshots.append(_relative(path, srcdir))
            findings.warn(f"snapshot {path} belongs to no tl-pipeline directive; "
                          "TLSTAGES_SNAPSHOTS=update removes it", "snapshot")


def _fail(findings: Findings, spec: DirectiveSpec, message: str, *drift: Finding,
          versions: str | None = None) -> None:
    """A snapshot check failed at the directive's line: said, reported, counted."""
    findings.error(message, "snapshot", (spec.docname, spec.lineno), spec=spec, drift=drift,
                   versions=versions)
