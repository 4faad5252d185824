"""The SVG writing the figures share: escaping, numbers, text widths, themes, a builder.

Standard library only. Two themes draw the same picture:

- ``html``: colours are CSS custom properties with fallbacks (``var(--tl-fig-fg,
  currentColor)``), so an inline figure follows the page's colours, dark mode included,
  and a theme may restyle it by setting ``--tl-fig-*`` (the extension's stylesheet maps
  them to furo's own variables);
- ``print``: fixed colours on a white background, no ``var()`` and no ``currentColor``
  (PDF converters and paper have no page to inherit from).

Every selector of a figure's ``<style>`` is under the figure's own class, which is also
the prefix of its ids: several figures inlined in one page neither restyle one another
nor collide. The class comes from a digest of what the figure draws, so it is the same
on every machine.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

THEMES = ("html", "print")
# Okabe & Ito's colour-blind-safe palette, in the order versions and series use it
# (lighter first: dark text reads on all but the blue, which gets white text).
OKABE_ITO = ("#E69F00", "#56B4E9", "#009E73", "#F0E442",
             "#CC79A7", "#D55E00", "#0072B2", "#999999")
_ON = ("#000", "#000", "#000", "#000", "#000", "#000", "#fff", "#000")

FONT_SANS = "system-ui, -apple-system, 'Segoe UI', 'DejaVu Sans', Arial, sans-serif"
FONT_MONO = "ui-monospace, 'SFMono-Regular', Menlo, Consolas, 'DejaVu Sans Mono', monospace"
MONO_EM = 0.62  # advance of one monospace character, in em (a little generous)
SANS_EM = 0.6   # average advance of a sans-serif character, in em (generous)

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
)


def esc(text: str) -> str:
    return (text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;"))


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


class Svg:
    """Collects elements; :meth:`render` wraps them with the accessible header."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.parts: list[str] = []
        self.defs: list[str] = []

    def add(self, markup: str) -> None:
        self.parts.append(markup)

    def rect(self, x: float, y: float, w: float, h: float, cls: str, rx: float = 0,
             title: str | None = None, extra: str = "") -> None:
        r = f' rx="{num(rx)}"' if rx else ""
        body = (f'<rect x="{num(x)}" y="{num(y)}" width="{num(w)}" height="{num(h)}"'
                f' class="{cls}"{r}{extra}')
        self.add(f"{body}><title>{esc(title)}</title></rect>" if title else f"{body}/>")

    def text(self, x: float, y: float, text: str, cls: str = "fg", anchor: str = "start",
             size: float | None = None, weight: str | None = None,
             title: str | None = None) -> None:
        a = "" if anchor == "start" else f' text-anchor="{anchor}"'
        s = f' font-size="{num(size)}"' if size else ""
        w = f' font-weight="{weight}"' if weight else ""
        tip = f"<title>{esc(title)}</title>" if title else ""
        self.add(f'<text x="{num(x)}" y="{num(y)}" class="{cls}"{a}{s}{w}>'
                 f"{esc(text)}{tip}</text>")

    def line(self, x1: float, y1: float, x2: float, y2: float, cls: str = "stroke",
             width: float = 1, dash: str | None = None) -> None:
        d = f' stroke-dasharray="{dash}"' if dash else ""
        self.add(f'<line x1="{num(x1)}" y1="{num(y1)}" x2="{num(x2)}" y2="{num(y2)}"'
                 f' class="{cls}" stroke-width="{num(width)}"{d}/>')

    def path(self, d: str, cls: str, width: float = 1, extra: str = "") -> None:
        self.add(f'<path d="{d}" class="{cls}" stroke-width="{num(width)}" fill="none"'
                 f"{extra}/>")

    def render(self, width: float, height: float, title: str, desc: str, theme: str,
               colours: int) -> str:
        p = self.prefix
        body = "".join(self.defs) + "".join(self.parts)
        used = {word for found in re.findall(r'class="([^"]+)"', body) for word in found.split()}
        used.add("paper")
        head = (f'<svg xmlns="http://www.w3.org/2000/svg" class="{p}" role="img"'
                f' aria-labelledby="{p}-t {p}-d" width="{num(width)}" height="{num(height)}"'
                f' viewBox="0 0 {num(width)} {num(height)}">'
                f'<title id="{p}-t">{esc(title)}</title><desc id="{p}-d">{esc(desc)}</desc>'
                f"<style>{style(p, theme, colours, used)}</style>")
        defs = f"<defs>{''.join(self.defs)}</defs>" if self.defs else ""
        background = (f'<rect width="{num(width)}" height="{num(height)}" class="paper"/>'
                      if theme == "print" else "")
        return head + defs + background + "".join(self.parts) + "</svg>\n"


def caption(svg: Svg, num_stages: object, covers: list[str], width: float,
            margin: float) -> float:
    """A schedule figure's first line: ``num_stages = N`` in bold, then the variants it
    covers, wrapped (at most four lines; the ``<desc>`` has them all). Returns how much
    lower than one line the drawing below must start."""
    svg.text(margin, 16, f"num_stages = {num_stages}", "fg", weight="bold")
    lines = wrap("covers " + "; ".join(covers), width - 2 * margin - 104, 11)
    if len(lines) > 4:
        lines = [*lines[:3], clip(lines[3], len(lines[3]) - 1) + " …"]
    for n, line in enumerate(lines):
        svg.text(margin + 104, 16 + 14 * n, line, "muted",
                 title="; ".join(covers) if n == 0 else None)
    return 14.0 * (len(lines) - 1)
