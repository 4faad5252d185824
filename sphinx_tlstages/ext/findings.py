"""The one sink of a build's findings: each check reports a finding once, here.

A finding is said in the build log (a note, or a typed ``tlstages.<subtype>`` warning or
error at the page and line it applies to); where it concerns a directive's drift it is
added to the build's drift report (:class:`~sphinx_tlstages.core.records.drift.Report`,
which :mod:`.checks.drift_report` writes); an error is counted, and the count is the
build's exit status (:func:`.checks.run.set_exit_status`). The checks never do one of
these without the others.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..core.records.drift import Directive, Finding, Report
from .messages import error, info, warn

if TYPE_CHECKING:
    from ..core.plan.spec import DirectiveSpec

# A directive's entry in the report: its source and page as the build log gives them.
Place = Callable[["DirectiveSpec"], Directive]


@dataclass
class Findings:
    """What this build's checks found: the drift report and the failures counted."""

    report: Report | None = None  # from the start of the checks (None: not checked)
    failures: int = 0  # errors that fail the build, with or without ``-W``
    place: Place | None = field(default=None, repr=False)

    def start(self, report: Report, place: Place) -> None:
        """Begin the checks' report; ``place`` gives a directive's entry in it."""
        self.report, self.place = report, place

    def note(self, message: str, location: Any = None, *, spec: DirectiveSpec | None = None,
             drift: Sequence[Finding] = (), versions: str | None = None) -> None:
        """Something the reader should know that is not a problem: a log line."""
        info(message, location=location)
        self._add(spec, drift, versions)

    def warn(self, message: str, subtype: str, location: Any = None, *,
             spec: DirectiveSpec | None = None, drift: Sequence[Finding] = ()) -> None:
        """A typed warning (``-W`` turns it into a failure)."""
        warn(message, subtype, location=location)
        self._add(spec, drift)

    def error(self, message: str, subtype: str, location: Any = None, *,
              spec: DirectiveSpec | None = None, drift: Sequence[Finding] = (),
              versions: str | None = None) -> None:
        """A typed error, counted: the build fails at its end."""
        self.failures += 1
        error(message, subtype, location=location)
        self._add(spec, drift, versions)

    def _add(self, spec: DirectiveSpec | None, drift: Sequence[Finding],
             versions: str | None = None) -> None:
        if spec is None or self.report is None or self.place is None:
            return  # not about one directive's drift, or the checks have not begun
        entry = self.place(spec)
        if versions is not None:
            entry.versions = versions
        for found in drift:
            self.report.add(entry, found.kind, found.variant, found.words, found.line,
                            found.detail)
