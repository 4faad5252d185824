"""One panel of the benchmark chart: axes, bars, whiskers, the reference line."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .drawing import Drawing, wrap

Json = dict[str, Any]


def value(v: Json, unit: str) -> tuple[float, float, float]:
    """(median, low, high) of the metric. TFLOP/s ranges come from the times: a faster
    launch does more TFLOP/s, so the 20th percentile of the time gives the high end."""
    if unit == "latency":
        return float(v["median_ms"]), float(v["p20_ms"]), float(v["p80_ms"])
    t = float(v["tflops"])
    return t, t * v["median_ms"] / v["p80_ms"], t * v["median_ms"] / v["p20_ms"]


def fmt(number: float, unit: str) -> str:
    if unit == "tflops":
        return f"{number:.0f}" if number >= 100 else f"{number:.1f}"
    return f"{number:.3f}" if number < 1 else f"{number:.2f}"


@dataclass(frozen=True)
class Panel:
    x: float
    y: float
    w: float
    h: float
    name: str | None
    group: dict[str, list[Json]]
    colour: dict[str, int]
    stages: list[int]
    unit: str
    y_max: float
    step: float
    ref: Json | None
    best: Json | None
    axis_title: bool
    label_ref: bool


def draw_panel(pic: Drawing, p: Panel) -> None:
    left, bottom, top = 46.0, 30.0, 22.0 if p.name else 14.0
    plot_x, plot_w = p.x + left, p.w - left - (118.0 if p.ref and p.label_ref else 10.0)
    plot_y, plot_h = p.y + top, p.h - top - bottom
    unit = "TFLOP/s" if p.unit == "tflops" else "ms"
    if p.name:
        pic.text(p.x + left, p.y + 12, p.name, "fg", size=10.5, weight="bold")

    def ys(number: float) -> float:
        return plot_y + plot_h - plot_h * min(number, p.y_max) / p.y_max

    ticks = round(p.y_max / p.step)
    for n in range(ticks + 1):
        tick = n * p.step
        pic.line(plot_x, ys(tick), plot_x + plot_w, ys(tick), "grid", 0.6)
        pic.text(plot_x - 5, ys(tick) + 3.5, fmt(tick, p.unit) if tick else "0", "muted",
                 "end", 9.5)
    if p.axis_title:
        cx, cy = p.x + 10, plot_y + plot_h / 2
        pic.text(cx, cy, unit, "muted", "middle", 10, rotate=-90)
    group_w = plot_w / max(len(p.stages), 1)
    names = list(p.group)
    bar_w = min(34.0, (group_w - 12) / max(len(names), 1))
    for s, stage in enumerate(p.stages):
        gx = plot_x + s * group_w + (group_w - bar_w * len(names)) / 2
        pic.text(plot_x + (s + 0.5) * group_w, plot_y + plot_h + 14, str(stage), "fg",
                 "middle", 10)
        for n, series in enumerate(names):
            v = next((v for v in p.group[series] if v["num_stages"] == stage), None)
            if v is not None:
                _bar(pic, p, v, gx + n * bar_w, bar_w, p.colour[series], ys, plot_y + plot_h)
    pic.line(plot_x, plot_y + plot_h, plot_x + plot_w, plot_y + plot_h, "stroke", 1)
    pic.text(plot_x + plot_w / 2, plot_y + plot_h + 27, "num_stages", "muted", "middle", 10)
    if p.ref:
        med = value(p.ref, p.unit)[0]
        pic.line(plot_x, ys(med), plot_x + plot_w + (4 if p.label_ref else 0), ys(med),
                 "accent", 1.4, dash=(6, 3))
        if p.label_ref:
            text = f"{p.ref['label']}: {fmt(med, p.unit)} {unit}"
            for n, line in enumerate(wrap(text, 112, 9.5)[:3]):
                pic.text(plot_x + plot_w + 8, ys(med) + 3 + n * 11, line, "fg", size=9.5)


def _bar(pic: Drawing, p: Panel, v: Json, bx: float, bar_w: float, colour: int, ys: Any,
         base: float) -> None:
    med, lo, hi = value(v, p.unit)
    unit = "TFLOP/s" if p.unit == "tflops" else "ms"
    top = ys(med)
    tip = (f"{v['heading']}: {fmt(med, p.unit)} {unit} (20th–80th percentile "
           f"{fmt(lo, p.unit)}–{fmt(hi, p.unit)}), median {v['median_ms']:.4f} ms"
           + (", stale" if v["stale"] else "") + ("" if v["correct"] else ", wrong output"))
    pic.rect(bx + 1, top, bar_w - 2, base - top, "stale" if v["stale"] else f"v{colour}", 0,
             tip, hatch=bool(v["stale"]))
    cx = bx + bar_w / 2
    for y1, y2, x1, x2 in ((ys(hi), ys(lo), cx, cx), (ys(hi), ys(hi), cx - 3, cx + 3),
                           (ys(lo), ys(lo), cx - 3, cx + 3)):
        pic.line(x1, y1, x2, y2, "stroke", 1.1)
    label = fmt(med, p.unit)
    if v["stale"]:
        pic.text(cx, ys(hi) - 15, "stale", "muted", "middle", 9, "bold")
    elif not v["correct"]:
        label = "✗ " + label
    pic.text(cx, ys(hi) - 4, label, "muted" if v["stale"] else "fg", "middle", 9)
    if p.best is not None and v is p.best:
        pic.rect(bx - 0.5, top - 1.5, bar_w + 1, base - top + 1.5, "accent", outline=2.4)
        pic.text(cx, ys(hi) - 15, "best", "fg", "middle", 9.5, "bold")
