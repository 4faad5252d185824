"""The book's reference pages, generated from sphinx-tlstages' own declarations.

``.. tlstages-reference:: options|config|environment|warnings|cli|assert-names`` renders
the table (or help text) from the code that Sphinx and the command actually use, so the
reference cannot drift from the extension. ``assert-names`` shows each name's value on the
seed GEMM as the book's own snapshot of it recorded them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar

from docutils import nodes
from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective

from sphinx_tlstages.cli import build_parser
from sphinx_tlstages.core.claims import NAMES, names_of
from sphinx_tlstages.core.errors import SUBTYPES, WARNING_TYPE
from sphinx_tlstages.core.records.snapshots import as_result
from sphinx_tlstages.ext.config import CONFIG_VALUES, ENVIRONMENT_VARIABLES
from sphinx_tlstages.ext.directive import OPTIONS


def _table(headers: list[str], rows: list[list[str]], parse: object,
           paper: tuple[int, ...]) -> list[nodes.Node]:
    """The table, after the column widths it gets on paper (in hundredths of the line;
    HTML ignores them): LaTeX's default would squeeze the names into a quarter of what
    they need and run them into the next column."""
    spec = "".join(rf">{{\raggedright\arraybackslash}}\X{{{w}}}{{100}}" for w in paper)
    return [addnodes.tabular_col_spec(spec=spec), _plain_table(headers, rows, parse)]


def _plain_table(headers: list[str], rows: list[list[str]], parse: object) -> nodes.table:
    group = nodes.tgroup(cols=len(headers))
    for width in [1] * (len(headers) - 1) + [3]:
        group += nodes.colspec(colwidth=width)
    head = nodes.thead()
    head += nodes.row("", *(nodes.entry("", nodes.paragraph(text=h)) for h in headers))
    group += head
    body = nodes.tbody()
    for row in rows:
        entries = []
        for cell in row:
            entry = nodes.entry()
            entry.extend(parse(cell))  # type: ignore[operator]
            entries.append(entry)
        body += nodes.row("", *entries)
    group += body
    # Long enough to need more than one page.
    return nodes.table("", group, classes=["longtable"] if len(rows) > 12 else [])


# The seed GEMM's directive in the first chapter, and the depths the table shows: 1 has no
# version dimension in its shared buffers, 3 has one.
SEED_SNAPSHOT = "_tlstages/snapshots/gemm-sm80.json"
SEED_DEPTHS = (1, 3)
_CELL_CHARS = 90


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= _CELL_CHARS else text[:_CELL_CHARS - 3] + "..."


def seed_values(snapshot: dict[str, Any]) -> dict[int, dict[str, Any]]:
    """The names a claim reads on each of :data:`SEED_DEPTHS`, from the seed GEMM's
    recorded results."""
    found = {}
    target = snapshot["target"]["arch"]
    for depth in SEED_DEPTHS:
        result = as_result(snapshot["variants"][str(depth)], depth)
        assert result is not None, f"{SEED_SNAPSHOT}: num_stages={depth} is not a result"
        found[depth] = names_of(result, depth, snapshot["params"], target)
    return found


class Reference(SphinxDirective):
    required_arguments = 1
    option_spec: ClassVar[dict[str, object]] = {}

    def _rst(self, text: str) -> list[nodes.Node]:
        return self.parse_text_to_nodes(text)

    def run(self) -> list[nodes.Node]:
        what = self.arguments[0]
        if what == "options":
            rows = [[f"``:{name}:``", doc] for name, doc in OPTIONS.items()]
            return _table(["option", "meaning"], rows, self._rst, (22, 78))
        if what == "config":
            rows = [[f"``{v.name}``", f"``{v.default!r}``", v.doc] for v in CONFIG_VALUES]
            return _table(["value", "default", "meaning"], rows, self._rst, (29, 29, 42))
        if what == "environment":
            rows = [[f"``{name}``", doc] for name, doc in ENVIRONMENT_VARIABLES.items()]
            return _table(["variable", "meaning"], rows, self._rst, (28, 72))
        if what == "warnings":
            rows = [[f"``{WARNING_TYPE}.{name}``", doc] for name, doc in SUBTYPES.items()]
            return _table(["type.subtype", "when"], rows, self._rst, (24, 76))
        if what == "assert-names":
            # The values are the seed GEMM's snapshot's, which this very build may record
            # (from nothing, under TLSTAGES_SNAPSHOTS=update) after reading: each cell is
            # filled when the page is written (fill_seed_values), not now.
            self.env.note_dependency(str(Path(self.env.srcdir, SEED_SNAPSHOT)))
            rows = [[f"``{n.name}``", f"``{n.type}``", n.about,
                     *(f"{SEED_CELL}{d} {n.name}" for d in SEED_DEPTHS), f"``{n.example}``"]
                    for n in NAMES]
            return _table(["name", "type", "what", *(f"num_stages={d}" for d in SEED_DEPTHS),
                           "example"], rows, self._rst, (14, 12, 22, 17, 17, 18))
        if what == "cli":
            parser = build_parser()
            texts = [parser.format_help()]
            for action in parser._subparsers._group_actions:  # type: ignore[union-attr]
                for sub in action.choices.values():
                    texts.append(sub.format_help())
                    for inner in sub._subparsers._group_actions if sub._subparsers else []:
                        texts.extend(s.format_help() for s in inner.choices.values())
            return [nodes.literal_block(text, text, language="text") for text in texts]
        raise self.error(f"unknown reference {what!r}")


# A cell whose value is the seed snapshot's, filled when the page is written.
SEED_CELL = "seed-value:"


def fill_seed_values(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    """``doctree-resolved``: each seed cell with its value in the seed GEMM's snapshot,
    read now, after this build's snapshot check (which may have just recorded it). Where
    the build recorded none (``check`` mode or CI from no snapshots, which fail with the
    missing snapshot), the cells say so."""
    cells = [node for node in doctree.findall(nodes.paragraph)
             if node.astext().startswith(SEED_CELL)]
    if not cells:
        return
    path = Path(app.srcdir, SEED_SNAPSHOT)
    try:
        values: dict[int, dict[str, Any]] | None = seed_values(
            json.loads(path.read_text(encoding="utf-8")))
    except FileNotFoundError:
        values = None
    for cell in cells:
        depth, name = cell.astext().removeprefix(SEED_CELL).split(" ", 1)
        cell.children = []
        if values is None:
            cell += nodes.Text("(no snapshot recorded)")
        elif name in values[int(depth)]:
            text = _shown(values[int(depth)][name])
            cell += nodes.literal(text, text)
        else:
            cell += nodes.Text("(absent)")


def setup(app: Sphinx) -> dict[str, object]:
    app.add_directive("tlstages-reference", Reference)
    app.connect("doctree-resolved", fill_seed_values)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
