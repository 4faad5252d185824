"""The drift report's model: what one build found about its chapters' claims, as data.

A :class:`Report` holds a build's verdict (directives, variants verified, TileLang
versions) and, per directive that needs a reader's attention, its :class:`Finding` s:
each visible change in words (:mod:`.snapshot_compare`), the CUDA diff, failed
``:assert:`` claims, facts the snapshot does not guard, stale benchmark numbers, and the
new and unused snapshots. The checks fill it as they report; :mod:`.drift_render` writes
it as Markdown or text, :meth:`Report.as_json` as JSON. Pure data: no paths of the
machine that built it (sources relative to the source folder), so the same build gives
the same bytes anywhere.

The accept command it prints names the book relative to the current folder (or by its
name). A new kind of finding (hazard findings, changes of the hardware facts) is one entry in
:data:`KINDS` (its heading and its place in the order; :data:`FAILING` if it fails a
build) and a call to :meth:`Report.add` where the check says it in the log; the writers
need no change. A newly compared fact needs nothing: :mod:`.snapshot_compare` says its
change in words and the report lists it under "What changed". The report is written as
``tlstages-report.gfm``, not ``.md``: a doctree folder inside the sources would be read as
a page by MyST. Each section appended to ``$GITHUB_STEP_SUMMARY`` follows an unseen
``<!-- tlstages-report BUILDER DIGEST -->`` marker, by which a later builder with the same
findings says one line (``ext/checks/drift_report.py``). Tests:
``tests/test_drift_report.py`` (real builds under ``CI=true`` with a temporary
``GITHUB_STEP_SUMMARY``, rendered through markdown-it-py).
"""

from __future__ import annotations

import difflib
import hashlib
import json
from dataclasses import asdict, dataclass, field
from typing import Any

from ...version import __version__
from ..results.cuda import visible_cuda
from .first_pass import first_change
from .snapshot_compare import Change, changes, check_changed_alone, version_change
from .snapshots import describe

REPORT_SCHEMA = 1
# A unified diff longer than this is cut, the rest counted: a report must fit GitHub's
# job summary (1 MiB) however many directives drift.
DIFF_LINES = 120
DIFF_LINE_CHARS = 400
WORDS_CHARS = 2000
# The most a report may take, as Markdown or JSON: GitHub refuses a job summary over
# 1 MiB (the whole step's), so a report leaves room.
MAX_BYTES = (1 << 20) - (16 << 10)

# What a directive's findings can be, in the order a report says them, with the heading
# each is said under. A check that finds something new about a directive (hazard findings,
# changes of the hardware facts) adds its kind here and its findings with Report.add: the
# writers say every kind, in this order, with no other change. (A new compared fact needs
# not even that: snapshot_compare says its change, and it is reported as "changed".)
KINDS: dict[str, str] = {
    "changed": "What changed",
    "cause": "Why: the first pass whose output changed",
    "assert": "Failed :assert: claims",
    "missing": "No snapshot",
    "broken": "Unreadable snapshot",
    "unverified": "Not verified",
    "unguarded": "Shown but not guarded by the snapshot",
    "stale": "Stale benchmark numbers",
    "hazard": "Hazards found in the generated code",
    "observed": "Races observed on a GPU that the hazard check did not report",
    "unshown": "Recorded, but not shown by this build",
    "reworded": "Reworded by this extension (the same facts)",
}
# Kinds that fail a build; the others are said, never failed, except that a CI build
# (strict) fails on a shown fact the snapshot does not guard, as on a missing snapshot.
FAILING = frozenset({"changed", "assert", "missing", "broken", "unverified", "unshown"})
FAILING_IN_CI = FAILING | {"unguarded"}
# How a verdict counts the failing kinds besides a change (claims one by one, the rest
# by directive).
_COUNTED = {
    "assert": ":assert: claim(s) failed",
    "missing": "without a snapshot",
    "broken": "with an unreadable snapshot",
    "unverified": "not verified",
    "unguarded": "with a snapshot that does not guard what the page shows",
    "unshown": "with recorded variants this build cannot show",
}


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def _capped(text: str, limit: int = WORDS_CHARS) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text) - limit:,} more characters)"


@dataclass(frozen=True)
class Finding:
    """One thing a reader must know about a directive: its kind (a key of :data:`KINDS`),
    the variant it is about (``num_stages=2``; "" for the directive as a whole), what it
    is in words (as the build log says it), the document line where that is not the
    directive's own (an ``:assert:`` line), and lines folded away (a unified diff)."""

    kind: str
    variant: str
    words: str
    line: int = 0
    detail: tuple[str, ...] = ()


@dataclass
class Directive:
    """A directive with findings: its name, its source file (relative to the source
    folder) and line as the build log gives them, its page's address where
    ``html_baseurl`` is set, and the TileLang versions when they differ."""

    name: str
    source: str
    line: int
    url: str | None = None
    versions: str | None = None
    findings: list[Finding] = field(default_factory=list)

    def ordered(self) -> list[Finding]:
        """The findings in :data:`KINDS` order, each kind in the order found."""
        rank = {kind: i for i, kind in enumerate(KINDS)}
        return sorted(self.findings, key=lambda f: rank.get(f.kind, len(rank)))


@dataclass
class Report:
    """What one build (or ``tlstages snapshots diff``) found."""

    builder: str  # the Sphinx builder; "" for the pending snapshots (no build)
    accept: str  # the command that accepts the pending results
    strict: bool = False  # a CI build: nothing pending is written
    directives_total: int = 0
    variants_verified: int = 0  # compared with a snapshot
    variants_drifted: int = 0  # of those, the ones whose comparison found a change
    variants_failed: int = 0  # failed to lower, unexpected (not compared)
    # ``snapshots diff``: how many pending snapshots it found to compare; None for a build
    pending: int | None = None
    recorded_with: list[str] = field(default_factory=list)  # the snapshots' TileLang versions
    built_with: str | None = None
    # Provenance, as a snapshot keeps it: the release of this extension that made the
    # report (in its JSON; a report's words change with releases, its verdict rules too).
    sphinx_tlstages: str = __version__
    directives: dict[str, Directive] = field(default_factory=dict)
    new_snapshots: list[str] = field(default_factory=list)  # recorded by this build
    unused_snapshots: list[str] = field(default_factory=list)  # relative to the source folder
    # (directives, findings) a JSON report left out to stay under MAX_BYTES
    left_out: tuple[int, int] = (0, 0)
    # (verdict, failing) as a JSON report said them, which counted what it left out
    said: tuple[str, bool] | None = None

    def title(self) -> str:
        """What the report is of: ``html build``, or ``pending snapshots``."""
        return f"{self.builder} build" if self.builder else "pending snapshots"

    def directive(self, name: str, source: str, line: int, url: str | None = None) -> Directive:
        """The entry of directive ``name``, made on its first finding."""
        return self.directives.setdefault(name, Directive(name, source, line, url))

    def add(self, directive: Directive, kind: str, variant: str, words: str, line: int = 0,
            detail: tuple[str, ...] = ()) -> None:
        assert kind in KINDS, kind
        directive.findings.append(Finding(kind, variant, _capped(words), line, detail))

    def recorded(self, version: object) -> None:
        said = str(version)
        if said not in self.recorded_with:
            self.recorded_with.append(said)
            self.recorded_with.sort()

    def listed(self) -> list[Directive]:
        """The directives with findings, in page order."""
        return sorted((d for d in self.directives.values() if d.findings),
                      key=lambda d: (d.source, d.line, d.name))

    def changed(self) -> int:
        return sum(1 for d in self.listed() if any(f.kind == "changed" for f in d.findings))

    def failing(self) -> bool:
        if self.said is not None:
            return self.said[1]
        failing = FAILING_IN_CI if self.strict else FAILING
        return any(f.kind in failing for d in self.listed() for f in d.findings)

    def verdict(self) -> str:
        """The one line said first: how many directives changed, what was verified."""
        if self.said is not None:
            return self.said[0]
        versions = ""
        if self.recorded_with:
            versions = f", recorded with TileLang {', '.join(self.recorded_with)}"
            if self.built_with and self.recorded_with != [self.built_with]:
                versions += f", built with {self.built_with}"
        elif self.built_with:
            versions = f", built with TileLang {self.built_with}"
        verified = self._compared() + versions
        if not self.failing():
            if self.pending == 0:
                return (f"Nothing to compare: {_count(self.directives_total, 'directive')}, "
                        f"{verified}.")
            return f"No drift: {_count(self.directives_total, 'directive')}, {verified}."
        failing = FAILING_IN_CI if self.strict else FAILING
        said = [f"{self.changed()} of {_count(self.directives_total, 'directive')} changed"]
        for kind, words in _COUNTED.items():
            count = sum(1 for d in self.listed() for f in d.findings if f.kind == kind) \
                if kind == "assert" else \
                sum(1 for d in self.listed() if any(f.kind == kind for f in d.findings))
            if count and kind in failing:
                said.append(f"{count} {words.replace('(s)', '' if count == 1 else 's')}")
        return f"{'; '.join(said)}; {verified}."

    def _compared(self) -> str:
        """``56 variants compared with their snapshots: 52 matched, 4 drifted, 1 failed to
        lower``; what ``snapshots diff`` had to compare, where it found nothing."""
        failed = f", {self.variants_failed} failed to lower" if self.variants_failed else ""
        if self.pending == 0:
            return ("no pending snapshots to compare (a local build leaves one where a "
                    "directive drifted; a CI build leaves none: tlstages report shows "
                    "what it found)")
        if not self.variants_drifted:
            return f"{_count(self.variants_verified, 'variant')} matched their snapshots{failed}"
        matched = self.variants_verified - self.variants_drifted
        return (f"{_count(self.variants_verified, 'variant')} compared with their snapshots: "
                f"{matched} matched, {self.variants_drifted} drifted{failed}")

    def as_dict(self) -> dict[str, Any]:
        """The report as JSON data: directives past :data:`MAX_BYTES` are counted in
        ``left_out``, not listed."""
        data = asdict(self)
        del data["said"]
        data["schema"] = REPORT_SCHEMA
        data["verdict"] = self.verdict()
        data["failing"] = self.failing()
        data["directives"] = []
        used, (directives, findings) = 4096, self.left_out
        for entry in self.listed():
            said = {**asdict(entry), "findings": [asdict(f) for f in entry.ordered()]}
            written = json.dumps(said, indent=1, ensure_ascii=False)
            used += len(written.encode()) + 2 * (written.count("\n") + 1)  # nested twice
            if used > MAX_BYTES:
                directives, findings = directives + 1, findings + len(entry.findings)
            else:
                data["directives"].append(said)
        data["left_out"] = [directives, findings]
        return data

    def as_json(self) -> str:
        return json.dumps(self.as_dict(), indent=1, sort_keys=True, ensure_ascii=False) + "\n"

    def digest(self) -> str:
        """What the report says, whichever builder said it: a later builder of the same
        book with the same digest found nothing new."""
        data = self.as_dict()
        del data["builder"]
        text = json.dumps(data, sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def from_json(text: str) -> Report:
    """A report :meth:`Report.as_json` wrote; ValueError if it is not one."""
    try:
        data = json.loads(text)
        report = Report(builder=str(data["builder"]), accept=str(data["accept"]),
                        strict=bool(data["strict"]),
                        directives_total=int(data["directives_total"]),
                        variants_verified=int(data["variants_verified"]),
                        variants_drifted=int(data.get("variants_drifted", 0)),
                        variants_failed=int(data.get("variants_failed", 0)),
                        pending=data.get("pending"),
                        recorded_with=[str(v) for v in data["recorded_with"]],
                        built_with=data["built_with"],
                        sphinx_tlstages=str(data.get("sphinx_tlstages", "")),
                        new_snapshots=[str(n) for n in data["new_snapshots"]],
                        unused_snapshots=[str(n) for n in data["unused_snapshots"]],
                        left_out=(int(data["left_out"][0]), int(data["left_out"][1])),
                        said=(str(data["verdict"]), bool(data["failing"])))
        for entry in data["directives"]:
            found = [Finding(f["kind"], f["variant"], f["words"], f["line"], tuple(f["detail"]))
                     for f in entry["findings"]]
            report.directives[entry["name"]] = Directive(
                entry["name"], entry["source"], entry["line"], entry["url"],
                entry["versions"], found)
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"not a tl-pipeline report: {exc}") from None
    return report


def cuda_diff(old: dict[str, Any], new: dict[str, Any]) -> tuple[str, ...]:
    """The unified diff of a variant's shown CUDA (unchanged ``#line`` directives left
    out), cut at :data:`DIFF_LINES` lines with the
    rest counted."""
    diff = [line for line in difflib.unified_diff(
        visible_cuda(old.get("cuda", [])), visible_cuda(new.get("cuda", [])),
        "snapshot", "this build", lineterm="", n=2)
        # Unchanged #line directives say nothing a reader of the diff needs.
        if not line.startswith(" #line")]
    diff = [line if len(line) <= DIFF_LINE_CHARS else
            f"{line[:DIFF_LINE_CHARS]}... ({len(line) - DIFF_LINE_CHARS:,} more characters)"
            for line in diff]
    if len(diff) > DIFF_LINES:
        rest = len(diff) - DIFF_LINES
        diff = [*diff[:DIFF_LINES], f"... {rest:,} more lines of the diff not shown"]
    return tuple(diff)


def drift_findings(old: dict[str, Any], new: dict[str, Any],
                   found_changes: list[Change] | None = None) -> list[Finding]:
    """What changed from snapshot ``old`` to ``new``, as the build log says it, with each
    variant's CUDA diff folded beside its ``CUDA +a -b``, then per drifted variant the
    first pass whose output changed. ``found_changes``: :func:`changes` of the two, where
    the caller has them already."""
    if found_changes is None:
        found_changes = changes(old, new)
    found = []
    for change in found_changes:
        variant = describe(change.variant) if change.variant else ""
        detail: tuple[str, ...] = ()
        if change.fact == "cuda":
            detail = cuda_diff(old["variants"][change.variant], new["variants"][change.variant])
        found.append(Finding("changed", variant, change.words, detail=detail))
    found += [Finding("cause", describe(key), words)
              for key, words in causes(old, new, found_changes)]
    return found


def causes(old: dict[str, Any], new: dict[str, Any],
           found_changes: list[Change] | None = None) -> list[tuple[str, str]]:
    """Per drifted variant (its snapshot id), in words, the first pass whose output
    differs from the recorded one (:mod:`.first_pass`), or why that cannot be said;
    ``found_changes``: :func:`changes` of the two, where the caller has them already."""
    if found_changes is None:
        found_changes = changes(old, new)
    drifted = dict.fromkeys(c.variant for c in found_changes
                            if c.variant and c.variant in old["variants"]
                            and c.variant in new["variants"])
    said = []
    for key in drifted:
        before, after = old["variants"][key], new["variants"][key]
        alone = check_changed_alone(before, after)
        if alone is not None:  # the hazard check's answer moved, the code did not
            said.append((key, alone))
            continue
        found = first_change(before.get("pass_fingerprints"), after.get("pass_fingerprints"))
        if found is not None:
            said.append((key, found.words()))
        elif "error" in before or "error" in after:
            continue  # a failure says where it failed
        elif "pass_fingerprints" not in before:
            said.append((key, "which pass changed it is not known: the snapshot has no "
                         "pass fingerprints (recorded before result schema 7; re-record it "
                         "to have them next time)"))
    return said


def add_drift(report: Report, entry: Directive, old: dict[str, Any],
              new: dict[str, Any]) -> int:
    """Add what changed from snapshot ``old`` to ``new`` to directive ``entry``
    (:func:`drift_findings`); returns how many changes."""
    found_changes = changes(old, new)
    found = drift_findings(old, new, found_changes)
    entry.versions = version_change(old, new)
    report.variants_drifted += drifted_variants(old, new, found_changes)
    for finding in found:
        report.add(entry, finding.kind, finding.variant, finding.words, detail=finding.detail)
    return len(found)


def drifted_variants(old: dict[str, Any], new: dict[str, Any],
                     found_changes: list[Change] | None = None) -> int:
    """How many of the directive's variants changed from snapshot ``old`` to ``new``: all
    of them when the directive's own inputs changed. ``found_changes``: :func:`changes`
    of the two, where the caller has them already."""
    if found_changes is None:
        found_changes = changes(old, new)
    drifted = {change.variant for change in found_changes}
    if "" in drifted:
        drifted = set(new["variants"]) | set(old["variants"])
    return len(drifted)
