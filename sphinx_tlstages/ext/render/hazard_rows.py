"""The *Hazards* table under the summary: the hazard check's verdict per variant, and the
synchronisation no dependence in its model needs.

Variants share a row only where everything the row says is the same for each of them
(the verdict, each finding and the CUDA lines it names, the kernel it is about): a row's
details are those of every variant it names, and its label reads as one set
(:func:`...core.plan.variants.set_label`). Findings that repeat within a variant (one
``__syncthreads`` after another) are one sentence with their lines. Each CUDA line named
links to that line of the listing (:mod:`.cuda_refs`; of the first variant a row names,
where it names several, each of which has the finding at the same line).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from docutils import nodes

from ...core.plan.spec import DirectiveSpec, VariantSpec
from ...core.plan.variants import set_label
from ...core.results.kernels import kernels, placed_in_first
from ...core.results.result import Result
from .cuda_refs import cuda_lines
from .hardware import caption as hardware_caption
from .hardware import cell as hardware_cell
from .hardware import heading as hardware_heading
from .parts import Context
from .tables import Cell, Span, code, doc_line, table

Refs = Callable[[Iterable[int]], list[nodes.Node]]


def _finding(spec: DirectiveSpec, finding: dict[str, Any], refs: Refs) -> nodes.paragraph:
    """One finding: its kind and words, then the kernel statements of its accesses, each
    with its kernel line and CUDA lines."""
    para = nodes.paragraph(classes=["tl-hazard-finding"])
    para += nodes.Text(f"{finding['kind']}: {finding['text']}")
    for i, statement in enumerate(finding.get("statements", [])):
        para += nodes.Text("; in the kernel: " if not i else "; ")
        para += nodes.Text(f"{statement['text']} (line {doc_line(spec, statement['line'])}")
        where = refs(statement.get("cuda_lines") or [])
        if where:
            para += nodes.Text(", ")
            para.extend(where)
        para += nodes.Text(")")
    return para


def _subject(variant: VariantSpec, result: Result) -> nodes.paragraph | None:
    """Which kernel the verdict is about, where the code holds several."""
    names = [k.name for k in kernels(result["cuda"], variant.source_name)]
    if len(names) < 2:
        return None
    para = nodes.paragraph(classes=["tl-hazard-subject"])
    para += nodes.Text("Of ")
    para += code(names[0])
    para += nodes.Text(f", the first of the {len(names)} kernels, which the check reads; ")
    for i, name in enumerate(names[1:]):
        para += nodes.Text(", " if i else "")
        para += code(name)
    para += nodes.Text(f" {'is' if len(names) == 2 else 'are'} not checked.")
    return para


def _verdict_cell(spec: DirectiveSpec, variant: VariantSpec, result: Result,
                  refs: Refs) -> nodes.container:
    hazards = result["hazards"]
    cell = nodes.container()
    line = nodes.paragraph()
    if hazards["verdict"] == "hazard":
        line += nodes.strong(text=hazards["text"], classes=["tl-hazard"])
    else:
        line += nodes.Text(hazards["text"])
    cell += line
    for finding in hazards["findings"]:
        cell += _finding(spec, dict(finding), refs)
    subject = _subject(variant, result)
    if subject is not None:
        cell += subject
    return cell


def _what_and_why(entry: dict[str, Any]) -> tuple[str, str]:
    """``("__syncthreads", "not needed by ...")`` from an entry's words."""
    text, what = str(entry.get("text", "")), str(entry.get("what") or "")
    if what and text.startswith(what):
        rest = text[len(what):]
        for lead in (": ", " is "):
            if rest.startswith(lead):
                return what, rest[len(lead):]
        return what, rest.strip()
    return (what or "synchronisation"), text


def _unneeded_cell(spec: DirectiveSpec, variant: VariantSpec, result: Result,
                   refs: Refs) -> nodes.container | None:
    """The unneeded synchronisation of one variant, one sentence per kind and reason
    with all its lines: ``__syncthreads at CUDA lines 40, 52, 61 (from kernel line 9):
    not needed by ...``."""
    entries = [placed_in_first(dict(e), result["cuda"], variant.source, variant.source_name)
               for e in result.get("unneeded_sync") or []]
    if not entries:
        return None
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for entry in entries:
        groups.setdefault(_what_and_why(entry), []).append(entry)
    cell = nodes.container()
    cell += nodes.paragraph(text="synchronisation no dependence in the check's model needs:",
                            classes=["tl-unneeded-sync"])
    for (what, why), found in groups.items():
        para = nodes.paragraph(classes=["tl-unneeded-sync"])
        lines = [n for e in found for n in e.get("cuda_lines") or []]
        where = refs(lines)
        para += nodes.Text(what + (" at " if where else ""))
        para.extend(where)
        if not where and len(found) > 1:
            para += nodes.Text(f" ({len(found)} of them)")
        kernel_lines = sorted({e["line"] for e in found if e.get("line") is not None})
        if kernel_lines:
            para += nodes.Text(f" (from kernel line{'s' if len(kernel_lines) > 1 else ''} "
                               + ", ".join(doc_line(spec, n) for n in kernel_lines) + ")")
        elif where:
            para += nodes.Text(" (no #line of the compiler names its kernel line)")
        para += nodes.Text(f": {why}")
        cell += para
    return cell


def _grouped(cells: list[tuple[VariantSpec, nodes.container, list[tuple[str, Cell]]]],
             columns: int) -> list[list[Cell | Span]]:
    """One row per distinct cell (and what each GPU observed, ``columns`` of it), in order,
    naming the variants whose cell it is."""
    groups: dict[tuple[str, ...], tuple[list[VariantSpec], list[Cell | Span]]] = {}
    for variant, cell, observed in cells:
        said = (cell.astext(), *(words for words, _ in observed))
        if said in groups:
            groups[said][0].append(variant)
        else:
            groups[said] = ([variant], [cell, *(c for _, c in observed),
                                        *([""] * (columns - len(observed)))])
    return [[set_label(variants), *row] for variants, row in groups.values()]


def hazards_table(spec: DirectiveSpec, rows: list[tuple[VariantSpec, Result]],
                  context: Context) -> list[nodes.Node]:
    """The *Hazards* table: a row per distinct verdict (and, beside it, what each GPU
    observed under compute-sanitizer: :mod:`.hardware`), then a row per distinct list of
    unneeded synchronisation, then the line saying where each GPU's records come from;
    nothing when no result holds a verdict and no GPU a record (a page built from a
    snapshot recorded before the check)."""
    hardware = context.hardware
    verdicts: list[tuple[VariantSpec, nodes.container, list[tuple[str, Cell]]]] = []
    unneeded: list[tuple[VariantSpec, nodes.container, list[tuple[str, Cell]]]] = []
    for variant, result in rows:
        hazards = result.get("hazards") if result.get("ok") else None
        observed = [hardware_cell(attached, variant, result) for attached in hardware]
        if hazards is None:
            if any(entry["variants"].get(variant.id) for _, entry, _ in hardware):
                verdicts.append((variant, nodes.container(
                    "", nodes.paragraph(text="no verdict on this page")), observed))
            continue

        def refs(lines: Iterable[int], variant: VariantSpec = variant,
                 result: Result = result) -> list[nodes.Node]:
            return cuda_lines(spec, variant, result, lines, context)
        verdicts.append((variant, _verdict_cell(spec, variant, result, refs), observed))
        cell = _unneeded_cell(spec, variant, result, refs)
        if cell is not None:
            unneeded.append((variant, cell, []))
    if not verdicts:
        return []
    columns = len(hardware)
    headers = ["Hazards", "what the hazard check found in the final code",
               *(hardware_heading(data) for data, _, _ in hardware)]
    widths = [8, 92] if not columns else [8, 52, *([40 // columns] * columns)]
    drawn: list[nodes.Node] = [table(headers, _grouped(verdicts, columns)
                                     + _grouped(unneeded, columns),
                                     ["tl-table", "tl-hazards"], widths=widths)]
    drawn += [hardware_caption(data, context.version) for data, _, _ in hardware]
    return drawn


__all__ = ["hazards_table"]
