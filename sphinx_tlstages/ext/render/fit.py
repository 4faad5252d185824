"""The ``fit`` part, "Which depth fits which GPU": a row per depth (and swept values), a
column per group of GPUs that share a target, each cell the variant against that GPU's
limit per block; the lowerings each column reads, and the kernel's own tuning list
audited against the table."""

from __future__ import annotations

from collections.abc import Sequence

from docutils import nodes

from ...core.hardware.fit import Cell as FitCell
from ...core.hardware.fit import FitTable, Reading
from ...core.kernel.tuning import Tuning
from ...core.plan.fit import FitRow
from ...core.plan.gpus import COLUMNS, LOWERED_ALIKE
from ...core.plan.spec import DirectiveSpec
from .parts import Context, Drawn, Rows, renders
from .tables import Cell, doc_line, number, table

_MEANING = ("A variant fits a GPU when the shared memory one block needs (dynamic and "
            "static, as in the summary) is within that GPU's limit per block: NVIDIA's "
            "opt-in maximum per block, AMD's LDS per workgroup, Apple's threadgroup memory "
            "per threadgroup, from the vendors' published tables. TileLang lowers past "
            "the limit without a word; the launch fails on the GPU.")


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _and(words: Sequence[str]) -> str:
    *most, last = words
    return f"{', '.join(most)} and {last}" if most else last


def _cell(cell: FitCell, row: FitRow) -> Cell:
    if cell.state == "missing":
        return "not lowered here"
    if cell.state == "failed":
        return nodes.emphasis(text="failed to lower", classes=["tl-fit-failed"])
    assert cell.used is not None
    if cell.state == "misses":
        found: list[nodes.Node] = [nodes.strong(text=f"misses by {number(cell.misses or 0)} B",
                                                classes=["tl-over"])]
        if row.tried:
            found.append(nodes.emphasis(text=" (tried)", classes=["tl-fit-tried"]))
        return found
    text = f"fits ({100 * cell.used / cell.limit:.0f} %)"
    if cell.blocks_per_sm is not None:
        text += f", {_plural(cell.blocks_per_sm, 'block')}/SM"
    if row.tried is False:
        return [nodes.Text(text), nodes.emphasis(text=" (never tried)",
                                                 classes=["tl-fit-untried"])]
    return text


def _deepest(fit: FitTable) -> list[list[Cell]]:
    """One row per swept combination: the deepest depth that fits each GPU."""
    found = []
    for swept in dict.fromkeys(row.swept for row in fit.rows):
        label = "deepest that fits" + (
            f" ({', '.join(f'{k}={v}' for k, v in swept)})" if swept else "")
        cells: list[Cell] = [nodes.strong(text=label)]
        if fit.tuning:
            cells.append("")
        for column in range(fit.columns):
            depth = fit.deepest(column, swept)
            cells.append("none" if depth is None else f"num_stages={depth}")
        found.append(cells)
    return found


def _reading(reading: Reading) -> str:
    """``A100, A10, RTX 3090, L4 and RTX 4090 read the page's own sm_80 variants
    (TileLang lowers sm_80, sm_86 and sm_89 alike)``."""
    names = _and([gpu.name for c in reading.columns for gpu in COLUMNS[c].gpus])
    if reading.extra == 0:
        what = f"the page's own {reading.arch} variants"
    elif reading.extra == reading.rows:
        what = f"{reading.arch}, {_plural(reading.extra, 'lowering')} for this table"
    else:
        what = (f"the page's own {reading.arch} variants and "
                f"{_plural(reading.extra, 'lowering')} of the depths only the tuning "
                "list tries")
    archs = list(dict.fromkeys(a for c in reading.columns for a in COLUMNS[c].archs))
    alike = next((g for g in LOWERED_ALIKE if reading.arch in g), ())
    if len(archs) > 1 or archs != [reading.arch]:
        shown = [a for a in alike if a in archs or a == reading.arch]
        what += f" (TileLang lowers {_and(shown)} alike)"
    many = sum(len(COLUMNS[c].gpus) for c in reading.columns) > 1
    return f"{names} read{'' if many else 's'} {what}"


def _cost(fit: FitTable) -> str:
    said = "; ".join(_reading(r) for r in fit.readings)
    total = (f"{_plural(fit.extra, 'lowering')} beyond the page's own, cached as the "
             "page's are" if fit.extra else "no lowering beyond the page's own")
    return f"Lowerings: {said}. In all, {total}."


def _tuning(spec: DirectiveSpec, tuning: Tuning, fit: FitTable) -> str:
    """What the kernel's tuning list tries that cannot run, and what fits but is never
    tried, by GPU."""
    lines = [doc_line(spec, line) for line in tuning.lines]
    lines = [line if ":" in line else f"line {line}" for line in lines]
    said = [f"The kernel's tuning list, {tuning.what} ({', '.join(lines)}), tries "
            f"num_stages {_and([str(d) for d in tuning.depths])}."]
    for swept in dict.fromkeys(row.swept for row in fit.rows):
        where = f" with {', '.join(f'{k}={v}' for k, v in swept)}" if swept else ""
        for row, cells in zip(fit.rows, fit.cells, strict=True):
            if row.swept != swept:
                continue
            if row.tried:
                over = [g.name for c, cell in enumerate(cells) if cell.state == "misses"
                        for g in COLUMNS[c].gpus]
                if over:
                    said.append(f"num_stages={row.num_stages}{where} cannot run on "
                                f"{_and(over)}.")
            else:
                fits = [g.name for c, cell in enumerate(cells) if cell.state == "fits"
                        for g in COLUMNS[c].gpus]
                if fits:
                    said.append(f"num_stages={row.num_stages}{where} fits {_and(fits)} and "
                                "is never tried.")
    said.append("Only the depths are audited, with this page's other parameters; the "
                "list's other values are not lowered.")
    return " ".join(said)


def _notes(spec: DirectiveSpec, fit: FitTable) -> list[str]:
    notes = [_MEANING, _cost(fit)]
    if fit.tuning:
        notes.append(_tuning(spec, fit.tuning, fit))
    if fit.borrowed:
        by_arch: dict[str, list[str]] = {}
        for column, arch in fit.borrowed:
            by_arch.setdefault(arch, []).extend(g.name for g in COLUMNS[column].gpus)
        said = "; ".join(f"{_and(names)} take the registers of the {arch} compile"
                         for arch, names in by_arch.items())
        notes.append("Blocks per SM follow cuda_occupancy.h with each GPU's own limits; "
                     f"{said} (the same code, not compiled again).")
    if fit.uncompiled:
        notes.append("No blocks per SM where NVIDIA's compiler failed: " + "; ".join(
            f"{arch}: {why}" for arch, why in fit.uncompiled) + ".")
    failed = [f"{COLUMNS[c].names}, {row.heading}: {cell.error}"
              for row, cells in zip(fit.rows, fit.cells, strict=True)
              for c, cell in enumerate(cells) if cell.state == "failed"]
    if failed:
        notes.append("Failed to lower: " + "; ".join(dict.fromkeys(failed)) + ".")
    if not fit.complete:
        notes.append("TileLang could not lower here: the cells that read lowerings beyond "
                     "the page's own are not shown.")
    return notes


def fit_part(spec: DirectiveSpec, fit: FitTable) -> list[nodes.Node]:
    """The table (class ``tl-fit``'s) and the sentences under it."""
    headers: list[Cell] = ["variant"]
    if fit.tuning:
        headers.append("in the tuning list")
    headers += [f"{c.heading}: {number(c.limit)} B" for c in COLUMNS]
    body: list[list[Cell]] = []
    for row, cells in zip(fit.rows, fit.cells, strict=True):
        line: list[Cell] = [row.heading]
        if fit.tuning:
            line.append("yes" if row.tried else "no")
        line += [_cell(cell, row) for cell in cells]
        body.append(line)
    body += _deepest(fit)
    keys = 2 if fit.tuning else 1
    drawn = table(headers, body, ["tl-table", "tl-fit-table"],
                  widths=[18, *[8] * (keys - 1), *[14] * len(COLUMNS)], key_columns=keys)
    for found_table in drawn.findall(nodes.table):
        found_table["columns_named"] = "GPUs"  # what paper's split tables are titled by
    found: list[nodes.Node] = [drawn]
    found += [nodes.paragraph(text=note, classes=["tl-note"]) for note in _notes(spec, fit)]
    return found


@renders("fit")
def _fit(spec: DirectiveSpec, rows: Rows, context: Context) -> Drawn | None:
    if context.fit is None:
        return None
    return Drawn(fit_part(spec, context.fit))
