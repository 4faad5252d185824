"""The drift report of a build, written where CI picks it up.

The checks report each finding once, to the build's sink (:mod:`..findings`), which adds it
to the :class:`~...core.records.drift.Report` as the log says it; on ``build-finished``
the report is written beside the
``tlstages explain`` records, as ``tlstages-report.gfm`` (GitHub Markdown) and
``tlstages-report.json`` (a workflow posts the first as a pull-request comment), and
appended to ``$GITHUB_STEP_SUMMARY`` when that is set: one section per ``sphinx-build``
run, headed by its builder; a later builder of the same book that found nothing new says
so in one line.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING

from ...core.files import write_if_changed
from ...core.records import drift_render
from ...core.records.drift import Report
from ...core.records.places import records_folder
from ..messages import warn
from ..state import build_state

if TYPE_CHECKING:
    from sphinx.application import Sphinx

# Not ``.md``: a doctree folder inside the sources would be read as a page by MyST.
MARKDOWN, JSON = "tlstages-report.gfm", "tlstages-report.json"
# Each section of the job summary starts with one, unseen: (builder, what it said).
_MARKER = re.compile(r"<!-- tlstages-report (\S+) (\S+) -->")


def write_report(app: Sphinx, exception: BaseException | None) -> None:
    """``build-finished``: write the build's report, and append it to the job summary."""
    state = build_state(app)
    if exception is not None or state is None or state.findings.report is None:
        return
    report = state.findings.report
    folder = records_folder(Path(app.doctreedir), Path(app.outdir))
    # Rewritten only when it changed, and without waiting for the disk (as Sphinx writes
    # its pages): a rebuild that finds what the last one found writes nothing, where two
    # synced writes cost each warm build more wall time than the rest of the report.
    write_if_changed(folder / JSON, report.as_json(), durable=False)
    write_if_changed(folder / MARKDOWN, drift_render.markdown(report), durable=False)
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        try:
            _append_summary(Path(summary), report)
        except OSError as exc:  # the build's own outcome does not depend on it
            warn(f"GITHUB_STEP_SUMMARY {summary}: the report could not be added: {exc}",
                 "report")


def _append_summary(path: Path, report: Report) -> None:
    try:
        before = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        before = ""
    digest = report.digest()
    marker = f"<!-- tlstages-report {report.builder} {digest} -->"
    earlier = [builder for builder, said in _MARKER.findall(before) if said == digest]
    if earlier:
        section = (f"{marker}\n**tl-pipeline, {drift_render.text(report.builder)} build:** "
                   f"nothing new since the {drift_render.text(earlier[-1])} build.\n")
    else:
        room = drift_render.MAX_BYTES - len(before.encode())
        section = drift_render.markdown(report, room, marker) if room > 4096 else (
            f"{marker}\n**tl-pipeline, {drift_render.text(report.title())}:** "
            f"{drift_render.text(report.verdict())} The job summary is full: the whole "
            f"report is the build's {MARKDOWN}.\n")
    with path.open("a", encoding="utf-8") as handle:
        handle.write(("\n" if before and not before.endswith("\n\n") else "") + section)
