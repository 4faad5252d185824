"""Tables on paper and in plain text: split to fit the line, columns sized by their text.

HTML tables scroll sideways inside the part; a page cannot. So for builders without HTML:

- a table with one column per variant (its ``key_columns`` attribute counts the columns
  before them) is split into as few tables as fit the line, each repeating the key
  columns and titled with the variants it holds: a 48-variant ``:sweep:`` would otherwise be
  50 columns across a page;
- every column gets a width between its longest word and its longest cell, from the
  text (HTML's relative widths would starve ``__syncthreads`` of room on paper). LaTeX
  gets them as a column spec of ``\\X`` parts of the line, so that no table leaves the
  text block, and a long table as ``longtable``, so that it breaks across pages.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from docutils import nodes
from sphinx import addnodes

MOST_VARIANTS = 6  # per table, even where more would fit: a reader compares across rows
# Longer tables may break across pages (LaTeX's longtable); a shorter one moves whole, so
# that two rows never end up on two pages.
LONG_TABLE_ROWS = 12


@dataclass(frozen=True)
class Measure:
    """A line of a table in characters of the body font, and how wide others are."""

    line: float
    code: float  # a typewriter character
    header: float  # a character of a header cell
    padding: float  # between two columns


# LaTeX: tables are \footnotesize (sphinxtlstages.sty) on Sphinx's default text width,
# about 130 Times characters; headers are set in sans-serif and code in typewriter, both
# wider (measured: a typewriter character is 1.06 of these, "num_stages=1" in sans
# 13.3). Kept on the safe side: an overfull cell shows on the page, a spare one does not.
LATEX = Measure(line=118, code=1.1, header=1.1, padding=3.2)
# Plain text: every character is one column; "| " and " " between cells. No page, but
# wider than a terminal gets hard to read.
TEXT = Measure(line=120, code=1.0, header=1.0, padding=3)


def _positions(row: nodes.Element) -> list[tuple[int, int, nodes.entry]]:
    """(first column, last column, entry) of each cell of ``row``."""
    found, column = [], 0
    for entry in row.children:
        assert isinstance(entry, nodes.entry)
        last = column + int(entry.get("morecols", 0))
        found.append((column, last, entry))
        column = last + 1
    return found


def _width(text: str) -> float:
    """In average lower-case characters: capitals are about a third wider."""
    return len(text) + 0.35 * sum(c.isupper() for c in text)


def _extent(table: nodes.table, measure: Measure) -> tuple[list[float], list[float]]:
    """Per column: its longest word, and its longest body cell (at least that word), in
    body characters."""
    group = next(table.findall(nodes.tgroup))
    columns = int(group["cols"])
    shortest, longest = [1.0] * columns, [1.0] * columns
    for row in table.findall(nodes.row):
        header = isinstance(row.parent, nodes.thead)
        for first, last, entry in _positions(row):
            text = entry.astext()
            code = sum(len(n.astext()) for n in entry.findall(nodes.literal))
            factor = measure.header if header else measure.code if code * 2 > len(text) else 1
            span = last - first + 1
            words = max((_width(w) for w in text.split()), default=1) * factor / span
            whole = _width(text) * factor / span
            for column in range(first, last + 1):
                shortest[column] = max(shortest[column], words)
                # A header wraps rather than widen its column past its cells.
                if not header:
                    longest[column] = max(longest[column], whole)
    return shortest, [max(a, b) for a, b in zip(shortest, longest, strict=True)]


def _share(shortest: list[float], longest: list[float], room: float) -> list[float]:
    """Widths between each column's longest word and longest cell that fill ``room``: a
    column whose longest cell fits a fair share gets it, the others split the rest
    evenly (as browsers lay out tables), none goes below its longest word."""
    if sum(longest) <= room:
        return longest
    if sum(shortest) >= room:
        return shortest
    low, high = 0.0, max(longest)
    for _ in range(40):  # the cap on a column's width, by bisection
        cap = (low + high) / 2
        used = sum(min(b, max(a, cap)) for a, b in zip(shortest, longest, strict=True))
        low, high = (cap, high) if used < room else (low, cap)
    return [min(b, max(a, low)) for a, b in zip(shortest, longest, strict=True)]


def _columns_of(table: nodes.table, columns: list[int]) -> nodes.table:
    """A copy of ``table`` with only ``columns`` (spanning cells clipped to them)."""
    group = next(table.findall(nodes.tgroup))
    specs = [c for c in group.children if isinstance(c, nodes.colspec)]
    copy = table.copy()
    new_group = nodes.tgroup(cols=len(columns))
    copy += new_group
    new_group.extend(specs[c].deepcopy() for c in columns)
    for part in group.children:
        if not isinstance(part, nodes.thead | nodes.tbody):
            continue
        new_part = part.copy()
        new_group += new_part
        for row in part.children:
            assert isinstance(row, nodes.row)
            new_row = nodes.row()
            for first, last, entry in _positions(row):
                kept = [c for c in columns if first <= c <= last]
                if kept:
                    cell = entry.deepcopy()
                    cell.attributes.pop("morecols", None)
                    if len(kept) > 1:
                        cell["morecols"] = len(kept) - 1
                    new_row += cell
            new_part.append(new_row)
    return copy


def variants_per_table(table: nodes.table, keys: int, measure: Measure) -> int:
    """How many variant columns fit beside the key columns (at least one)."""
    shortest, _ = _extent(table, measure)
    widest = max(shortest[keys:], default=1.0) + measure.padding
    room = measure.line - sum(shortest[:keys]) - measure.padding * keys
    return max(1, min(MOST_VARIANTS, math.floor(room / widest)))


def split_variant_columns(root: nodes.Element, measure: Measure) -> None:
    """Split every table with more variant columns than fit the line into tables of
    balanced chunks, each titled with the variants it holds (or what its
    ``columns_named`` attribute names its columns: ``GPUs``)."""
    for table in list(root.findall(nodes.table)):
        keys = table.get("key_columns")
        group = next(table.findall(nodes.tgroup), None)
        if keys is None or group is None:
            continue
        variants = int(group["cols"]) - keys
        most = variants_per_table(table, keys, measure)
        if variants <= most:
            continue
        count = math.ceil(variants / most)
        replacement: list[nodes.Node] = []
        start = 0
        for piece_number in range(count):  # sizes differ by one at most: 48 by 5 is 8 x 5 + 2 x 4
            stop = start + variants // count + (piece_number < variants % count)
            piece = _columns_of(table, [*range(keys), *range(keys + start, keys + stop)])
            # A title, not a line above: LaTeX keeps a caption on its table's page.
            # What the columns are: variants, or the fit part's GPUs.
            named = table.get("columns_named", "Variants")
            piece.insert(0, nodes.title(text=f"{named} {start + 1}–{stop} of {variants}"))
            replacement.append(piece)
            start = stop
        table.replace_self(replacement)


def fit_columns(root: nodes.Element, measure: Measure, latex: bool) -> None:
    """Column widths from the cells' text; for LaTeX, a column spec (and longtable)."""
    for table in list(root.findall(nodes.table)):
        if "tl-table" not in table["classes"]:
            continue
        shortest, longest = _extent(table, measure)
        pads = measure.padding * len(shortest)
        widths = _share(shortest, longest, measure.line - pads)
        group = next(table.findall(nodes.tgroup))
        specs = [c for c in group.children if isinstance(c, nodes.colspec)]
        for spec, width in zip(specs, widths, strict=True):
            spec["colwidth"] = max(1, round(width))
        if latex:
            # Parts of a whole line: a narrow table stays narrow, a wide one fills it
            # (with a hair to spare for the rules' rounding). Ragged right: justified
            # text in a narrow column is mostly gaps.
            total = round(10 * max(measure.line, sum(widths) + pads) * 1.01)
            parts = "".join(rf">{{\raggedright\arraybackslash}}"
                            rf"\X{{{round(10 * (w + measure.padding))}}}{{{total}}}"
                            for w in widths)
            table.parent.insert(table.parent.index(table),
                                addnodes.tabular_col_spec(spec=parts))
            if len(list(table.findall(nodes.row))) > LONG_TABLE_ROWS:
                table["classes"].append("longtable")
