"""Checking each directive against its golden snapshot, after the batch has lowered.

What is written, failed or noted is the snapshot policy's decision
(:mod:`...core.records.snapshot_policy`); this module only gathers what it decides on
(the recorded snapshot, this build's), lowers again where the decision needs the pass
fingerprints, and carries the decision out: the files written, the findings reported
(:class:`..findings.Findings`, whose count of errors fails the build at its end, without
``-W``). Every directive is checked, so one build reports every drift, not only the first.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...core.plan.spec import DirectiveSpec, Unread
from ...core.records import snapshots
from ...core.records.snapshot_policy import (
    Action,
    Counted,
    Fail,
    Found,
    Note,
    Policy,
    Recorded,
    Remove,
    Sources,
    Unused,
    Write,
    accept_command,
    decide,
    leftovers,
)
from ...core.results.result import Result
from ..findings import Findings
from ..lowering.batch import lower_with_fingerprints
from ..state import settings

if TYPE_CHECKING:
    from sphinx.application import Sphinx

    from ..state import BuildState


def check_snapshots(app: Sphinx, specs: list[DirectiveSpec], unread: list[Unread],
                    state: BuildState, shared: frozenset[str] = frozenset()) -> None:
    """Compare, record or update every directive's snapshot, as the policy decides:
    ``specs`` (each name once), the directives that could not be read (``unread``: their
    snapshots are only read), and the names several directives share (``shared``: their
    snapshots are left alone, the duplicates reported as errors)."""
    config = settings(app)
    policy = Policy(config.snapshot_mode, config.strict)
    if not policy.checks:
        return
    srcdir, folder = Path(app.srcdir), config.snapshot_dir
    accept = accept_command(srcdir, here=True)
    findings = state.findings
    if findings.report is None:
        findings.start(app, len(specs), config.strict)
    for spec in specs:
        found = _found(spec, state, folder, srcdir)
        decision = decide(policy, found, accept)
        _carry_out(findings, spec, decision.before)
        if decision.fingerprints and found.new is not None:
            taken = _fingerprinted(app, state, spec, found.new)
            if taken is not found.new:  # lowered again: decided on the snapshot with them
                decision = decide(policy, replace(found, new=taken), accept)
        _carry_out(findings, spec, decision.after)
    names = {spec.name for spec in specs} | shared
    for directive in unread:
        if directive.name is None or directive.name in names:
            continue  # a name in error is no snapshot's; one in use is checked there
        names.add(directive.name)
        stand_in = _stand_in(directive)
        golden = snapshots.golden_path(folder, directive.name)
        try:
            old = snapshots.load(golden)
        except ValueError:
            old = None  # whatever it holds is kept as it is
        found = Found(stand_in, golden, snapshots.report_path(golden, srcdir), old, None,
                      read=False)
        _carry_out(findings, stand_in, decide(policy, found, accept).before)
    # The environment holds every document's directives even when sphinx-build was given
    # a list of files (unchanged documents come from the pickle), so this never misreports.
    env = app.env

    def place(docname: str, line: int) -> str:
        return f"{Path(str(env.doc2path(docname, False))).as_posix()}:{line}"

    # Where a :name: is in error, the snapshot it meant cannot be told.
    unnamed = [place(d.docname, d.problem.line) for d in unread if d.name is None]
    unnamed += [place(spec.docname, p.line) for spec in specs for p in spec.problems
                if p.message.startswith(":name:")]
    sources = Sources(tuple(sorted(Path(str(env.doc2path(doc, False))).as_posix()
                                   for doc in env.found_docs)), tuple(unnamed))
    _carry_out(findings, None, leftovers(policy, snapshots.stored(folder), names, srcdir,
                                         sources))


def _stand_in(directive: Unread) -> DirectiveSpec:
    """A spec for a directive that could not be read: its name and place, and why."""
    assert directive.name is not None
    return DirectiveSpec(name=directive.name, docname=directive.docname,
                         lineno=directive.lineno, kernel_line=None, kernel_path=None,
                         title="", targets=(), variants=(), show=(), diff="",
                         problems=(directive.problem,))


def _results(spec: DirectiveSpec, state: BuildState) -> dict[str, Result]:
    return {v.id: state.result(v) for v in spec.variants}


def _found(spec: DirectiveSpec, state: BuildState, folder: Path, srcdir: Path) -> Found:
    """Directive ``spec``'s recorded snapshot and this build's, for the policy: the
    recorded one is read only where this build verified every variant."""
    golden = snapshots.golden_path(folder, spec.name)
    shown = snapshots.report_path(golden, srcdir)  # as the report names it
    results = _results(spec, state)
    new = snapshots.build(spec, results, state.version)
    if new is None or any(r.get("from_snapshot") for r in results.values()):
        return Found(spec, golden, shown, None, None)
    failed = {key: f"failed to lower ({r['error']['kind']}): {r['error']['message']}"
              for key, r in results.items() if not r.get("ok") and key not in new["variants"]}
    try:
        return Found(spec, golden, shown, snapshots.load(golden), new, failed=failed)
    except ValueError as exc:
        return Found(spec, golden, shown, None, new, unreadable=str(exc), failed=failed)


def _fingerprinted(app: Sphinx, state: BuildState, spec: DirectiveSpec,
                   new: dict[str, Any]) -> dict[str, Any]:
    """``new``, the snapshot of ``spec``, with every variant's pass fingerprints: the
    variants lowered without them (where no snapshot was to be written) are lowered again
    (:func:`..lowering.batch.lower_with_fingerprints`) before it is written or a drift in
    it explained."""
    if not lower_with_fingerprints(app, state, spec):
        return new
    return snapshots.build(spec, _results(spec, state), state.version) or new


def _carry_out(findings: Findings, spec: DirectiveSpec | None,
               actions: tuple[Action, ...] | list[Action]) -> None:
    """Take the policy's ``actions`` in order: files written or removed, findings said
    (at directive ``spec``'s lines) and added to the report."""
    report = findings.report
    assert report is not None  # begun by check_snapshots
    for action in actions:
        if isinstance(action, Write):
            if snapshots.write(action.path, action.snapshot) and action.rewritten:
                findings.note(action.rewritten)
        elif isinstance(action, Remove):
            action.path.unlink(missing_ok=action.missing_ok)
        elif isinstance(action, Note):
            findings.note(action.message, location=None if action.line is None or spec is None
                          else (spec.docname, action.line),
                          spec=spec if action.drift else None, drift=action.drift)
        elif isinstance(action, Fail):
            assert spec is not None
            findings.error(action.message, "snapshot", (spec.docname, spec.lineno), spec=spec,
                           drift=action.drift, versions=action.versions)
        elif isinstance(action, Recorded):
            report.new_snapshots.append(action.shown)
        elif isinstance(action, Counted):
            report.variants_verified += action.variants
            report.variants_drifted += action.drifted
            report.recorded(action.recorded_with)
        elif isinstance(action, Unused):
            report.unused_snapshots.append(action.shown)
            findings.warn(action.message, "snapshot")
        else:
            raise TypeError(f"not a snapshot action: {action!r}")
