"""A small parse of a built HTML page, so tests can read tables as a reader sees them."""

from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser

_VOID = {"br", "img", "hr", "meta", "link", "input", "col", "wbr", "source"}


@dataclass
class Element:
    tag: str
    attrs: dict[str, str]
    children: list[Element | str] = field(default_factory=list)

    @property
    def classes(self) -> list[str]:
        return self.attrs.get("class", "").split()

    def astext(self) -> str:
        """The text, white space folded as a browser would show it."""
        return " ".join(self._text().split())

    def _text(self) -> str:
        return "".join(c if isinstance(c, str) else c._text() for c in self.children)

    def iter(self, tag: str | None = None, cls: str | None = None) -> list[Element]:
        found = []
        for child in self.children:
            if isinstance(child, Element):
                if (tag is None or child.tag == tag) and (cls is None or cls in child.classes):
                    found.append(child)
                found.extend(child.iter(tag, cls))
        return found


class _Builder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Element("root", {})
        self.stack = [self.root]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        element = Element(tag, {k: v or "" for k, v in attrs})
        self.stack[-1].children.append(element)
        if tag not in _VOID:
            self.stack.append(element)

    def handle_endtag(self, tag: str) -> None:
        for i in range(len(self.stack) - 1, 0, -1):
            if self.stack[i].tag == tag:
                del self.stack[i:]
                return

    def handle_data(self, data: str) -> None:
        self.stack[-1].children.append(data)


def parse(html: str) -> Element:
    builder = _Builder()
    builder.feed(html)
    return builder.root


def table_rows(element: Element) -> list[list[str]]:
    """The first table under ``element``, as rows of cell texts (header row first)."""
    table = element.iter("table")[0]
    return [[cell.astext() for cell in row.children
             if isinstance(cell, Element) and cell.tag in ("td", "th")]
            for row in table.iter("tr")]
