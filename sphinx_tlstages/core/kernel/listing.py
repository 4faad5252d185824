"""The part of a kernel the page lists: lines cut from it, numbered as the kernel numbers
them, and the characters pdflatex cannot print.

The cutting itself (``:pyobject:``, ``:lines:``...) is Sphinx's ``literalinclude`` logic
and lives in :mod:`sphinx_tlstages.ext.listing`; this is what it produces, which the
renderers and the line links read. The kernel is lowered whole whatever is listed.

``DirectiveSpec.listing`` is None when no listing option is given, so books without them
render as before. Every kernel line number stays the kernel's own: the HTML listing is
highlighted with ``linenostart`` at its first line, so Pygments' line spans keep the
numbers :func:`..results.line_links.source_html` maps back; a CUDA line whose kernel line
is not listed gets the class ``tl-unshown`` and the tooltip "line N of FILE, not shown",
and the schedule table adds "(not shown)". On paper, a captioned listing becomes Sphinx's
``captioned_literal_block`` (``ext/builders/latex.py``: Sphinx's own post-transform runs
before the directive is rendered); under pdflatex the characters it cannot print become
``?``, with one ``tlstages.latex`` warning per directive naming the kernel lines.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Listing:
    """The kernel listing a directive shows.

    ``start`` is the kernel line (1-based) of the first line of ``text``, so a listed line
    keeps the number the whole kernel gives it (as ``literalinclude``'s
    ``:lineno-match:``); ``emphasize`` counts from the listing's first line (1-based), as
    ``:emphasize-lines:`` does in ``literalinclude``.
    """

    text: str
    start: int = 1
    emphasize: tuple[int, ...] = ()
    caption: str | None = None
    cut: bool = False  # False: the whole kernel (with a caption or emphasis only)

    @property
    def end(self) -> int:
        """The kernel line of the last listed line."""
        return self.start + len(self.text.splitlines()) - 1

    def shows(self, line: int) -> bool:
        """Whether kernel line ``line`` is in the listing."""
        return not self.cut or self.start <= line <= self.end


# Characters pdflatex prints with Sphinx's default setup (utf8 inputenc, T1 and TS1
# fonts) or through sphinxtlstages.sty's declarations; anything else (CJK, Greek,
# Cyrillic, emoji...) stops pdflatex with "Unicode character ... not set up".
_PUNCTUATION = frozenset("–—‘’‚“”„†‡•…‰‹›€−≤≥≠≈→←↔×✓ᵀ∑√∈≪≫⌈⌉⌊⌋")


def pdflatex_can_print(char: str) -> bool:
    """Whether pdflatex typesets ``char`` in a Sphinx document (Latin-1 and Latin
    Extended-A, the usual punctuation, what sphinxtlstages.sty declares)."""
    return ord(char) <= 0x17F or char in _PUNCTUATION


def for_pdflatex(text: str) -> tuple[str, list[tuple[int, str]]]:
    """``text`` with each character pdflatex cannot print replaced by ``?``, and (line
    of ``text``, 1-based, those characters) for each line that had some."""
    lines = text.split("\n")
    found: list[tuple[int, str]] = []
    for number, line in enumerate(lines, start=1):
        bad = "".join(dict.fromkeys(c for c in line if not pdflatex_can_print(c)))
        if bad:
            found.append((number, bad))
            lines[number - 1] = "".join(c if pdflatex_can_print(c) else "?" for c in line)
    return "\n".join(lines), found
