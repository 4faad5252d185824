"""Measured timelines on the page, under the schedule figures (class ``tl-timeline``).

Per GPU that recorded the directive (``tlstages timeline``): the figure of one block's
warps, variant by variant on one time axis (:mod:`...core.figures.timeline`); the line
that says where and how it was recorded; a table of what every recorded warp did (the
share of its time waiting, at a barrier, on tensor cores, the cycles of one loop
iteration) and the probes' cost, the kernel's time without them being the one that
counts; and, where the measured kernel did not run as the schedule plans, what differs.
Stale recordings are marked or left out, as benchmark numbers are.
"""

from __future__ import annotations

from typing import Any

from docutils import nodes

from ...core.figures.timeline import cost_words, sentence
from ...core.plan.spec import DirectiveSpec
from ...core.records.timeline_data import recorded
from ...core.records.timeline_read import timeline_input
from ..nodes import tl_figure
from .parts import Context
from .tables import Cell, code, table

_ROLES = {None: "warps", "producer": "producer warps", "consumer": "consumer warps"}


def _pct(value: float) -> str:
    return f"{100 * value:.0f} %"


def _provenance(data: dict[str, Any], entry: dict[str, Any],
                figure: dict[str, Any]) -> nodes.paragraph:
    gpu = data["gpu"]
    first = next(iter(entry["variants"].values()))
    para = nodes.paragraph(classes=["tl-timeline-caption"])
    para += nodes.strong(text=f"Recorded on {gpu['name']} ({first.get('target', '?')} code "
                              f"compiled for {first.get('compiled_for', '?')}), driver "
                              f"{gpu.get('driver', '?')}, CUDA {gpu.get('cuda', '?')}, torch "
                              f"{gpu.get('torch', '?')}, TileLang {gpu.get('tilelang', '?')}, "
                              f"on {data.get('date', '?')}")
    if data.get("command"):
        para += nodes.Text(" with ")
        para += code(str(data["command"]))
    if data.get("method"):
        para += nodes.Text(f": {data['method']}.")
    panels = figure["panels"]
    unplanned = [p["heading"] for p in panels if not p.get("compared")]
    if any(p["problems"] for p in panels):
        said = (" Where a recorded kernel did not run as the schedule plans, the figure and "
                "the notes below say so.")
    elif not unplanned:
        said = (" Every recorded warp ran its commits, waits, barrier operations and "
                "tensor-core work in the order the schedule plans, and the probed build "
                "wrote the plain build's output.")
    else:
        said = (" The probed builds wrote the plain builds' output; the order the warps ran "
                f"their steps in is not compared with a plan for {', '.join(unplanned)} (a "
                "kernel of several pipelined loops, or a step only some iterations run).")
    para += nodes.Text(said)
    para += nodes.Text(" The time a launch takes is the plain build's; the probed one's is "
                       "its cost.")
    return para


def _table(figure: dict[str, Any]) -> nodes.Node:
    headers: list[Cell] = ["variant", "time a launch (probed: cost)", "recorded",
                           "waiting", "at __syncthreads", "on tensor cores",
                           "issuing copies", "cycles per iteration"]
    body: list[list[Cell]] = []
    for panel in figure["panels"]:
        name: Cell = panel["heading"]
        if panel["stale"]:
            name = [nodes.emphasis(text="stale: ", classes=["tl-stale"]),
                    nodes.Text(panel["heading"])]
        for n, role in enumerate(panel["summary"]):
            iteration = role["iteration"]
            body.append([name if n == 0 else "", cost_words(panel) if n == 0 else "",
                         f"{role['warps']} {_ROLES.get(role['role'], 'warps')}",
                         _pct(role["wait"]), _pct(role["barrier"]), _pct(role["mma"]),
                         _pct(role["issue"]),
                         f"{iteration:.0f}" if iteration is not None else "—"])
    return table(headers, body, ["tl-table", "tl-timeline-table"],
                 widths=[12, 22, 12, 9, 10, 10, 10, 10])


def timeline_nodes(spec: DirectiveSpec, context: Context) -> list[nodes.Node]:
    """Each GPU's recorded timelines of ``spec`` (none when it recorded none)."""
    found: list[nodes.Node] = []
    variants = [{"id": v.id, "heading": v.heading} for v in recorded(spec)]
    for data, entry, stale in context.timelines:
        figure = timeline_input(data, entry, stale, context.bench_stale, variants, spec.name)
        if figure is None:
            continue
        box = nodes.container(classes=["tl-timeline"])
        drawn = tl_figure(kind="timeline", data=figure, covers=[],
                          ident=f"{spec.name}-{data['gpu']['name']}",
                          classes=["tl-figure", "tl-timeline-figure"])
        drawn += nodes.paragraph(text=sentence(figure), classes=["tl-figure-text"])
        box += drawn
        box += _provenance(data, entry, figure)
        box += _table(figure)
        for panel in figure["panels"]:
            for problem in panel["problems"]:
                box += nodes.paragraph(text=f"{panel['heading']}: not as planned: {problem}.",
                                       classes=["tl-note", "tl-timeline-problem"])
        found.append(box)
    return found
