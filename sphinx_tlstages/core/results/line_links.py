"""Linking kernel source lines to the CUDA lines they produced (HTML only).

The mapping is the compiler's own ``#line`` directives (see :func:`.cuda.source_map`).
Tile operations expand from TileLang's templates, whose directives name TileLang's
files instead of the kernel; such a block is given to the kernel statement that called
that operation only when exactly one statement in the enclosing region does (the
``T.gemm`` of a pipelined loop), and the page marks those lines as inferred.

Without JavaScript each CUDA line still shows, in a gutter, the document line it came
from; with it, hovering or selecting a kernel line highlights its CUDA in every variant.
"""

from __future__ import annotations

import ast
import functools
import html
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from .cuda import Mapped

# Which template files expand which tile operation (TileLang's CUDA and ROCm emitters:
# mma, wgmma, tcgen05 and mfma macro generators; Metal's gemm and its macro generator).
_TEMPLATES = {"gemm": ("gemm", "mma", "tcgen05", "mfma", "metal_macro"), "copy": ("copy", "tma"),
              "reduce_max": ("reduce",), "reduce_sum": ("reduce",), "reduce": ("reduce",),
              "fill": ("fill",),
              "clear": ("fill", "clear"), "atomic_add": ("atomic",)}


@dataclass(frozen=True)
class Link:
    """Where one CUDA line came from: a kernel line (relative), and whether inferred."""

    line: int | None
    inferred: bool = False
    template: str | None = None


@functools.lru_cache(maxsize=64)  # one kernel, many listings
def _calls(source: str) -> dict[int, str]:
    """Kernel line -> the tile operation (``gemm``) a ``T.op(...)`` call there makes."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return {}
    calls: dict[int, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "T":
            calls.setdefault(node.lineno, node.func.attr)
    return calls


def line_spans(lines: Iterable[int]) -> list[tuple[int, int]]:
    """Line numbers as sorted runs of consecutive lines (``40, 41, 42, 45``: ``(40, 42),
    (45, 45)``)."""
    spans: list[list[int]] = []
    for line in sorted(set(lines)):
        if spans and line == spans[-1][1] + 1:
            spans[-1][1] = line
        else:
            spans.append([line, line])
    return [(a, b) for a, b in spans]


def statement_lines(lines: Sequence[str], start: int) -> range:
    """The kernel lines (1-based) of the statement at ``start`` and its body."""
    return _region(lines, start)


def _region(lines: Sequence[str], start: int | None) -> range:
    """The kernel lines of the statement at ``start`` (1-based) and its body."""
    if start is None or not 0 < start <= len(lines):
        return range(1, len(lines) + 1)
    indent = len(lines[start - 1]) - len(lines[start - 1].lstrip())
    end = start
    for number in range(start + 1, len(lines) + 1):
        text = lines[number - 1]
        if text.strip() and len(text) - len(text.lstrip()) <= indent:
            break
        end = number
    return range(start, end + 1)


def attribute(mapped: Sequence[Mapped], source: str) -> list[Link]:
    """A :class:`Link` per CUDA line."""
    calls = _calls(source)
    lines = source.splitlines()
    links: list[Link] = []
    for item in mapped:
        if item.line is not None or item.template is None:
            links.append(Link(item.line))
            continue
        path = item.template.lower()
        region = _region(lines, item.within)
        callers = [n for n in region if n in calls and any(
            word in path for word in _TEMPLATES.get(calls[n], ()))]
        links.append(Link(callers[0], True, item.template) if len(set(callers)) == 1
                      else Link(None, False, item.template))
    return links


def counts(links: Sequence[Link]) -> dict[int, int]:
    found: dict[int, int] = {}
    for link in links:
        if link.line is not None:
            found[link.line] = found.get(link.line, 0) + 1
    return found


def cuda_html(mapped: Sequence[Mapped], links: Sequence[Link] | None, first_line: int,
              heading: str,
              unshown: tuple[str, Callable[[int], bool]] | None = None,
              anchors: Mapping[int, str] | None = None) -> str:
    """A CUDA listing, one span per line (the stylesheet numbers them, from 1, as the
    hazard check's sentences and the downloadable file do) with its kernel line as data
    and in a gutter (document numbering: ``first_line`` is the number of the kernel's
    first line); ``links`` None: no kernel gutter (the page lists no kernel to link to).

    ``unshown``: (the kernel file's name, whether a kernel line is listed) when the page
    lists part of the kernel; a line from outside that part keeps its true number and
    says it is not shown. ``anchors``: listing line -> the id a sentence of the page
    links to (only those: thousands of lines per page).
    """
    named = anchors or {}
    linked = " tl-linked" if links is not None else ""
    out = [f'<div class="highlight-text notranslate tl-cuda-listing{linked}" '
           f'data-tl-variant="{html.escape(heading)}"><div class="highlight"><pre>']
    for number, item in enumerate(mapped, 1):
        text = html.escape(item.text)
        ident = f' id="{html.escape(named[number])}"' if number in named else ""
        link = links[number - 1] if links is not None else None
        if link is None or link.line is None:
            title = f' title="from TileLang\'s {html.escape(link.template)}"' \
                if link is not None and link.template else ""
            gutter = "TL" if link is not None and link.template else ""
            inner = f'<span class="tl-gutter"{title}>{gutter}</span>' if links is not None \
                else ""
            out.append(f'<span class="tl-cu"{ident}>{inner}{text}\n</span>')
            continue
        shown = link.line + first_line - 1
        kind = " tl-inferred" if link.inferred else ""
        # Only inferred lines say more than their number (thousands of lines per page).
        title = f' title="through TileLang\'s {html.escape(link.template or "")}"' \
            if link.inferred else ""
        if unshown is not None and not unshown[1](link.line):
            kind += " tl-unshown"
            how = f"through TileLang's {link.template}, " if link.inferred else ""
            title = f' title="{html.escape(how)}line {shown} of ' \
                    f'{html.escape(unshown[0])}, not shown"'
        out.append(f'<span class="tl-cu{kind}"{ident} data-tl-line="{link.line}">'
                   f'<span class="tl-gutter"{title}>{shown}</span>{text}\n</span>')
    out.append("</pre></div></div>\n")
    return "".join(out)


_SPAN = re.compile(r'<span id="(?P<prefix>[^"]+)-(?P<number>\d+)">')


def source_html(highlighted: str, prefix: str, first_line: int,
                per_variant: Sequence[tuple[str, dict[int, int], str]],
                sass: Sequence[dict[int, str]] | None = None) -> str:
    """Pygments output with ``linespans`` made into linkable lines: each line that
    produced code is focusable and carries, as a tooltip, its line counts per variant
    (``per_variant``: heading, counts by kernel line, ``CUDA`` or ``HIP``) and, where
    ``sass`` has them (one per variant), its SASS counts in words."""

    def replace(match: re.Match[str]) -> str:
        if match.group("prefix") != prefix:
            return match.group(0)
        shown = int(match.group("number"))
        line = shown - first_line + 1
        words = sass or [{} for _ in per_variant]
        made = [(heading, found[line], language, said.get(line))
                for (heading, found, language), said in zip(per_variant, words, strict=True)
                if line in found]
        if not made:
            return f'<span class="tl-src-line" data-tl-line="{line}">'
        tip = "; ".join(f"{heading}: {n} {language} line{'' if n == 1 else 's'}"
                        + (f", {said}" if said else "")
                        for heading, n, language, said in made)
        return (f'<span class="tl-src-line tl-has-cuda" data-tl-line="{line}" tabindex="0" '
                f'role="button" aria-pressed="false" title="line {shown}: {html.escape(tip)}">')

    return _SPAN.sub(replace, highlighted)
