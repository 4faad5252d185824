"""A figure as data: typed shapes on a pixel grid, and the layout helpers the figures share.

Every figure is drawn once into a :class:`Drawing` (rectangles, text, lines and paths, with
class names for their colours) and written by as many writers as there are outputs:
:mod:`.svg` for HTML (inline SVG, colours from the page's theme) and :mod:`.tikz` for
LaTeX (PGF/TikZ picture code in the document's own fonts). Coordinates are CSS pixels,
y pointing down, as in SVG. Standard library only.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

MONO_EM = 0.62  # advance of one monospace character, in em (a little generous)
SANS_EM = 0.6   # average advance of a sans-serif character, in em (generous)
FONT_SIZE = 11.0  # the figures' text size when a text names none
HATCH_CLASSES = {"stale", "grid"}  # a hatched box: stale-grey fill, grid-coloured lines

Point = tuple[float, float]


@dataclass(frozen=True)
class Rect:
    """A box filled with the colour of ``cls``; ``hatch``: grey hatching instead (stale
    numbers); ``outline``: no fill, a stroke of this width in the colour of ``cls``."""

    x: float
    y: float
    w: float
    h: float
    cls: str
    rx: float = 0.0
    title: str | None = None
    hatch: bool = False
    outline: float = 0.0


@dataclass(frozen=True)
class Text:
    """One line of text whose baseline starts (``anchor`` start), is centred (middle) or
    ends (end) at ``x, y``; ``cls`` may hold ``m`` for monospace besides its colour;
    ``rotate``: degrees clockwise about ``x, y``."""

    x: float
    y: float
    text: str
    cls: str = "fg"
    anchor: str = "start"
    size: float | None = None
    weight: str | None = None
    title: str | None = None
    rotate: float = 0.0


@dataclass(frozen=True)
class Line:
    x1: float
    y1: float
    x2: float
    y2: float
    cls: str = "stroke"
    width: float = 1.0
    dash: tuple[float, ...] = ()


@dataclass(frozen=True)
class Path:
    """An open stroke from ``start`` through ``to``: each entry a point (a straight
    segment) or six numbers (a cubic curve: two control points, then the end point);
    ``arrow``: an arrowhead at the end, in the accent colour."""

    start: Point
    to: tuple[tuple[float, ...], ...]
    cls: str
    width: float = 1.0
    dash: tuple[float, ...] = ()
    arrow: bool = False


Shape = Rect | Text | Line | Path


@dataclass
class Drawing:
    """Collects a figure's shapes; :meth:`finish` gives it its size and its words (a
    title, and a description of everything it shows, for screen readers and alt text).

    ``prefix`` names the figure (its CSS class and the prefix of its ids in SVG): a
    digest of what it draws, so it is the same on every machine. ``theme``: ``html`` or
    ``print`` (:data:`.svg.THEMES`); ``colours``: how many data colours it uses."""

    prefix: str
    theme: str = "html"
    shapes: list[Shape] = field(default_factory=list)
    width: float = 0.0
    height: float = 0.0
    title: str = ""
    desc: str = ""
    colours: int = 1

    def rect(self, x: float, y: float, w: float, h: float, cls: str, rx: float = 0,
             title: str | None = None, *, hatch: bool = False, outline: float = 0) -> None:
        self.shapes.append(Rect(x, y, w, h, cls, rx, title, hatch, outline))

    def text(self, x: float, y: float, text: str, cls: str = "fg", anchor: str = "start",
             size: float | None = None, weight: str | None = None,
             title: str | None = None, *, rotate: float = 0) -> None:
        self.shapes.append(Text(x, y, text, cls, anchor, size, weight, title, rotate))

    def line(self, x1: float, y1: float, x2: float, y2: float, cls: str = "stroke",
             width: float = 1, dash: tuple[float, ...] = ()) -> None:
        self.shapes.append(Line(x1, y1, x2, y2, cls, width, dash))

    def path(self, start: Point, to: list[tuple[float, ...]], cls: str, width: float = 1,
             dash: tuple[float, ...] = (), arrow: bool = False) -> None:
        self.shapes.append(Path(start, tuple(to), cls, width, dash, arrow))

    def finish(self, width: float, height: float, title: str, desc: str,
               colours: int) -> Drawing:
        self.width, self.height, self.title, self.desc = width, height, title, desc
        self.colours = max(colours, 1)
        return self

    def classes(self) -> set[str]:
        """Every class word the shapes use, the hatching's colours included (the writers
        define only those colours)."""
        used = {word for shape in self.shapes for word in shape.cls.split()}
        if any(isinstance(shape, Rect) and shape.hatch for shape in self.shapes):
            used |= HATCH_CLASSES
        return used


def num(value: float) -> str:
    """A coordinate, deterministic and short: at most one decimal."""
    text = f"{value:.1f}"
    if text == "-0.0":
        return "0"
    return text[:-2] if text.endswith(".0") else text


def mono_width(text: str, size: float) -> float:
    return len(text) * size * MONO_EM


def sans_width(text: str, size: float) -> float:
    return len(text) * size * SANS_EM


def clip(text: str, chars: int) -> str:
    return text if len(text) <= chars else text[:max(chars - 1, 1)] + "…"


def wrap(text: str, width: float, size: float) -> list[str]:
    """``text`` broken at spaces into lines of at most ``width`` pixels (estimated)."""
    chars = max(int(width / (size * SANS_EM)), 8)
    lines: list[str] = []
    line = ""
    for word in text.split(" "):
        if line and len(line) + 1 + len(word) > chars:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    if line:
        lines.append(line)
    return lines


def join_names(names: list[str]) -> str:
    """``["A_shared", "B_shared"]`` -> ``"A/B_shared"`` (a common suffix said once)."""
    if len(names) < 2:
        return "".join(names)
    suffix = names[0]
    for name in names[1:]:
        while suffix and not name.endswith(suffix):
            suffix = suffix[1:]
    cut = suffix.find("_")
    suffix = suffix[cut:] if cut >= 0 else ""
    if not suffix or any(len(n) <= len(suffix) for n in names):
        return "/".join(names)
    return "/".join(n[:-len(suffix)] for n in names) + suffix


def digest(data: Any) -> str:
    blob = json.dumps(data, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:10]


def caption(pic: Drawing, num_stages: object, covers: list[str], width: float,
            margin: float) -> float:
    """A schedule figure's first line: ``num_stages = N`` in bold, then the variants it
    covers, wrapped (at most four lines; the description has them all). Returns how much
    lower than one line the drawing below must start."""
    pic.text(margin, 16, f"num_stages = {num_stages}", "fg", weight="bold")
    lines = wrap("covers " + "; ".join(covers), width - 2 * margin - 104, 11)
    if len(lines) > 4:
        lines = [*lines[:3], clip(lines[3], len(lines[3]) - 1) + " …"]
    for n, line in enumerate(lines):
        pic.text(margin + 104, 16 + 14 * n, line, "muted",
                 title="; ".join(covers) if n == 0 else None)
    return 14.0 * (len(lines) - 1)
