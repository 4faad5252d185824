"""The one sink of a build's findings: each check reports a finding once, here.

A finding is said in the build log (a note, or a typed ``tlstages.<subtype>`` warning or
error at the page and line it applies to); where it concerns a directive's drift it is
added to the build's drift report (:class:`~sphinx_tlstages.core.records.drift.Report`,
which :mod:`.checks.drift_report` writes); an error is counted, and the count is the
build's exit status (:func:`.checks.run.set_exit_status`). The checks never do one of
these without the others.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.records.drift import Directive, Finding, Report
from ..core.records.snapshot_policy import accept_command
from .messages import error, info, warn

if TYPE_CHECKING:
    from sphinx.application import Sphinx

    from ..core.plan.spec import DirectiveSpec


# How the closing line names each kind of failure (by the error's subtype), one and
# several, in its order.
_KIND_WORDS = {
    "snapshot": ("snapshot check", "snapshot checks"),
    "assert": (":assert: claim", ":assert: claims"),
    "hazard": (":expect-hazard: variant", ":expect-hazard: variants"),
    "name": ("directive sharing a :name:", "directives sharing a :name:"),
    "tilelang": ("build TileLang could not lower", "builds TileLang could not lower"),
    "toolkit": ("missing NVIDIA compiler", "missing NVIDIA compilers"),
}


def _page(app: Sphinx, docname: str) -> str:
    builder = app.builder
    if builder.format == "html":
        return builder.get_target_uri(docname)
    return docname + (app.config.html_file_suffix or ".html")


def _entry(app: Sphinx, report: Report, spec: DirectiveSpec) -> Directive:
    """Directive ``spec``'s entry: its source as the build log gives it, relative to the
    source folder, and its page's address where ``html_baseurl`` is set."""
    source = Path(str(app.env.doc2path(spec.docname, False))).as_posix()
    base = str(app.config.html_baseurl or "")
    url = None
    if base:
        anchor = f"#{spec.node_id}" if spec.node_id else ""
        url = f"{base.rstrip('/')}/{_page(app, spec.docname)}{anchor}"
    return report.directive(spec.name, source, spec.lineno, url)


@dataclass
class Findings:
    """What this build's checks found: the drift report and the failures counted."""

    report: Report | None = None  # from the start of the checks (None: not checked)
    failures: int = 0  # errors that fail the build, with or without ``-W``
    app: Sphinx | None = field(default=None, repr=False)
    kinds: dict[str, int] = field(default_factory=dict)  # the failures by subtype

    def start(self, app: Sphinx, total: int, strict: bool) -> Report:
        """Begin this build's report, of ``total`` directives (``strict``: a CI build)."""
        self.app = app
        self.report = Report(builder=app.builder.name,
                             accept=accept_command(Path(app.srcdir)), strict=strict,
                             directives_total=total)
        return self.report

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
        self.kinds[subtype] = self.kinds.get(subtype, 0) + 1
        error(message, subtype, location=location)
        self._add(spec, drift, versions)

    def failed_kinds(self) -> str:
        """``1 snapshot check, 2 :expect-hazard: variants``: the failures by what they
        are."""
        order = list(_KIND_WORDS)
        kinds = sorted(self.kinds, key=lambda k: order.index(k) if k in order else len(order))
        return ", ".join(f"{self.kinds[kind]} "
                         f"{_KIND_WORDS.get(kind, (kind, kind))[self.kinds[kind] != 1]}"
                         for kind in kinds)

    def _add(self, spec: DirectiveSpec | None, drift: Sequence[Finding],
             versions: str | None = None) -> None:
        if spec is None or self.report is None or self.app is None:
            return  # not about one directive's drift, or the checks have not begun
        entry = _entry(self.app, self.report, spec)
        if versions is not None:
            entry.versions = versions
        for found in drift:
            self.report.add(entry, found.kind, found.variant, found.words, found.line,
                            found.detail)
