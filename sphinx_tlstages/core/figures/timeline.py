"""The measured timeline: what the warps of one recorded block did, variant by variant.

One panel per recorded variant, all on one time axis (SM cycles from the block's first
probe), so depths compare at a glance; one row per role (the block's first warp, or the
producer's and the consumer's first warps of a warp-specialised block). Above each panel
its parts as the schedule figure names them (prologue, steady state with its loop
variable, epilogue) and a tick where each loop iteration begins; on the rows, coloured
spans for what the warp did between two probes (data from
:func:`...records.timeline_read.timeline_input`): waiting for data or a slot (a cp.async
or mbarrier wait, in the accent colour), at a ``__syncthreads``, tensor-core work,
issuing copies; commits and arrives as ticks. A loop longer than the drawing can show
is drawn to the start of its iteration 16, and says so. Stale recordings are labelled.
"""

from __future__ import annotations

import math
from typing import Any

from .drawing import Drawing, digest, sans_width, wrap

Json = dict[str, Any]

MARGIN = 8.0
LABEL = 118.0
MAX_WIDTH = 700.0
READABLE = 400.0
ROW = 14.0
ROW_GAP = 5.0
CLASS = {"wait": "accentfill", "barrier": "neutral", "mma": "v2", "issue": "v1"}
WORDS = {"wait": "waiting (cp.async wait, mbarrier wait)", "barrier": "__syncthreads",
         "mma": "tensor cores (T.gemm)", "issue": "issuing copies (cp.async, TMA)"}
ROLE_WORDS = {None: "the warp", "producer": "the producer", "consumer": "the consumer"}


def _nice(raw: float) -> float:
    magnitude = 10 ** math.floor(math.log10(raw)) if raw > 0 else 1
    return next((m * magnitude for m in (1, 2, 2.5, 5, 10) if raw <= m * magnitude),
                10 * magnitude)


def _ms(value: float) -> str:
    return f"{value * 1000:.1f} µs" if value < 1 else f"{value:.3f} ms"


def cost_words(panel: Json) -> str:
    """``26.0 µs a launch (probed: 28.6 µs, +10 %)``."""
    extra = 100 * (panel["probed_ms"] / panel["plain_ms"] - 1)
    return (f"{_ms(panel['plain_ms'])} a launch (probed: {_ms(panel['probed_ms'])}, "
            f"{extra:+.0f} %)")


def timeline_drawing(data: Json, theme: str = "html", ident: str = "") -> Drawing:
    """The figure of :func:`...records.timeline_read.timeline_input`'s data."""
    panels = data["panels"]
    pic = Drawing("tlt-" + digest([data, theme, ident]), theme)
    width = MAX_WIDTH
    x0 = MARGIN + LABEL
    top = max(row["end"] for p in panels for row in p["rows"]) or 1
    scale = (width - x0 - MARGIN - 12) / top

    def x(cycle: float) -> float:
        return x0 + cycle * scale

    title = f"Measured on {data['gpu']}: {data['directive']}, one block's warps"
    pic.text(MARGIN, 16, title, "fg", weight="bold")
    y = 30.0
    for panel in panels:
        y = _panel(pic, panel, y, x, width)
    y = _axis(pic, data, y, x, top, width)
    y = _legend(pic, data, y + 6, width)
    return pic.finish(width, y + 4, title, describe(data), 3)


def _panel(pic: Drawing, panel: Json, y: float, x: Any, width: float) -> float:
    head = f"{panel['heading']}{' (stale)' if panel['stale'] else ''}"
    pic.text(MARGIN, y + 11, head, "fg", weight="bold")
    pic.text(MARGIN + sans_width(head, 11) * 1.1 + 8, y + 11, cost_words(panel), "muted",
             size=10)
    y += 18
    first = panel["rows"][0]
    var = panel.get("loop_var") or "k"
    for name, start, end in first["parts"]:
        said = (f"steady state, {var} = 0…{first['iterations'] - 1}" if name == "loop"
                else name)
        room = x(end) - x(start)
        pic.line(x(start), y + 12, x(end), y + 12, "grid", 1)
        pic.line(x(start), y + 9, x(start), y + 14, "grid", 1)
        pic.line(x(end), y + 9, x(end), y + 14, "grid", 1)
        if sans_width(said, 9.5) <= room:
            pic.text((x(start) + x(end)) / 2, y + 8, said, "muted", "middle", 9.5)
    starts = first["starts"]
    step = next((s for s in (1, 2, 4, 8, 16, 32) if len(starts) < 2
                 or (x(starts[-1][1]) - x(starts[0][1])) / max(len(starts) - 1, 1) * s >= 22),
                64)
    y += 28  # the parts' line, then the iterations' numbers and ticks
    for n, row in enumerate(panel["rows"]):
        ry = y + n * (ROW + ROW_GAP)
        pic.text(MARGIN, ry + 11, row["label"], "fg", size=10)
        pic.rect(x(0), ry, x(row["end"]) - x(0), ROW, "band", hatch=panel["stale"])
        for kind, start, end, label, iteration in row["segments"]:
            at = f", {var} = {iteration}" if iteration >= 0 else ""
            tip = (f"{label}{at}: {end - start} cycles" if kind in ("wait", "barrier")
                   else None)
            pic.rect(x(start), ry + 1, max(x(end) - x(start), 0.6), ROW - 2, CLASS[kind],
                     title=tip)
        for mark, cycle in row["marks"]:
            pic.line(x(cycle), ry - 2, x(cycle), ry + 3, "accent" if mark == "A" else "stroke",
                     0.8)
        if n == 0:
            for k, cycle in row["starts"]:
                pic.line(x(cycle), ry - 5, x(cycle), ry, "stroke", 0.8)
                if k % step == 0:
                    pic.text(x(cycle), ry - 7, str(k), "muted", "middle", 8.5)
        if row["iterations"] > len(row["starts"]):
            pic.text(x(row["end"]) + 3, ry + 10, "…", "muted", size=11,
                     title=f"{len(row['starts'])} of {row['iterations']} iterations drawn")
    y += len(panel["rows"]) * (ROW + ROW_GAP)
    for problem in panel["problems"]:
        for line in wrap(f"not as planned: {problem}", width - 2 * MARGIN, 10):
            pic.text(MARGIN, y + 10, line, "accentfill", size=10)
            y += 13
    return y + 8


def _axis(pic: Drawing, data: Json, y: float, x: Any, top: float, width: float) -> float:
    step = _nice(top / 6)
    pic.line(x(0), y, x(top), y, "stroke", 0.8)
    ticks = int(top // step) + 1
    for n in range(ticks):
        cycle = n * step
        pic.line(x(cycle), y, x(cycle), y + 4, "stroke", 0.8)
        label = f"{cycle / 1000:g}k" if cycle else "0"
        pic.text(x(cycle), y + 14, label, "muted", "middle", 9)
    mhz = data.get("mhz")
    unit = "SM clock cycles from the block's first probe"
    if mhz:
        unit += f" (at {mhz} MHz, 1k cycles ≈ {1000 / mhz:.2f} µs)"
    pic.text(MARGIN, y + 14, "cycles", "muted", size=9)
    pic.text(x(0), y + 27, unit, "muted", size=9.5)
    return y + 32


def _legend(pic: Drawing, data: Json, y: float, width: float) -> float:
    xx = MARGIN
    for kind in ("wait", "barrier", "mma", "issue"):
        said = WORDS[kind]
        if xx + 18 + sans_width(said, 10) > width - MARGIN:
            xx, y = MARGIN, y + 15
        pic.rect(xx, y - 9, 12, 10, CLASS[kind], rx=1.5)
        pic.text(xx + 16, y, said, "fg", size=10)
        xx += 16 + sans_width(said, 10) + 12
    y += 15
    note = ("Ticks above a row: C a cp.async commit, A an mbarrier arrive (in the accent "
            "colour); above the first row, the start of each loop iteration, numbered. "
            "Blank: between probes, neither waiting nor computing (address arithmetic, "
            "shared-memory loads outside a T.gemm, the probes themselves).")
    if any(row["role"] for p in data["panels"] for row in p["rows"]):
        note += (" A producer waits for a free slot of the ring (its empty barrier), a "
                 "consumer for a full one (the tile it multiplies).")
    if any(row["iterations"] > len(row["starts"]) for p in data["panels"] for row in p["rows"]):
        note += " …: the drawing stops at the start of iteration 16; the numbers count all."
    for line in wrap(note, min(width, READABLE * 1.6) - 2 * MARGIN, 10):
        pic.text(MARGIN, y, line, "muted", size=10)
        y += 13
    return y - 6


def role_words(entry: Json) -> str:
    """One role's shares in words: ``waits 36 % of its time, 35 % in tensor-core work``."""
    return (f"{ROLE_WORDS.get(entry['role'], 'the warp')} waits {100 * entry['wait']:.0f} % "
            f"of its time, is at a __syncthreads {100 * entry['barrier']:.0f} %, on tensor "
            f"cores {100 * entry['mma']:.0f} %")


def describe(data: Json) -> str:
    """The figure in words (its ``<desc>``)."""
    said = [f"Measured timeline of {data['directive']} on {data['gpu']}, one block, time "
            "in SM cycles from left to right."]
    for panel in data["panels"]:
        roles = "; ".join(role_words(s) for s in panel["summary"])
        said.append(f"{panel['heading']}{' (stale)' if panel['stale'] else ''}: "
                    f"{cost_words(panel)}; {roles}.")
        said += [f"Not as planned: {p}." for p in panel["problems"]]
    return " ".join(said)


def sentence(data: Json) -> str:
    """The figure in one sentence, for builders that show no pictures."""
    parts = []
    for panel in data["panels"]:
        roles = "; ".join(role_words(s) for s in panel["summary"])
        parts.append(f"{panel['heading']}: {roles}")
    return f"Measured timeline on {data['gpu']}: " + " · ".join(parts) + "."
