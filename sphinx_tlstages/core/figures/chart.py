"""The benchmark chart: one GPU's numbers for one directive, as one SVG.

Bars per num_stages, one series per combination of the other swept values (grouped while
there are at most :data:`GROUPED_MAX` series, else small multiples on one shared scale);
the 20th-80th percentile as a whisker; TFLOP/s when every variant has them (``:flops:``),
else latency; the reference (``:reference:``) as a dashed line; the best fresh, correct
variant outlined and named; stale numbers hatched grey and labelled "stale" (or left out,
as ``tlstages_bench_stale`` says: staleness is decided by the checks, not here).
"""

from __future__ import annotations

import math
from typing import Any

from .chart_panel import Panel, draw_panel, fmt, value
from .drawing import Drawing, clip, digest, sans_width, wrap

Json = dict[str, Any]

GROUPED_MAX = 4
MARGIN = 8.0
MAX_WIDTH = 740.0


def chart_input(data: Json, entry: Json, stale: tuple[str, ...], stale_mode: str,
                variants: list[Json], directive: str) -> Json | None:
    """The chart's data: ``data`` a bench file, ``entry`` its numbers for ``directive``,
    ``variants`` the page's, in page order (``{"id", "heading", "num_stages", "sweep"}``,
    sweep: the other swept values). None when nothing is left to draw."""
    drawn = []
    for variant in variants:
        vid = variant["id"]
        numbers = entry["variants"].get(vid)
        if numbers is None or (vid in stale and stale_mode == "hide"):
            continue
        drawn.append({"id": vid, "heading": variant["heading"],
                      "num_stages": variant["num_stages"], "sweep": variant["sweep"],
                      "median_ms": numbers["median_ms"], "p20_ms": numbers["p20_ms"],
                      "p80_ms": numbers["p80_ms"], "tflops": numbers.get("tflops"),
                      "correct": numbers.get("correct", True) is not False,
                      "stale": vid in stale})
    if not drawn:
        return None
    gpu, ref = data["gpu"], entry.get("reference")
    return {"gpu": gpu["name"], "date": data.get("date"), "tilelang": gpu.get("tilelang"),
            "directive": directive, "variants": drawn,
            "reference": None if ref is None else {
                "label": f"reference {ref.get('expression', '')}".rstrip(),
                "median_ms": ref["median_ms"], "p20_ms": ref["p20_ms"],
                "p80_ms": ref["p80_ms"], "tflops": ref.get("tflops")}}


def metric(data: Json) -> str:
    every = data["variants"] + ([data["reference"]] if data.get("reference") else [])
    return "tflops" if all(isinstance(v.get("tflops"), (int, float)) for v in every) \
        else "latency"


def _series(data: Json) -> dict[str, list[Json]]:
    series: dict[str, list[Json]] = {}
    for v in data["variants"]:
        name = ", ".join(f"{k}={x}" for k, x in v["sweep"].items()) or "num_stages"
        series.setdefault(name, []).append(v)
    return series


def best(data: Json) -> Json | None:
    unit = metric(data)
    fresh = [v for v in data["variants"] if not v["stale"] and v["correct"]]
    if not fresh:
        return None
    pick = max if unit == "tflops" else min
    chosen: Json = pick(fresh, key=lambda v: value(v, unit)[0])
    return chosen


def _nice_step(top: float, ticks: int = 5) -> float:
    raw = top / ticks
    magnitude = 10 ** math.floor(math.log10(raw)) if raw > 0 else 1
    for m in (1, 2, 2.5, 5, 10):
        if raw <= m * magnitude:
            return m * magnitude
    return 10 * magnitude


def chart_drawing(data: Json, theme: str = "html", ident: str = "") -> Drawing:
    """The chart of :func:`chart_input`'s data."""
    unit = metric(data)
    higher = unit == "tflops"
    series = _series(data)
    stages = sorted({v["num_stages"] for v in data["variants"]})
    ref = data.get("reference")
    top = max([value(v, unit)[2] for v in data["variants"]]
              + ([value(ref, unit)[2]] if ref else []))
    step = _nice_step(top * 1.12)
    y_max = step * math.ceil(top * 1.12 / step)
    grouped = len(series) <= GROUPED_MAX
    bars = len(stages) * (len(series) if grouped else 1)
    if grouped:
        width = min(MAX_WIDTH, max(420.0, 46 + len(stages) * (12 + 36 * len(series))
                                   + (130 if ref else 10) + 2 * MARGIN))
    else:
        width = MAX_WIDTH
    prefix = "tlc-" + digest([data, theme, ident])
    pic = Drawing(prefix, theme)
    panels = [(None, series)] if grouped else [(name, {name: vs}) for name, vs in series.items()]
    cols = 1 if grouped else max(1, min(3, int((width - MARGIN) // 230)))
    panel_w = (width - 2 * MARGIN) / cols
    panel_h = 230.0 if grouped else 170.0
    legend_h = 22.0 if grouped and len(series) > 1 else 0.0
    y0 = 40.0 + legend_h

    title = (f"{data['gpu']}: {data['directive']}, "
             f"{'TFLOP/s' if higher else 'latency (ms)'} per variant")
    pic.text(MARGIN, 16, clip(title, int((width - 16) / 6.6)), "fg", weight="bold")
    said = [f"median, whisker 20th–80th percentile ({'higher' if higher else 'lower'} "
            "is better)"]
    if ref and not grouped:
        said.append(f"dashed: {ref['label']} {fmt(value(ref, unit)[0], unit)}")
    subtitle = "; ".join(said)
    for n, line in enumerate(wrap(subtitle, width - 2 * MARGIN, 10)[:2]):
        pic.text(MARGIN, 32 + 12 * n, line, "muted", size=10)
    y0 += 12 * (len(wrap(subtitle, width - 2 * MARGIN, 10)[:2]) - 1)
    if legend_h:
        x = MARGIN
        for n, label in enumerate(series):
            pic.rect(x, y0 - legend_h + 4, 12, 10, f"v{n}", rx=2)
            pic.text(x + 16, y0 - legend_h + 13, label, "fg", size=10)
            x += 16 + sans_width(label, 10) + 14
    chosen = best(data)
    for p, (name, group) in enumerate(panels):
        panel = Panel(x=MARGIN + (p % cols) * panel_w, y=y0 + (p // cols) * (panel_h + 8),
                      w=panel_w - 6, h=panel_h, name=name, group=group,
                      colour={s: list(series).index(s) for s in group}, stages=stages,
                      unit=unit, y_max=y_max, step=step, ref=ref, best=chosen,
                      axis_title=p % cols == 0, label_ref=grouped)
        draw_panel(pic, panel)
    height = y0 + math.ceil(len(panels) / cols) * (panel_h + 8)
    notes = []
    if any(v["stale"] for v in data["variants"]):
        notes.append("hatched grey, labelled stale: measured on an earlier version of "
                     "this kernel or its code")
    if any(not v["correct"] for v in data["variants"]):
        notes.append("✗: the output did not match the reference")
    for line in wrap(" · ".join(notes), width - 2 * MARGIN, 10) if notes else []:
        pic.text(MARGIN, height + 4, line, "muted", size=10)
        height += 14
    return pic.finish(width, height + 4, title, describe(data),
                      max(len(series), 1) if bars else 1)


def describe(data: Json) -> str:
    """The chart in words (its ``<desc>``)."""
    unit = metric(data)
    said = "TFLOP/s" if unit == "tflops" else "ms"
    parts = [f"Bar chart of {data['directive']} measured on {data['gpu']}: "
             f"{'TFLOP/s' if unit == 'tflops' else 'latency in milliseconds'} per "
             "num_stages (median of the timed launches, whisker from the 20th to the 80th "
             "percentile)."]
    for name, vs in _series(data).items():
        values = "; ".join(f"num_stages {v['num_stages']}: {fmt(value(v, unit)[0], unit)}"
                           + (" (stale)" if v["stale"] else "")
                           + ("" if v["correct"] else " (wrong output)") for v in vs)
        parts.append(f"{name if name != 'num_stages' else 'Variants'}: {values}.")
    ref = data.get("reference")
    if ref:
        parts.append(f"{ref['label']}: {fmt(value(ref, unit)[0], unit)} {said}.")
    chosen = best(data)
    if chosen:
        parts.append(f"Best: {chosen['heading']}.")
    return " ".join(parts)


def sentence(data: Json) -> str:
    """The chart in one sentence, for builders that show no pictures."""
    unit = metric(data)
    said = "TFLOP/s" if unit == "tflops" else "ms"
    chosen = best(data)
    text = (f"Chart of {'TFLOP/s' if unit == 'tflops' else 'latency'} per variant on "
            f"{data['gpu']}")
    if chosen:
        text += f"; best {chosen['heading']} at {fmt(value(chosen, unit)[0], unit)} {said}"
    ref = data.get("reference")
    if ref:
        text += f"; {ref['label']} {fmt(value(ref, unit)[0], unit)} {said}"
    stale = sum(v["stale"] for v in data["variants"])
    if stale:
        text += f"; {stale} variant(s) stale"
    return text + "."
