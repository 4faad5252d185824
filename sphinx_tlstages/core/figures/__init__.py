"""Pictures of what the compiler did: the pipeline schedule as a figure, the benchmark
numbers as a chart. Plain data in, one SVG string out; no Sphinx, no TileLang.

**Why drawn by hand.** The figures are boxes, lines and text on a grid this code
computes anyway (lanes, steps, ring slots, bars). Weighed against it: drawsvg (a thin
builder: 77 ms to import and no help with theming or accessibility, which would still be
ours) and matplotlib (pyplot costs 1.4 s to import warm, 9 s with a cold font cache, about
150 ms and 12 KB per small chart; colours are baked in and text becomes paths, so the
figure can neither follow the page's theme nor be read by a screen reader; it needs
``svg.hashsalt`` and a cleared date to be deterministic). Written by hand, a figure costs
about a millisecond, is deterministic by construction (numbers printed with one decimal,
no dates, ids from a digest of the input), small (5-30 KB), and carries ``role="img"``,
a ``<title>`` and a ``<desc>`` that says in words what it shows.

**Why inline SVG with CSS custom properties.** In HTML each figure is inlined in the page
(no ``<img>``: a page's CSS does not reach into an image) and its ``<style>`` takes every
colour from ``var(--tl-fig-*, fallback)``; text and strokes fall back to ``currentColor``,
so a dark theme needs nothing at all, and the extension's stylesheet maps the variables
to furo's. Data colours are Okabe and Ito's colour-blind-safe palette, and colour is never
the only cue: a box says its version (``v2``), a wait has a bar, a stale bar is hatched and
labelled. No script. For print (LaTeX) the same drawing gets fixed colours on white and is written
as TikZ picture code (:mod:`.tikz`): LaTeX draws it in the document's fonts, with no
converter.

Modules: :mod:`.model` (figure data from results, one figure per distinct schedule),
:mod:`.lanes` and :mod:`.cp_async` (the cp.async pipeline), :mod:`.warp_chips` and
:mod:`.warp` (warp-specialised loops), :mod:`.hazard_marks` (a hazard finding on either),
:mod:`.chart` and :mod:`.chart_panel` (benchmark numbers), :mod:`.timeline` (a recorded
timeline of the warps, from ``tlstages timeline``), :mod:`.occupancy` (blocks per SM and
their limits), :mod:`.drawing` (shapes and layout helpers), :mod:`.svg` and
:mod:`.tikz` (the writers).
"""

from __future__ import annotations

from typing import Any

from . import lanes, warp_chips
from .chart import chart_drawing
from .cp_async import cp_async_drawing
from .drawing import Drawing
from .occupancy import occupancy_drawing
from .svg import to_svg
from .timeline import timeline_drawing
from .warp import warp_specialized_drawing

__all__ = ["Drawing", "chart_drawing", "chart_svg", "occupancy_drawing", "schedule_drawing",
           "schedule_sentence", "schedule_svg", "timeline_drawing", "to_svg"]


def schedule_drawing(fig: dict[str, Any], covers: list[str], theme: str = "html",
                     ident: str = "") -> Drawing:
    """One schedule figure (:func:`.model.schedule_figures`' data), drawn."""
    if fig.get("kind") == "warp_specialized":
        return warp_specialized_drawing(fig, covers, theme, ident)
    return cp_async_drawing(fig, covers, theme, ident)


def schedule_svg(fig: dict[str, Any], covers: list[str], theme: str = "html",
                 ident: str = "") -> str:
    """The SVG of one schedule figure."""
    return to_svg(schedule_drawing(fig, covers, theme, ident))


def chart_svg(data: dict[str, Any], theme: str = "html", ident: str = "") -> str:
    """The SVG of one benchmark chart (:func:`.chart.chart_input`'s data)."""
    return to_svg(chart_drawing(data, theme, ident))


def schedule_sentence(fig: dict[str, Any], covers: list[str]) -> str:
    """The figure in one sentence, for builders that show no pictures."""
    if fig.get("kind") == "warp_specialized":
        return warp_chips.sentence(fig, covers)
    return lanes.sentence(fig, covers)
