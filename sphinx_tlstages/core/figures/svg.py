"""A :class:`~.drawing.Drawing` written as SVG, and the colours of both themes.

Standard library only. Two themes draw the same picture:

- ``html``: colours are CSS custom properties with fallbacks (``var(--tl-fig-fg,
  currentColor)``), so an inline figure follows the page's colours, dark mode included,
  and a theme may restyle it by setting ``--tl-fig-*`` (the extension's stylesheet maps
  them to furo's own variables);
- ``print``: fixed colours on a white background, no ``var()`` and no ``currentColor``
  (paper has no page to inherit from; :mod:`.tikz` uses them too).

Every selector of a figure's ``<style>`` is under the figure's own class, which is also
the prefix of its ids: several figures inlined in one page neither restyle one another
nor collide. The class comes from a digest of what the figure draws, so it is the same
on every machine.
"""

from __future__ import annotations

from .drawing import Drawing, Line, Path, Rect, Shape, Text, num

THEMES = ("html", "print")
# Okabe & Ito's colour-blind-safe palette, in the order versions and series use it
# (lighter first: dark text reads on all but the blue, which gets white text).
OKABE_ITO = ("#E69F00", "#56B4E9", "#009E73", "#F0E442",
             "#CC79A7", "#D55E00", "#0072B2", "#999999")
_ON = ("#000", "#000", "#000", "#000", "#000", "#000", "#fff", "#000")

FONT_SANS = "system-ui, -apple-system, 'Segoe UI', 'DejaVu Sans', Arial, sans-serif"
FONT_MONO = "ui-monospace, 'SFMono-Regular', Menlo, Consolas, 'DejaVu Sans Mono', monospace"

# (class, property, custom property, HTML fallback, print colour)
_THEME: tuple[tuple[str, str, str, str, str], ...] = (
    ("fg", "fill", "--tl-fig-fg", "currentColor", "#1a1a1a"),
    ("muted", "fill", "--tl-fig-muted", "#767676", "#555555"),
    ("stroke", "stroke", "--tl-fig-fg", "currentColor", "#1a1a1a"),
    ("grid", "stroke", "--tl-fig-grid", "rgba(127,127,127,0.35)", "#c8c8c8"),
    ("band", "fill", "--tl-fig-band", "rgba(127,127,127,0.12)", "#eeeeee"),
    ("neutral", "fill", "--tl-fig-neutral", "#bdbdbd", "#c4c4c4"),
    ("paper", "fill", "--tl-fig-bg", "transparent", "#ffffff"),
    ("accent", "stroke", "--tl-fig-accent", "#D55E00", "#D55E00"),
    ("accentfill", "fill", "--tl-fig-accent", "#D55E00", "#D55E00"),
    ("stale", "fill", "--tl-fig-stale", "#9e9e9e", "#9e9e9e"),
    # A hazard finding: a magenta red no data colour uses, readable on light and dark.
    ("hazard", "stroke", "--tl-fig-hazard", "#E0115F", "#C2185B"),
    ("hazardfill", "fill", "--tl-fig-hazard", "#E0115F", "#C2185B"),
)


def print_colours(colours: int) -> dict[str, str]:
    """The print theme's colour of each class (``#rrggbb``), data colours included."""
    found = {cls: printed for cls, _, _, _, printed in _THEME}
    for v in range(max(colours, 1)):
        found[f"v{v}"] = OKABE_ITO[v % len(OKABE_ITO)]
        found[f"t{v}"] = _ON[v % len(_ON)]
    found["on-neutral"] = "#000"
    return {cls: _long(colour) for cls, colour in found.items()}


def _long(colour: str) -> str:
    """``#abc`` -> ``#aabbcc``."""
    return "#" + "".join(c * 2 for c in colour[1:]) if len(colour) == 4 else colour


def esc(text: str) -> str:
    return (text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;"))


def style(prefix: str, theme: str, colours: int, used: set[str] | None = None) -> str:
    """The ``<style>`` rules of one figure, every selector under its class ``prefix``;
    ``used``: the classes its elements use (the others' rules are left out)."""
    if theme not in THEMES:
        raise ValueError(f"theme must be one of {THEMES}, not {theme!r}")
    # On the root, inherited: a text's own font-size attribute must win (a rule on
    # ``text`` would beat it, since CSS outranks presentation attributes).
    rules = [f".{prefix}{{font-family:{FONT_SANS};font-size:11px}}",
             f".{prefix} .m{{font-family:{FONT_MONO}}}"]
    for cls, prop, var, html, printed in _THEME:
        if used is not None and cls not in used:
            continue
        value = f"var({var}, {html})" if theme == "html" else printed
        rules.append(f".{prefix} .{cls}{{{prop}:{value}}}")
    for v in range(max(colours, 1)):
        colour, on = OKABE_ITO[v % len(OKABE_ITO)], _ON[v % len(_ON)]
        if theme == "html":
            rules.append(f".{prefix} .v{v}{{fill:var(--tl-fig-v{v}, {colour})}}")
            rules.append(f".{prefix} .t{v}{{fill:var(--tl-fig-on-v{v}, {on})}}")
        else:
            rules.append(f".{prefix} .v{v}{{fill:{colour}}}")
            rules.append(f".{prefix} .t{v}{{fill:{on}}}")
    rules.append(f".{prefix} .on-neutral{{fill:#000}}")
    return "".join(rules)


def _dash(dash: tuple[float, ...]) -> str:
    return f' stroke-dasharray="{" ".join(num(d) for d in dash)}"' if dash else ""


def _tip(title: str | None) -> str:
    return f"<title>{esc(title)}</title>" if title else ""


def _rect(r: Rect, prefix: str) -> str:
    rx = f' rx="{num(r.rx)}"' if r.rx else ""
    box = f'<rect x="{num(r.x)}" y="{num(r.y)}" width="{num(r.w)}" height="{num(r.h)}"{rx}'
    if r.hatch:  # no class: a class's CSS fill would win over the pattern
        box += f' fill="url(#{prefix}-h)"'
    elif r.outline:
        box += f' class="{r.cls}" fill="none" stroke-width="{num(r.outline)}"'
    else:
        box += f' class="{r.cls}"'
    return f"{box}>{_tip(r.title)}</rect>" if r.title else f"{box}/>"


def _text(t: Text) -> str:
    a = "" if t.anchor == "start" else f' text-anchor="{t.anchor}"'
    s = f' font-size="{num(t.size)}"' if t.size else ""
    w = f' font-weight="{t.weight}"' if t.weight else ""
    turn = (f' transform="rotate({num(t.rotate)} {num(t.x)} {num(t.y)})"'
            if t.rotate else "")
    return (f'<text x="{num(t.x)}" y="{num(t.y)}" class="{t.cls}"{a}{s}{w}{turn}>'
            f"{esc(t.text)}{_tip(t.title)}</text>")


def _path(p: Path, prefix: str) -> str:
    d = f"M{num(p.start[0])} {num(p.start[1])}"
    for seg in p.to:
        d += ("L" if len(seg) == 2 else "C") + " ".join(num(v) for v in seg)
    marker = f' marker-end="url(#{prefix}-a)"' if p.arrow else ""
    return (f'<path d="{d}" class="{p.cls}" stroke-width="{num(p.width)}" fill="none"'
            f"{marker}{_dash(p.dash)}/>")


def _shape(shape: Shape, prefix: str) -> str:
    if isinstance(shape, Rect):
        return _rect(shape, prefix)
    if isinstance(shape, Text):
        return _text(shape)
    if isinstance(shape, Line):
        return (f'<line x1="{num(shape.x1)}" y1="{num(shape.y1)}" x2="{num(shape.x2)}"'
                f' y2="{num(shape.y2)}" class="{shape.cls}"'
                f' stroke-width="{num(shape.width)}"{_dash(shape.dash)}/>')
    return _path(shape, prefix)


def to_svg(pic: Drawing) -> str:
    """The drawing as one self-contained ``<svg>`` element, with its accessible header."""
    p = pic.prefix
    used = pic.classes() | {"paper"}
    defs = []
    if any(isinstance(s, Rect) and s.hatch for s in pic.shapes):
        defs.append(f'<pattern id="{p}-h" patternUnits="userSpaceOnUse" width="6" '
                    'height="6" patternTransform="rotate(45)"><rect width="6" '
                    'height="6" class="stale" fill-opacity="0.35"/><line x1="1" y1="0" '
                    'x2="1" y2="6" class="grid" stroke-width="2.2"/></pattern>')
    if any(isinstance(s, Path) and s.arrow for s in pic.shapes):
        used.add("accentfill")
        defs.append(f'<marker id="{p}-a" viewBox="0 0 8 8" refX="7" refY="4" '
                    'markerWidth="7" markerHeight="7" orient="auto-start-reverse">'
                    '<path d="M0 0L8 4L0 8z" class="accentfill"/></marker>')
    width, height = num(pic.width), num(pic.height)
    head = (f'<svg xmlns="http://www.w3.org/2000/svg" class="{p}" role="img"'
            f' aria-labelledby="{p}-t {p}-d" width="{width}" height="{height}"'
            f' viewBox="0 0 {width} {height}">'
            f'<title id="{p}-t">{esc(pic.title)}</title><desc id="{p}-d">{esc(pic.desc)}</desc>'
            f"<style>{style(p, pic.theme, pic.colours, used)}</style>")
    background = (f'<rect width="{width}" height="{height}" class="paper"/>'
                  if pic.theme == "print" else "")
    return (head + (f"<defs>{''.join(defs)}</defs>" if defs else "") + background
            + "".join(_shape(s, p) for s in pic.shapes) + "</svg>\n")
