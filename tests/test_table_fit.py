"""Tables for builders without HTML: split to fit the line, columns sized by their text.

The worst case the directive allows is 48 variants (a ``:sweep:``): built here as nodes,
without lowering anything.
"""

from __future__ import annotations

import re

from docutils import nodes
from sphinx import addnodes

from sphinx_tlstages.ext.builders.table_fit import LATEX, TEXT, fit_columns, split_variant_columns
from sphinx_tlstages.ext.render.tables import Span, table

HEADINGS = [f"block_K={k}, block_N={n}, threads={t}, num_stages={s}"
            for k in (32, 64) for n in (64, 128, 256) for t in (128, 256) for s in (1, 2, 3, 4)]


def worst_case() -> nodes.container:
    """The schedule table of a 48-variant sweep, with a row spanning every column."""
    rows: list[list[object]] = [
        [nodes.literal(text=f"T.copy(A[by * block_M, ko * block_K], A_shared) #{i}"),
         f"gemm.py:{18 + i}", *(f"stage {i % 2}, order {j % 3}" for j in range(48))]
        for i in range(3)
    ]
    rows.append([nodes.emphasis(text="barrier ring"), Span("none", 49)])
    return table(["statement", "line", *HEADINGS], rows, ["tl-table"],  # type: ignore[arg-type]
                 widths=[34, 8, *[14] * 48], key_columns=2)


def _pieces(root: nodes.Element) -> list[nodes.table]:
    return list(root.findall(nodes.table))


def _headers(piece: nodes.table) -> list[str]:
    return [entry.astext() for entry in next(piece.findall(nodes.thead)).findall(nodes.entry)]


def test_48_variants_split_into_tables_that_fit_the_line() -> None:
    root = worst_case()
    split_variant_columns(root, LATEX)
    pieces = _pieces(root)
    assert len(pieces) > 1
    seen = []
    for piece in pieces:
        headers = _headers(piece)
        assert headers[:2] == ["statement", "line"]  # the key columns, in every piece
        assert len(headers) - 2 <= 6
        seen += headers[2:]
        title = piece.next_node(nodes.title)
        assert title is not None and re.fullmatch(r"Variants \d+–\d+ of 48", title.astext())
    assert seen == HEADINGS  # each variant once, in order
    sizes = {len(_headers(p)) - 2 for p in pieces}
    assert max(sizes) - min(sizes) <= 1  # balanced
    for piece in pieces:  # the spanning row is clipped to each piece
        last = list(piece.findall(nodes.row))[-1]
        assert [e.get("morecols", 0) for e in last.findall(nodes.entry)] == \
            [0, len(_headers(piece)) - 2]


def test_latex_column_specs_stay_inside_the_line() -> None:
    root = worst_case()
    split_variant_columns(root, LATEX)
    fit_columns(root, LATEX, latex=True)
    specs = list(root.findall(addnodes.tabular_col_spec))
    assert len(specs) == len(_pieces(root))
    for spec in specs:
        parts = [(int(a), int(b)) for a, b in re.findall(r"\\X\{(\d+)\}\{(\d+)\}", spec["spec"])]
        assert sum(a / b for a, b in parts) <= 1.0
        assert spec["spec"].count(r"\raggedright") == len(parts)


def test_widths_follow_the_text_and_long_tables_break_across_pages() -> None:
    body = [[nodes.literal(text=f"tl.Pass{i}#1"), str(i), "+1 −1", "did not run"]
            for i in range(20)]
    root = table(["pass run", "position", "num_stages=1", "num_stages=2"], body,
                 ["tl-table"], widths=[30, 8, 12, 12], key_columns=2)
    fit_columns(root, TEXT, latex=False)
    widths = [spec["colwidth"] for spec in root.findall(nodes.colspec)]
    assert widths[1] < widths[0]  # "position" wraps before a pass name does
    assert all(w >= len("num_stages=1") for w in widths[2:])
    fit_columns(root, LATEX, latex=True)
    assert "longtable" in next(root.findall(nodes.table))["classes"]


def test_narrow_tables_are_not_split() -> None:
    root = table(["buffer", "num_stages=2", "num_stages=3"], [["A_shared", "1", "2"]],
                 ["tl-table"], key_columns=1)
    split_variant_columns(root, LATEX)
    assert len(_pieces(root)) == 1 and root.next_node(nodes.title) is None
