"""The "Schedule figure" part and the benchmark chart, as builder-neutral nodes.

One figure per distinct schedule of the directive, labelled with the variants it covers
(:func:`...core.figures.model.group_variants`); a sentence for each group of variants with
nothing to draw (nothing pipelined, a failed variant). Each picture is a
:class:`..nodes.tl_figure` holding its data and, as its child, the sentence builders
without pictures print; the HTML and LaTeX visitors draw it (:mod:`..builders.figure_visitors`).
"""

from __future__ import annotations

from typing import Any

from docutils import nodes

from ...core.figures import chart, model, schedule_sentence
from ...core.plan.spec import DirectiveSpec, VariantSpec
from ...core.records.bench_data import benched
from ...core.results.result import Result
from ..nodes import tl_figure
from .parts import Context, Drawn, Rows, renders
from .timeline import timeline_nodes


def _line_of(spec: DirectiveSpec) -> Any:
    """Kernel line -> the line the kernel listing numbers it with (the document's for an
    inline kernel, the file's for a :file: one)."""
    def line(number: int | None) -> int | None:
        if number is None or spec.kernel_line is None:
            return number
        return spec.kernel_line + number - 1
    return line


def figure_node(kind: str, data: dict[str, Any], covers: list[str], ident: str,
                sentence: str) -> tl_figure:
    node = tl_figure(kind=kind, data=data, covers=covers, ident=ident,
                     classes=["tl-figure", f"tl-{kind}-figure"])
    node += nodes.paragraph(text=sentence, classes=["tl-figure-text"])
    return node


def schedule_figures(spec: DirectiveSpec,
                     rows: list[tuple[VariantSpec, Result]]) -> list[nodes.Node]:
    """The figures of every distinct schedule, then what could not be drawn, in words."""
    drawn: list[tuple[str, dict[str, Any]]] = []
    notes: list[tuple[str, str]] = []
    line = _line_of(spec)
    for variant, result in rows:
        figures, note = model.schedule_figures(result, line,
                                               synchronous=not variant.target.asynchronous)
        several = len(figures) > 1
        for fig in figures:
            where = f"line {fig['line']}" if fig.get("line") is not None \
                else f"loop {fig.get('loop_index', 0) + 1}"
            loop = f", {where}" if several else ""
            drawn.append((variant.heading + loop, fig))
        if note is not None:
            notes.append((variant.heading, note))
    found: list[nodes.Node] = []
    for n, (covers, fig) in enumerate(model.group_variants(drawn)):
        found.append(figure_node("schedule", fig, covers, f"{spec.name}-{n}",
                                 schedule_sentence(fig, covers)))
    for labels, note in model.group_notes(notes):
        found.append(nodes.paragraph(text=f"{', '.join(labels)}: {note}.",
                                     classes=["tl-note", "tl-no-figure"]))
    return found


def chart_figure(spec: DirectiveSpec, data: dict[str, Any], entry: dict[str, Any],
                 stale: tuple[str, ...], stale_mode: str) -> tl_figure | None:
    """One GPU's numbers for ``spec`` as a chart (None when none are left to draw)."""
    variants = [{"id": v.id, "heading": v.heading, "num_stages": v.num_stages,
                 "sweep": {k: x for k, x in v.axes if k not in ("num_stages", "target")}}
                for v in benched(spec)]
    found = chart.chart_input(data, entry, stale, stale_mode, variants, spec.name)
    if found is None:
        return None
    ident = f"{spec.name}-{data['gpu']['name']}"
    return figure_node("chart", found, [], ident, chart.sentence(found))


@renders("figure")
def _figures(spec: DirectiveSpec, rows: Rows, context: Context) -> Drawn | None:
    measured = timeline_nodes(spec, context)
    if not any(r.get("ok") for _, r in rows) and not measured:
        return None
    return Drawn([*schedule_figures(spec, rows), *measured])
