"""The hardware records attached to their directives, and what the log says of them.

Records are read once (``tlstages_hardware_dir``), attached per directive with the ids of
the variants whose record is stale, and set beside this build's static verdicts: a race
or barrier error compute-sanitizer observed where the hazard check said "none" or "not
checked" is a ``tlstages.hardware`` warning at the directive (and in the drift report);
a record of other code is a note, marked stale on the page, never a failure (a GPU is
not needed to build the book, so a stale record must not stop one); a malformed file is
a warning, as a malformed bench file is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...core.plan.spec import DirectiveSpec, VariantSpec
from ...core.records.drift import Finding
from ...core.records.hardware_data import attach, judge, load_records, other_headers
from ..state import BuildState, settings

if TYPE_CHECKING:
    from sphinx.application import Sphinx


def _names(variants: list[VariantSpec]) -> str:
    return ", ".join(v.heading for v in variants)


def attach_hardware(app: Sphinx, specs: list[DirectiveSpec], state: BuildState) -> None:
    """Load the hardware records; warn about races observed that the check did not
    report, and note stale records and other template headers."""
    state.hardware = load_records(settings(app).hardware_dir, None)
    for problem in state.hardware.errors:
        state.findings.warn(f"hardware record ignored: {problem}", "hardware")
    for spec in specs:
        attached = attach(spec, state.hardware, state.result)
        state.hardware_attached[spec.name] = attached
        where = (spec.docname, spec.lineno)
        for data, entry, stale_ids in attached:
            gpu = data["gpu"]["name"]
            stale = [v for v in spec.variants if v.id in stale_ids]
            if stale:
                state.findings.note(f"{spec.name}: the hardware record from {gpu} for "
                                    f"{_names(stale)} is for other code (shown as stale); "
                                    "run tlstages hardware again", location=where)
            headers = other_headers(spec, entry, state.result)
            if headers:
                state.findings.note(f"{spec.name}: the hardware record from {gpu} for "
                                    f"{_names(headers)} was made with other TileLang "
                                    "template headers than this build's; the code the page "
                                    "shows is the same", location=where)
            for variant in spec.variants:
                record = entry["variants"].get(variant.id)
                result = state.result(variant)
                if record is None or variant.id in stale_ids or not result.get("ok"):
                    continue
                said = judge(record, result.get("hazards"))
                if said.warns:
                    state.findings.warn(
                        f"{spec.name}: {variant.heading}: on {gpu}, {said.words}", "hardware",
                        location=where, spec=spec,
                        drift=[Finding("observed", variant.heading, f"on {gpu}: {said.words}")])
