"""Building docutils tables from rows of cells, for every builder alike."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeAlias

from docutils import nodes

from ...core.plan.spec import DirectiveSpec

Cell: TypeAlias = "str | nodes.Node | Sequence[nodes.Node]"


@dataclass(frozen=True)
class Span:
    """A cell that spans ``columns`` columns."""

    cell: Cell
    columns: int


def _entry(cell: Cell | Span) -> nodes.entry:
    span = cell.columns if isinstance(cell, Span) else 1
    content = cell.cell if isinstance(cell, Span) else cell
    entry = nodes.entry()
    if span > 1:
        entry["morecols"] = span - 1
    if isinstance(content, str):
        entry += nodes.paragraph(text=content)
    elif isinstance(content, nodes.Node):
        entry += content if isinstance(content, nodes.Body) else nodes.paragraph("", "", content)
    else:
        entry += nodes.paragraph("", "", *content)
    return entry


def code(text: str) -> nodes.literal:
    return nodes.literal(text=text)


def table(headers: Sequence[Cell], rows: Sequence[Sequence[Cell | Span]], classes: list[str],
          widths: Sequence[int] | None = None, key_columns: int | None = None
          ) -> nodes.container:
    """A table with one header row, in a container that scrolls sideways when the page is
    narrower than the table; ``widths`` are relative column widths. ``key_columns``:
    the columns before one column per variant, which builders without HTML repeat when
    they split a wide table (see :mod:`..builders.plain`)."""
    columns = len(headers)
    group = nodes.tgroup(cols=columns)
    for width in widths or [1] * columns:
        group += nodes.colspec(colwidth=width)
    head = nodes.thead()
    head += nodes.row("", *(_entry(h) for h in headers))
    group += head
    body = nodes.tbody()
    for row in rows:
        body += nodes.row("", *(_entry(cell) for cell in row))
    group += body
    found = nodes.table("", group, classes=classes)
    if key_columns is not None:
        found["key_columns"] = key_columns
    return nodes.container("", found, classes=["tl-table-scroll"])


def number(value: int) -> str:
    """``1,024``."""
    return f"{value:,}"


def doc_line(spec: DirectiveSpec, line: int | None) -> str:
    """Where kernel line ``line`` stands: a document line, or ``file.py:N``."""
    if line is None:
        return ""
    if spec.kernel_line is None:
        where = f"{spec.variants[0].source_name}:{line}"
        # A line the listing leaves out: the file's number all the same, and said so.
        return where if spec.listing is None or spec.listing.shows(line) \
            else f"{where} (not shown)"
    return str(spec.kernel_line + line - 1)
