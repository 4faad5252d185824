"""What a GPU observed under compute-sanitizer, beside the hazard check's verdict: a
column of the *Hazards* table per GPU (class ``tl-hardware``) and the line that says where
and how it was observed.

Each cell is the record set beside this build's static verdict
(:func:`~...core.records.hardware_data.judge`): "observed, as the hazard check found",
"observed on hardware" in bold where the check did not report it, "not observed in N
launches" where it did (never "absent"), "none observed", or why it was not run. A record
of other code than the page shows is marked stale.
"""

from __future__ import annotations

from typing import Any

from docutils import nodes

from ...core.plan.spec import VariantSpec
from ...core.records.hardware_data import Attached, judge
from ...core.results.result import Result
from .tables import Cell, code


def heading(data: dict[str, Any]) -> str:
    """``on NVIDIA H100 80GB HBM3 (compute-sanitizer)``: a column's heading."""
    return f"on {data['gpu']['name']} (compute-sanitizer)"


def cell(attached: Attached, variant: VariantSpec, result: Result) -> tuple[str, Cell]:
    """One GPU's record of ``variant``, as (the words it groups by, the cell)."""
    _, entry, stale = attached
    record = entry["variants"].get(variant.id)
    if record is None:
        return "not recorded", "not recorded"
    said = judge(record, result.get("hazards") if result.get("ok") else None)
    words = said.words
    if record.get("edits"):
        words += f" (the code run with edits: {', '.join(record['edits'])})"
    if variant.id in stale:
        return f"stale: {words}", [nodes.emphasis(text="stale (recorded for other code): ",
                                                  classes=["tl-stale"]), nodes.Text(words)]
    if said.warns:
        return words, nodes.strong(text=words, classes=["tl-hazard", "tl-observed"])
    return words, words


def caption(data: dict[str, Any], version: str | None) -> nodes.paragraph:
    """Where and how the records were made, and with which TileLang."""
    gpu = data["gpu"]
    text = (f"Observed on {gpu['name']} ({gpu.get('sm', '?')}), driver "
            f"{gpu.get('driver', '?')}, CUDA toolkit {gpu.get('toolkit', '?')}, "
            f"compute-sanitizer {gpu.get('sanitizer', '?')}, TileLang "
            f"{gpu.get('tilelang', '?')}, on {data.get('date', '?')}")
    para = nodes.paragraph(classes=["tl-hardware-caption"])
    para += nodes.strong(text=text)
    if data.get("command"):
        para += nodes.Text(" with ")
        para += code(str(data["command"]))
    if data.get("method"):
        para += nodes.Text(f": {data['method']}.")
    measured = gpu.get("tilelang")
    if version and measured and measured != version:
        para += nodes.Text(f" This build uses TileLang {version}; a record stays attached "
                           "while the code the page shows is the one that ran.")
    return para
