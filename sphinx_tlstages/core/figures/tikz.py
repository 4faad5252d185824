"""A :class:`~.drawing.Drawing` written as a PGF/TikZ picture, for LaTeX output.

Why TikZ rather than a PDF converted from the SVG: the figures are boxes, lines and text
on a grid this package computes, so LaTeX can draw them itself. The PDF then needs no
converter and no system library (PGF comes with the TeX Live that Sphinx's LaTeX output
needs anyway), its text is set in the document's own fonts and can be searched and
copied, and the picture code is the same bytes on every machine.

One CSS pixel is 0.75 pt, as in a browser's print and in PDF converters; y points down
(``y=-0.75pt``), so the drawing's coordinates are written as they are. Colours are the
print theme's (:func:`.svg.print_colours`), defined inside the picture so that it needs
nothing from the preamble but ``tikz`` and the ``patterns`` and ``arrows.meta`` libraries
(``sphinxtlstages.sty`` loads them, and the ``tlstagesfigure`` environment that scales a
picture down to the line width when it is wider). Text goes through ``encode``, the LaTeX
writer's own escaping, so a statement's text is escaped as the rest of the document is.
Hover titles have no place on paper; the description is in a comment above the picture.
"""

from __future__ import annotations

from collections.abc import Callable

from .drawing import FONT_SIZE, Drawing, Line, Path, Rect, Shape, Text, num
from .svg import print_colours

PT = 0.75  # points per CSS pixel
_ANCHOR = {"start": "base west", "middle": "base", "end": "base east"}


def _pt(px: float) -> str:
    return f"{_short(px * PT)}pt"


def _short(value: float) -> str:
    """Two decimals at most: 0.75 pt steps of a one-decimal pixel need them."""
    text = f"{value:.2f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def _colour_name(cls: str) -> str:
    return "tl" + cls.replace("-", "")


def _colour(cls: str) -> str:
    """The colour word of a class list (``"fg m"`` -> ``tlfg``)."""
    return _colour_name(next(w for w in cls.split() if w != "m"))


def _dash(dash: tuple[float, ...]) -> str:
    if not dash:
        return ""
    marks = " ".join(f"{'on' if n % 2 == 0 else 'off'} {_pt(d)}" for n, d in enumerate(dash))
    return f", dash pattern={marks}"


def _at(x: float, y: float) -> str:
    return f"({num(x)},{num(y)})"


def _rect(r: Rect) -> str:
    corners = f", rounded corners={_pt(r.rx)}" if r.rx else ""
    box = f"{_at(r.x, r.y)} rectangle {_at(r.x + r.w, r.y + r.h)}"
    if r.hatch:
        return (f"\\fill[tlstale, fill opacity=0.35{corners}] {box};\n"
                f"\\fill[pattern=north east lines, pattern color=tlgrid{corners}] {box};")
    if r.outline:
        return f"\\draw[{_colour(r.cls)}, line width={_pt(r.outline)}{corners}] {box};"
    return f"\\fill[{_colour(r.cls)}{corners}] {box};"


def _text(t: Text, encode: Callable[[str], str]) -> str:
    size = (t.size or FONT_SIZE) * PT
    family = "\\ttfamily" if "m" in t.cls.split() else "\\sffamily"
    bold = "\\bfseries" if t.weight == "bold" else ""
    turn = f", rotate={num(-t.rotate)}" if t.rotate else ""
    return (f"\\node[anchor={_ANCHOR[t.anchor]}, inner sep=0pt, text={_colour(t.cls)}{turn},"
            f" font=\\fontsize{{{_short(size)}}}{{{_short(size * 1.2)}}}\\selectfont"
            f"{family}{bold}] at {_at(t.x, t.y)} {{{encode(t.text)}}};")


def _path(p: Path) -> str:
    head = ", -{Stealth[length=4.5pt, width=4pt]}" if p.arrow else ""
    steps = [_at(*p.start)]
    for seg in p.to:
        if len(seg) == 2:
            steps.append(f"-- {_at(seg[0], seg[1])}")
        else:
            steps.append(f".. controls {_at(seg[0], seg[1])} and {_at(seg[2], seg[3])} "
                         f".. {_at(seg[4], seg[5])}")
    return (f"\\draw[{_colour(p.cls)}, line width={_pt(p.width)}{_dash(p.dash)}{head}] "
            + " ".join(steps) + ";")


def _shape(shape: Shape, encode: Callable[[str], str]) -> str:
    if isinstance(shape, Rect):
        return _rect(shape)
    if isinstance(shape, Text):
        return _text(shape, encode)
    if isinstance(shape, Line):
        return (f"\\draw[{_colour(shape.cls)}, line width={_pt(shape.width)}"
                f"{_dash(shape.dash)}] {_at(shape.x1, shape.y1)} -- "
                f"{_at(shape.x2, shape.y2)};")
    return _path(shape)


def to_tikz(pic: Drawing, encode: Callable[[str], str]) -> str:
    """The drawing as a ``tlstagesfigure`` environment holding a ``tikzpicture``."""
    words = pic.classes() - {"m"}
    colours = print_colours(pic.colours)
    defined = [f"\\definecolor{{{_colour_name(w)}}}{{HTML}}{{{colours[w][1:].upper()}}}"
               for w in sorted(words) if w in colours]
    comment = " ".join(f"{pic.title}. {pic.desc}".split())
    return "\n".join([
        f"% {comment}",
        "\\begin{tlstagesfigure}",
        "\\begin{tikzpicture}[x=0.75pt, y=-0.75pt, line cap=butt, line join=miter]",
        *defined,
        # The picture's extent, so that its bounding box is the figure's size.
        f"\\useasboundingbox (0,0) rectangle {_at(pic.width, pic.height)};",
        *(_shape(s, encode) for s in pic.shapes),
        "\\end{tikzpicture}",
        "\\end{tlstagesfigure}",
    ]) + "\n"
