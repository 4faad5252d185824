"""The page's error boxes, copyable in every builder.

A message's first line is its sentence; every line after it is code to write (a YAML
block, an option's lines) and is shown as a literal block, its lines and characters kept.
In the sentence, a quoted name or value (``'abc'``, ``"float16"``) and an option
(``:num-stages:``) are literal text: no builder curls their quotes, turns ``---`` into a
dash or ``--`` into an en dash, and the rest of the sentence is kept from the smart
quotes transform too, so that what a reader copies is what the log says.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from docutils import nodes

# Quoted names and values, and options, in a sentence: shown as literal text.
# A quote opens where no letter stands before it (not the one in "option's").
_LITERAL = re.compile(r"""(?<!\w)'[^'\n]*'(?!\w)|(?<!\w)"[^"\n]*"(?!\w)|`[^`\n]*`"""
                      r"""|:[a-z][a-z-]*:(?=[\s,;?.)]|$)""")


def sentence(text: str) -> nodes.paragraph:
    """``text`` as a paragraph whose quoted parts are literal text, kept from smart
    quotes."""
    paragraph = nodes.paragraph(support_smartquotes=False)
    at = 0
    for match in _LITERAL.finditer(text):
        if match.start() > at:
            paragraph += nodes.Text(text[at:match.start()])
        paragraph += nodes.literal(match.group(0), match.group(0))
        at = match.end()
    if at < len(text):
        paragraph += nodes.Text(text[at:])
    return paragraph


def error_box(messages: Iterable[str], prefix: str = "tl-pipeline: ") -> nodes.error:
    """An error box saying each message (``prefix`` before the first, as the log says
    it): its first line as a sentence, the lines after it as a literal block."""
    box = nodes.error("", classes=["tl-error"])
    for index, message in enumerate(messages):
        first, _, code = message.partition("\n")
        box += sentence((prefix if index == 0 else "") + first)
        if code:
            block = nodes.literal_block(code, code, classes=["tl-error-code"])
            block["language"] = "text"  # as written: no lexer's idea of it
            box += block
    return box
