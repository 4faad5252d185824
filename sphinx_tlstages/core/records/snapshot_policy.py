"""The snapshot policy: what a build does with each directive's snapshot, decided once.

A :class:`Policy` is made once per build from the mode (``TLSTAGES_SNAPSHOTS``:
``auto``, ``check``, ``update`` or ``off``) and whether the build is strict (``CI``, Read
the Docs): what it may write, what fails it and what it only notes. :func:`decide` applies
it to one directive, the snapshot it has recorded and this build's (a :class:`Found`), and
returns a :class:`Decision`: the :class:`Action` s to take, in the order they are taken.
It is pure (no file is read or written, nothing is said): ``ext/checks/snapshots.py``
gathers what :class:`Found` holds, carries the actions out (writes the files, reports the
findings, which fail the build through its count of errors) and lowers again where the
decision needs the pass fingerprints. :func:`leftovers` decides the same of the files
no directive has.

The modes, as this module reads them:

- ``auto`` (the default): where the docs are written, what has no record yet (a new
  snapshot, a variant added since) is recorded, and a drift leaves this build's snapshot
  pending beside the golden one (``tlstages snapshots accept`` takes it); under ``CI``
  nothing is written, and what has no record fails.
- ``check``: nothing is recorded (what has no record fails); a drift leaves its pending
  file where the docs are written, none under ``CI``.
- ``update``: every snapshot is re-recorded (a drift is accepted, not failed), and those
  no directive has are removed.
- ``off``: no snapshot is read or written.

Whatever the mode, a drift fails (but in ``update``), and so does an unreadable snapshot;
a strict build also fails on a directive it could not verify and on a shown fact the
snapshot does not keep (elsewhere that is a note, which the pending file fills in).

A typo costs no snapshot. A directive *in error* (an option said and ignored or cut to its
good part) or *unread* (it could not be read at all) has its snapshot only read, whatever
the mode: nothing is written to it or removed from it, and each variant it records that
the build cannot show fails, naming why (:attr:`Found.in_error`). So does, in every mode,
a recorded variant the directive still asks for that failed to lower: its record is kept.
What a directive no longer asks for is a drift, which ``update`` accepts. A change only in
the hazard check's words, with the same verdict and findings, is a note that ``update``
re-records (:func:`.snapshot_compare.reworded`). A snapshot is unused only when no
directive read has its name, and none is removed while a ``:name:`` is in error.

The accept command it words (:func:`accept_command`) is the one the drift report
prints and ``tlstages snapshots diff`` reports.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..plan.spec import DirectiveSpec
from ..results.pass_compare import moved, numbered
from . import drift, snapshot_compare, snapshots
from .drift import Finding

Snapshot = dict[str, Any]

# A variant the build could not verify (TileLang could not lower every variant here, or
# the page was built from the snapshot itself): the log's words, and the report's.
_UNVERIFIED = ("not verified against its snapshot: TileLang could not lower every "
               "variant here")


def accept_command(srcdir: Path, *, here: bool = False) -> str:
    """``tlstages snapshots accept book``: the source folder relative to the current one.
    Where it lies elsewhere, by its name (from the folder above it), never a path of this
    machine: the drift report's words, the same anywhere. ``here``: the build log's words,
    a command to paste on this machine: the folder as the system spells it, or its whole
    path where it lies elsewhere."""
    try:
        relative: str | None = os.path.relpath(srcdir)
    except ValueError:  # another drive on Windows
        relative = None
    if relative is not None and not relative.startswith(".."):
        shown = relative if here else Path(relative).as_posix()
    else:
        shown = str(srcdir) if here else srcdir.name
    return f"tlstages snapshots accept {shown}"


@dataclass(frozen=True)
class Policy:
    """What a build does with snapshots: made once from the mode and the strictness."""

    mode: str  # auto, check, update or off (ext/config.py validates it)
    strict: bool  # CI or Read the Docs: the last build of a change, which writes nothing

    @property
    def checks(self) -> bool:
        """Whether snapshots are read at all."""
        return self.mode != "off"

    @property
    def updates(self) -> bool:
        """Every snapshot re-recorded from this build: a drift is accepted, not failed,
        and a snapshot no directive has is removed."""
        return self.mode == "update"

    @property
    def writes(self) -> bool:
        """Whether this build records what has no record yet (a new snapshot, a variant
        added since) and so lowers with the pass fingerprints a snapshot keeps: ``update``,
        and ``auto`` where the docs are written. The directive asks it too
        (ext/directive.py)."""
        return self.updates or (self.mode == "auto" and not self.strict)

    @property
    def fails_on_missing(self) -> bool:
        """A snapshot or variant without a record fails where it is not recorded."""
        return not self.writes

    @property
    def fails_unverified(self) -> bool:
        """A directive TileLang could not lower here fails a strict build: what it
        publishes must have been checked."""
        return self.strict

    @property
    def fails_unguarded(self) -> bool:
        """A fact the page shows and the snapshot does not keep fails a strict build;
        elsewhere it is noted, and the pending file fills it in."""
        return self.strict

    @property
    def leaves_pending(self) -> bool:
        """A drift (or an unguarded fact) leaves this build's snapshot beside the golden
        one, for ``tlstages snapshots accept``: wherever the docs are written."""
        return not self.strict


@dataclass(frozen=True)
class Found:
    """One directive as the check finds it: where its snapshot lies (``golden``, the
    path the log names; ``shown``, as the report names it, relative to the sources), the
    snapshot recorded there, and this build's.

    Its state: read, and every option good; *in error* (an option reported and ignored
    or cut, ``spec.problems``); or *unread* (``read`` False: the directive could not be
    read at all, why in ``spec.problems``; ``new`` is None). While a directive is in error
    or unread, nothing is written to its snapshot or removed from it (:func:`decide`), and
    each variant it records that this build cannot show fails, naming why."""

    spec: DirectiveSpec
    golden: Path
    shown: str
    old: Snapshot | None  # None: none recorded (or not read: see ``new``)
    new: Snapshot | None  # None: this build could not verify every variant
    unreadable: str | None = None  # why the recorded file is not a snapshot
    # Why each variant the directive asks for and this build's snapshot lacks could not
    # be shown, by its id (its failure to lower, in words).
    failed: Mapping[str, str] = field(default_factory=dict)
    read: bool = True

    @property
    def pending(self) -> Path:
        return snapshots.pending_path(self.golden.parent, self.spec.name)

    @property
    def in_error(self) -> bool:
        """An option in error, or the directive unread: its snapshot is only read."""
        return bool(self.spec.problems) or not self.read


# The actions a decision is made of, carried out in order by ext/checks/snapshots.py.

@dataclass(frozen=True)
class Write:
    """Write ``snapshot`` to ``path``, unless the file holds it already. ``rewritten`` is
    said only where its bytes changed."""

    path: Path
    snapshot: Snapshot
    rewritten: str | None = None


@dataclass(frozen=True)
class Remove:
    """Remove the file at ``path`` (``missing_ok``: whether it may be gone already)."""

    path: Path
    missing_ok: bool = True


@dataclass(frozen=True)
class Note:
    """A note in the build log: at the directive's document line ``line`` (None: at no
    place); ``drift``: findings the drift report lists under the directive."""

    message: str
    line: int | None = None
    drift: tuple[Finding, ...] = ()


@dataclass(frozen=True)
class Fail:
    """An error at the directive's line, counted (the build fails at its end), with its
    findings for the drift report and the TileLang versions where they differ."""

    message: str
    drift: tuple[Finding, ...] = ()
    versions: str | None = None


@dataclass(frozen=True)
class Recorded:
    """A snapshot this build recorded, as the report names it."""

    shown: str


@dataclass(frozen=True)
class Counted:
    """Variants compared with the snapshot, those of them that drifted, and the TileLang
    the snapshot was recorded with: the report's verdict counts them."""

    variants: int
    drifted: int
    recorded_with: object


@dataclass(frozen=True)
class Unused:
    """A snapshot no directive has: a warning, and a line of the report."""

    message: str
    shown: str


Action = Write | Remove | Note | Fail | Recorded | Counted | Unused


@dataclass(frozen=True)
class Decision:
    """What to do for one directive: ``before``, then (where ``fingerprints``: the rest
    writes or explains this build's snapshot, so its variants take the pass fingerprints
    first; decided again on the snapshot that has them) ``after``. ``before`` never reads
    the fingerprints, so deciding again gives it unchanged."""

    before: tuple[Action, ...] = ()
    fingerprints: bool = False
    after: tuple[Action, ...] = ()


def decide(policy: Policy, found: Found, accept: str) -> Decision:
    """What ``policy`` does with directive ``found``: record, compare or update its
    snapshot, and what it says and fails on. ``accept``: the accept command, as the log
    words it."""
    early = _uncompared(policy, found, accept)
    if early is not None:
        return early
    assert found.old is not None and found.new is not None
    old, new, actions, split = _filled(policy, found, found.old, found.new, accept)
    return _compared(policy, found, old, new, actions, split, accept)


def _uncompared(policy: Policy, found: Found, accept: str) -> Decision | None:
    """The decision where there is nothing to compare (the directive unread, unverified,
    in error, its snapshot unreadable or missing); None where there is."""
    spec, old, new, golden, shown = found.spec, found.old, found.new, found.golden, found.shown
    if not found.read:
        return _unread(found)
    if new is None:
        if not policy.fails_unverified:
            return Decision()
        return Decision((Fail(f"{spec.name}: {_UNVERIFIED}",
                              (Finding("unverified", "", _UNVERIFIED),)),))
    if found.unreadable is not None:
        return Decision((Fail(f"{spec.name}: {found.unreadable}", (Finding(
            "broken", "", found.unreadable.replace(str(golden), shown)),)),))
    if found.in_error:
        return _in_error(policy, found, new, accept)
    if old is None:
        if not new["variants"]:
            return Decision()  # nothing lowered: each failure is reported, nothing recorded
        if policy.fails_on_missing:
            return Decision((Fail(f"{spec.name}: no snapshot at {golden}; record it with "
                                  "TLSTAGES_SNAPSHOTS=update",
                                  (Finding("missing", "", f"no snapshot at {shown}"),)),))
        return Decision(fingerprints=True, after=(
            Write(golden, new), Recorded(shown), Note(f"tl-pipeline: recorded snapshot {golden}")))
    return None


def _filled(policy: Policy, found: Found, old: Snapshot, new: Snapshot, accept: str
            ) -> tuple[Snapshot, Snapshot, list[Action], int | None]:
    """``old`` and ``new`` to compare, with the records a failed lowering keeps and the
    variants recorded since the snapshot was; the actions that says, and where the
    fingerprints are taken among them (None: not yet)."""
    spec, golden, shown = found.spec, found.golden, found.shown
    actions: list[Action] = []
    split: int | None = None  # where the fingerprints are taken, once
    # A recorded variant the directive still asks for and that failed to lower here keeps
    # its record, whatever the mode, and fails: a build's accident never costs a record.
    # (One the directive no longer asks for is a drift, which update accepts.)
    kept = _failed_records(found, old, new)
    if kept:
        new = {**new, "variants": {**new["variants"],
                                   **{k: old["variants"][k] for k in kept}}}
        actions.append(_unshown(found, kept, "its record is kept; fix the kernel, or drop "
                                "the variant from the directive (or list it in "
                                ":expect-error:) and update the snapshot"))
    # A variant the snapshot lacks while the directive's inputs are as recorded had not
    # lowered then, or is a depth added since: recorded, not drift. Where the inputs
    # changed (another sweep or params), it is part of that drift: "new".
    keys = snapshots.added(old, new)
    if not policy.updates and keys and not snapshot_compare.input_changes(old, new):
        said = ", ".join(snapshots.describe(key) for key in keys)
        old = snapshots.with_added(old, new, keys)
        if policy.fails_on_missing:
            actions.append(Fail(
                f"{spec.name}: {golden} has no record of {said}; record it where the docs "
                f"are written: TLSTAGES_SNAPSHOTS=update, or {accept} after a local build",
                (Finding("missing", "", f"no record of {said} in {shown}"),)))
        else:
            split = 0
            actions += [Write(golden, old),
                        Note(f"tl-pipeline: {spec.name}: recorded {said} in {golden} (not in "
                             "it before: it had not lowered, or is new)", spec.lineno)]
    return old, new, actions, split


def _compared(policy: Policy, found: Found, old: Snapshot, new: Snapshot,
              actions: list[Action], split: int | None, accept: str) -> Decision:
    """The decision on a snapshot and this build's: the same, reworded, unguarded or a
    drift, per the policy."""
    spec, golden, shown = found.spec, found.golden, found.shown
    actions += _moved_runs(spec, old, new)
    version, changes = snapshot_compare.compare(old, new)
    lacking = snapshots.unguarded(spec, old, golden)
    # The shown facts the snapshot does not guard, as the report words it (the path
    # relative to the sources); said with the drift, or on its own below.
    unkept = snapshots.unguarded(spec, old, Path(shown))
    unguarded = (Finding("unguarded", "", unkept.split(": ", 1)[1]),) if unkept else ()
    counted = Counted(len(new["variants"]), 0, old.get("tilelang"))
    words = snapshot_compare.reworded(old, new)
    if not changes and not lacking and words and not policy.updates:
        # This extension's sentences changed, not the compiler's facts: said, never
        # failed; the pending file (where the docs are written) lets accept take them.
        split = len(actions) if split is None else split
        actions += [counted, *([Write(found.pending, new)] if policy.leaves_pending else []),
                    _reworded(spec, words, golden, accept, policy)]
        return _split(actions, split)
    if not changes and not lacking:
        return _same(policy, found, old, new, actions, split, counted, version)
    # Written (the golden file, or the pending one accept fills it in from) or explained
    # (which pass made the change): with the variants' pass fingerprints.
    split = len(actions) if split is None else split
    if policy.updates:
        actions += [counted, Write(golden, new), Remove(found.pending),
                    Note(f"tl-pipeline: updated snapshot {golden}")]
        return _split(actions, split)
    if policy.leaves_pending:
        actions.append(Write(found.pending, new))
    if not changes:
        # Counted as a missing snapshot is: recorded where the docs are written (the
        # pending file, which accept fills in), an error where they are published.
        assert lacking is not None
        actions.append(counted)
        if policy.fails_unguarded:
            actions.append(Fail(f"{lacking}; record it where the docs are written: "
                                f"TLSTAGES_SNAPSHOTS=update, or {accept} after a local build",
                                unguarded))
        else:
            actions.append(Note(f"tl-pipeline: {lacking}; fill it in with: {accept}",
                                spec.lineno, unguarded))
        return _split(actions, split)
    actions += _drift(policy, found, old, new, version, changes, lacking, unguarded, accept)
    return _split(actions, split)


def _same(policy: Policy, found: Found, old: Snapshot, new: Snapshot, actions: list[Action],
          split: int | None, counted: Counted, version: str | None) -> Decision:
    """The facts as recorded: re-recorded under update, provenance noted otherwise."""
    actions += [counted, Remove(found.pending)]
    if policy.updates:
        # Said where the file changed; one that holds this build's snapshot already
        # has its TileLang and schema, so there is no provenance to note.
        split = len(actions) if split is None else split
        actions.append(Write(found.golden, new, rewritten=f"tl-pipeline: {found.spec.name}: "
                             f"snapshot re-recorded with TileLang {new.get('tilelang')}"))
    elif version or old.get("schema") != new.get("schema"):
        # Provenance, reported and never failed: the reader sees the same thing.
        actions.append(Note(f"tl-pipeline: {found.spec.name}: recorded with TileLang "
                            f"{old.get('tilelang')} (result schema {old.get('schema')}), "
                            f"verified with TileLang {new.get('tilelang')}: same facts "
                            "and code"))
    return _split(actions, split)


def _drift(policy: Policy, found: Found, old: Snapshot, new: Snapshot, version: str | None,
           changes: list[tuple[str, str]], lacking: str | None,
           unguarded: tuple[Finding, ...], accept: str) -> list[Action]:
    """A drift: what changed for a reader, variant by variant, with the pass that made
    each change and how to accept it; an error, and the report's findings."""
    lines = [f"{found.spec.name}: the lowering no longer matches {found.golden}"]
    if version:
        lines.append(f"  recorded with {version.replace(' -> ', ', built with ')}; what "
                     "changed for a reader:")
    # What changed, worked out once for the causes, the count and the report.
    changed = snapshot_compare.changes(old, new)
    why = dict(drift.causes(old, new, changed))
    for stages, change in changes:
        lines.append(f"  {snapshots.describe(stages)}: {change}" if stages else f"  {change}")
        if stages in why:  # the compiler's side of it: which pass made the change
            lines.append(f"    why: {why[stages]}")
    if lacking:
        lines.append(f"  and {lacking.split(': ', 1)[1]}")
    if snapshot_compare.only_moved(changes):
        # The guide's rule stands (a snapshot guards what the page shows, line numbers
        # included), said in its own words.
        lines.append("  every change is a kernel line that moved: the compiler's output is "
                     "otherwise the same, and the page shows the new lines, so it still "
                     "fails until accepted")
    lines.append(f"  accept it with: {accept}" if policy.leaves_pending else
                 f"  accept it where the docs are written: {accept} (after a local build) "
                 "or TLSTAGES_SNAPSHOTS=update")
    return [Counted(len(new["variants"]), drift.drifted_variants(old, new, changed),
                    old.get("tilelang")),
            Fail("\n".join(lines), (*unguarded, *drift.drift_findings(old, new, changed)),
                 snapshot_compare.version_change(old, new))]


def _split(actions: list[Action], split: int | None) -> Decision:
    if split is None:
        return Decision(tuple(actions))
    return Decision(tuple(actions[:split]), True, tuple(actions[split:]))


def _reworded(spec: DirectiveSpec, words: list[snapshot_compare.Change], golden: Path,
              accept: str, policy: Policy) -> Note:
    """The note for a change only in this extension's words (see
    :func:`.snapshot_compare.reworded`)."""
    variants = ", ".join(dict.fromkeys(snapshots.describe(c.variant) for c in words))
    how = f"accept them with: {accept}, or TLSTAGES_SNAPSHOTS=update" \
        if policy.leaves_pending else "TLSTAGES_SNAPSHOTS=update re-records them where the " \
        "docs are written"
    return Note(f"tl-pipeline: {spec.name}: {variants}: the hazard check words its findings "
                f"differently from {golden}, with the same verdict and findings (a newer "
                f"sphinx-tlstages, not a change in the code); {how}", spec.lineno,
                tuple(Finding("reworded", snapshots.describe(c.variant), c.words)
                      for c in words))


def _failed_records(found: Found, old: Snapshot, new: Snapshot) -> list[str]:
    """The variants ``old`` records, that the directive still asks for, and that this
    build's snapshot lacks: they failed to lower here."""
    asked = {variant.id for variant in found.spec.variants}
    return [key for key in old["variants"] if key not in new["variants"] and key in asked]


def _problems(spec: DirectiveSpec) -> str:
    """The options in error, as the log said them, for a sentence."""
    return "; ".join(str(p) for p in spec.problems)


def _unshown(found: Found, keys: list[str], then: str) -> Fail:
    """The failure of recorded variants this build cannot show, each with why."""
    spec = found.spec
    generic = "the directive could not be read" if not found.read else \
        "not among what its options allow while one is in error" if found.in_error else \
        "it failed to lower"
    why = {key: found.failed.get(key) or generic for key in keys}
    lines = [f"{spec.name}: {found.golden} records {len(keys)} variant(s) this build cannot "
             f"show; {then}"]
    lines += [f"  {snapshots.describe(key)}: {why[key]}" for key in keys]
    return Fail("\n".join(lines), tuple(Finding("unshown", snapshots.describe(key), why[key])
                                        for key in keys))


def _unread(found: Found) -> Decision:
    """A directive that could not be read: its snapshot, if it has one, is kept as it
    is, and every variant it records fails (it cannot be shown)."""
    old = found.old
    if old is None or not old.get("variants"):
        return Decision()  # the error was said where the directive stands
    keys = list(old["variants"])
    return Decision((_unshown(found, keys, "the directive could not be read ("
                              f"{_problems(found.spec)}); its snapshot is kept as it is "
                              "until it can"),))


def _in_error(policy: Policy, found: Found, new: Snapshot, accept: str) -> Decision:
    """A directive with an option in error: compared as ``check`` compares, nothing
    written or removed (the pending file of an earlier build aside, which ``accept``
    would otherwise move over the snapshot), each recorded variant it cannot show
    failed, and a drift in the rest said but never accepted."""
    spec, old, golden = found.spec, found.old, found.golden
    fix = f"fix the option ({_problems(spec)}), then build again"
    if old is None:
        if policy.fails_on_missing and new["variants"]:
            return Decision((Fail(f"{spec.name}: no snapshot at {golden}, and none is "
                                  f"recorded while an option is in error: {fix}",
                                  (Finding("missing", "", f"no snapshot at {found.shown}"),)),))
        return Decision((Note(f"tl-pipeline: {spec.name}: no snapshot recorded while an "
                              f"option is in error: {fix}", spec.lineno),))
    actions: list[Action] = [Remove(found.pending)]
    lost = [key for key in old["variants"] if key not in new["variants"]]
    if lost:
        actions.append(_unshown(found, lost, f"its records are kept: {fix}"))
    shown = {**old, "variants": {k: v for k, v in old["variants"].items() if k in new["variants"]}}
    added = [key for key in new["variants"] if key not in old["variants"]]
    if added:
        actions.append(Note(f"tl-pipeline: {spec.name}: "
                            f"{', '.join(map(snapshots.describe, added))} not recorded in "
                            f"{golden} while an option is in error: {fix}", spec.lineno))
        new = {**new, "variants": {k: v for k, v in new["variants"].items()
                                   if k in old["variants"]}}
    version, changes = snapshot_compare.compare(shown, new)
    if not changes:
        actions.append(Counted(len(new["variants"]), 0, old.get("tilelang")))
        return Decision(tuple(actions))
    drifted = _drift(Policy("check", True), found, shown, new, version, changes, None, (),
                     accept)
    fail = drifted[-1]
    assert isinstance(fail, Fail)
    lines = fail.message.splitlines()
    lines[-1] = f"  not accepted while an option is in error: {fix}"
    return Decision((*actions, drifted[0], replace(fail, message="\n".join(lines))),
                    fingerprints=False)


def _moved_runs(spec: DirectiveSpec, old: Snapshot, new: Snapshot) -> list[Action]:
    """A note at the option's line where ``Simplify#3`` names another run than it did in
    the pipeline the snapshot was recorded with (a release added or dropped a run before
    it). A note, not a failure: what the page shows is checked by the snapshot itself.
    Both snapshots hold their pipeline only where the directive names a run by number."""
    recorded, now = old.get("pass_pipeline"), new.get("pass_pipeline")
    if not isinstance(recorded, list) or not isinstance(now, list) or not now:
        return []
    notes: list[Action] = []
    lines = [(spec.passes_line or spec.lineno, numbered(spec.passes, ()))]
    lines += [(line, numbered((), (expression,))) for line, expression in spec.asserts]
    for line, selectors in lines:
        for selector in selectors:
            said = moved(selector, recorded, now)
            if said:
                notes.append(Note(f"tl-pipeline: {spec.name}: {selector} {said} when the "
                                  f"snapshot was recorded (TileLang {old.get('tilelang')}); "
                                  "check that it names the run you meant (a bare pass name "
                                  "names every run)", line))
    return notes


@dataclass(frozen=True)
class Sources:
    """What the build read, for the snapshots no directive has: the source files (as the
    log names them), and where a directive stands whose ``:name:`` is in error (so that no
    snapshot can be said to be its own or not)."""

    files: tuple[str, ...]
    unnamed: tuple[str, ...] = ()

    def said(self) -> str:
        """``the 3 sources read (index.rst, a.rst, b.rst)``, the first few named."""
        count = len(self.files)
        listed = ", ".join(self.files[:6]) + (f" and {count - 6} more" if count > 6 else "")
        return f"the {count} source{'' if count == 1 else 's'} read ({listed or 'none'})"


def leftovers(policy: Policy, stored: list[tuple[str, Path, bool]], used: set[str],
              srcdir: Path, sources: Sources) -> list[Action]:
    """What ``policy`` does with the snapshot files (``stored``: (directive name, path,
    is it pending)) that no directive of ``used`` has (every directive read, those in
    error or unread included): ``update`` removes them; elsewhere each golden one is a
    warning (a pending one is left for accept to find unused). Where a directive's
    ``:name:`` is in error (``sources.unnamed``), none is removed: it may be its."""
    actions: list[Action] = []
    where = f"no tl-pipeline directive of that name in {sources.said()}"
    unnamed = ", ".join(sources.unnamed)
    for name, path, pending in stored:
        if name in used:
            continue
        if sources.unnamed:
            if not pending:
                actions.append(Unused(f"snapshot {path}: {where}; it is kept, since the "
                                      f"directive at {unnamed} has a :name: in error and "
                                      "may be its", snapshots.report_path(path, srcdir)))
        elif policy.updates:
            actions += [Remove(path, missing_ok=False),
                        Note(f"tl-pipeline: removed unused snapshot {path} ({where})")]
        elif not pending:
            actions.append(Unused(f"snapshot {path} belongs to no tl-pipeline directive "
                                  f"({where}); TLSTAGES_SNAPSHOTS=update removes it",
                                  snapshots.report_path(path, srcdir)))
    return actions
