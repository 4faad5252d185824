"""The upgrade rehearsal's report: what another TileLang would change on each page.

``tlstages upgrade-check`` lowers a book's variants with the current TileLang and with
another environment's, and compares the two as a build compares a snapshot with its
lowering (:mod:`.snapshot_compare`, the same compiler-term words; :mod:`.first_pass`,
the pass responsible). Per directive it says one of: unchanged, what would change (and
why), which variants would no longer lower (with TileLang's error), or that it could not
be compared here. Written as Markdown and JSON like the drift report, deterministic (no
machine paths, no times), so that CI can run it on a schedule against the newest release.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from .drift import Finding, drift_findings
from .drift_render import code, text
from .snapshots import describe

UPGRADE_SCHEMA = 1
# What a directive's rehearsal found, in the order said.
STATUSES = ("fails", "changed", "unverified", "unchanged")
_HEADINGS = {"changed": "What would change", "cause": "Why: the first pass whose output "
             "changed", "fails": "Would no longer lower", "unverified": "Not compared"}


@dataclass
class Rehearsed:
    """One directive: where it is, its status, and what was found."""

    name: str
    source: str
    line: int
    status: str = "unchanged"
    findings: list[Finding] = field(default_factory=list)


@dataclass
class Upgrade:
    """The rehearsal of one book: the two TileLang versions and every directive."""

    current: str
    candidate: str
    directives: list[Rehearsed] = field(default_factory=list)

    def changes(self) -> bool:
        """Whether anything would change on a page (the command's exit status)."""
        return any(d.status != "unchanged" for d in self.directives)

    def verdict(self) -> str:
        counts = {s: sum(1 for d in self.directives if d.status == s) for s in STATUSES}
        said = (f"TileLang {self.current} -> {self.candidate}: "
                f"{counts['unchanged']} of {len(self.directives)} directives unchanged")
        for status, words in (("changed", "would change"), ("fails", "would fail to lower"),
                              ("unverified", "not compared")):
            if counts[status]:
                said += f", {counts[status]} {words}"
        return said + "."

    def as_json(self) -> str:
        data: dict[str, Any] = {"schema": UPGRADE_SCHEMA, "current": self.current,
                                "candidate": self.candidate, "verdict": self.verdict(),
                                "changes": self.changes(),
                                "directives": [asdict(d) for d in self.directives]}
        return json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n"

    def markdown(self) -> str:
        lines = ["### tl-pipeline upgrade rehearsal", "", f"**{text(self.verdict())}**", ""]
        for entry in self.directives:
            where = code(f"{entry.source}:{entry.line}")
            if entry.status == "unchanged":
                continue
            lines += [f"#### {code(entry.name)} at {where}", ""]
            for kind, heading in _HEADINGS.items():
                mine = [f for f in entry.findings if f.kind == kind]
                if mine:
                    lines += [f"**{text(heading)}**", ""]
                    lines += [f"- {text(f.variant) + ': ' if f.variant else ''}{code(f.words)}"
                              for f in mine]
                    lines.append("")
        unchanged = [code(d.name) for d in self.directives if d.status == "unchanged"]
        if unchanged:
            lines += [f"**Unchanged** (every shown fact the same): {', '.join(unchanged)}", ""]
        return "\n".join(lines)


def rehearse(entry: Rehearsed, now: dict[str, Any] | None, then: dict[str, Any] | None,
             failed: dict[str, str]) -> None:
    """Fill ``entry`` from the snapshot-shaped lowerings with the current TileLang
    (``now``) and the candidate (``then``; None where either could not be compared here),
    and ``failed``: variant id -> the candidate's error, where only it failed."""
    for key, message in failed.items():
        entry.findings.append(Finding("fails", describe(key), message))
    if now is None or then is None:
        entry.findings.append(Finding("unverified", "", "a variant could not be lowered here "
                                      "(a timeout, a crash, or TileLang missing)"))
    else:
        kept = {k: v for k, v in then["variants"].items() if k not in failed}
        same = {k: v for k, v in now["variants"].items() if k not in failed}
        entry.findings += drift_findings({**now, "variants": same}, {**then, "variants": kept})
    kinds = {f.kind for f in entry.findings}
    entry.status = next((s for s in STATUSES if s in kinds), "unchanged")
    # The CUDA diff is for a reader of one directive, not for this overview.
    entry.findings = [Finding(f.kind, f.variant, f.words, f.line) for f in entry.findings]
