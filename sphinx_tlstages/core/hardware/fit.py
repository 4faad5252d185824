"""Which variant fits which GPU: the fit part's table, from the lowerings its plan names.

Data in (the :class:`~..plan.fit.FitPlan` and each variant's result), a
:class:`FitTable` out: for every row and column, whether the shared memory one block
needs (dynamic plus static, as the summary counts it) is within that GPU's limit per
block, by how much it misses, and where a result has NVIDIA's compiler's numbers, the
blocks per SM (cuda_occupancy.h's rules, :mod:`.occupancy`, with that GPU's limits and
the registers of the compile). The renderer, ``tlstages lower`` and the ``fit`` name of
``:assert:`` all read this table.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Literal

from ..kernel.tuning import Tuning
from ..plan.fit import FitPlan, FitRow
from ..plan.gpus import COLUMNS
from ..plan.spec import VariantSpec
from ..results.result import Result, shared_bytes
from .occupancy import limits_for, occupancy

State = Literal["fits", "misses", "failed", "missing"]


@dataclass(frozen=True)
class Cell:
    """One variant on one GPU."""

    state: State  # missing: not lowered here (a page built from a snapshot)
    used: int | None = None  # bytes of shared memory one block needs
    limit: int = 0
    blocks_per_sm: int | None = None  # where the compile's numbers are known
    error: str = ""  # why it failed to lower (its first line)

    @property
    def misses(self) -> int | None:
        """Bytes over the limit (0 where it fits; None where it did not lower)."""
        return None if self.used is None else max(0, self.used - self.limit)


@dataclass(frozen=True)
class Reading:
    """Which lowering a group of columns reads: its target, and how many of its
    variants were lowered for the table alone."""

    arch: str
    columns: tuple[int, ...]
    extra: int  # variants lowered for the table beyond the page's own
    rows: int


@dataclass(frozen=True)
class FitTable:
    """The whole table: ``cells[row][column]``, in :data:`..plan.gpus.COLUMNS` order."""

    rows: tuple[FitRow, ...]
    cells: tuple[tuple[Cell, ...], ...]
    readings: tuple[Reading, ...]
    tuning: Tuning | None = None  # the kernel's own tuning list, where rows audit it
    # Columns whose blocks per SM use the registers of another target's compile.
    borrowed: tuple[tuple[int, str], ...] = ()  # (column, the compile's arch)
    # Lowerings NVIDIA's compiler failed on, where the page shows resources: (arch, why).
    uncompiled: tuple[tuple[str, str], ...] = ()

    @property
    def columns(self) -> int:
        return len(COLUMNS)

    @property
    def extra(self) -> int:
        return sum(reading.extra for reading in self.readings)

    @property
    def complete(self) -> bool:
        """Every cell lowered here (a page built from a snapshot lacks the extra ones)."""
        return all(cell.state != "missing" for row in self.cells for cell in row)

    def deepest(self, column: int, swept: tuple[tuple[str, str], ...]) -> int | None:
        """The largest depth of these swept values that fits ``column``."""
        fitting = [row.num_stages for row, cells in zip(self.rows, self.cells, strict=True)
                   if row.swept == swept and cells[column].state == "fits"]
        return max(fitting) if fitting else None


def _blocks(arch: str, compiled: str, result: Result) -> int | None:
    """Blocks of this variant per SM of ``arch``, from the compile for ``compiled``."""
    found = result.get("resources")
    limits = limits_for(arch)
    if not isinstance(found, dict) or limits is None or "registers" not in found:
        return None
    if arch == compiled and found.get("occupancy"):
        return int(found["occupancy"]["blocks_per_sm"])
    tmem = sum(b.get("columns") or 0 for b in result.get("tmem") or [])
    return int(occupancy(limits, int(result.get("threads", 0)), int(found["registers"]),
                         int(found["static_shared"]), int(found["dynamic_shared"]),
                         tmem)["blocks_per_sm"])


def _cell(column: int, arch: str, result: Result) -> Cell:
    limit = COLUMNS[column].limit
    if not result.get("ok"):
        error = result["error"]
        if error["kind"] == "unavailable":
            return Cell("missing", limit=limit)
        return Cell("failed", limit=limit, error=(error["message"].splitlines() or [""])[0])
    used = shared_bytes(result)
    blocks = None
    if COLUMNS[column].target.kind == "cuda":
        blocks = _blocks(COLUMNS[column].archs[0], arch, result)
    return Cell("fits" if used <= limit else "misses", used, limit, blocks)


def fit_table(plan: FitPlan, result: Callable[[VariantSpec], Result]) -> FitTable:
    """The table of ``plan``, each variant's result read with ``result``."""
    cells: list[list[Cell]] = [[Cell("missing") for _ in COLUMNS] for _ in plan.rows]
    readings = []
    borrowed = []
    uncompiled: dict[str, str] = {}
    for low in plan.lowerings:
        results = [result(v) for v in low.variants]
        errors = [str(r.get("resources_error", "")) for r in results if r.get("resources_error")]
        if errors:
            uncompiled.setdefault(low.arch, errors[0].splitlines()[0])
        for column in low.columns:
            for i, found in enumerate(results):
                cells[i][column] = _cell(column, low.arch, found)
            if COLUMNS[column].archs[0] != low.arch and any(
                    cells[i][column].blocks_per_sm is not None for i in range(len(results))):
                borrowed.append((column, low.arch))
        readings.append(Reading(low.arch, low.columns, sum(low.extra), len(low.variants)))
    return FitTable(plan.rows, tuple(map(tuple, cells)), tuple(readings), plan.tuning,
                    tuple(borrowed), tuple(uncompiled.items()))


def fit_names(table: FitTable, variant: VariantSpec) -> dict[str, SimpleNamespace]:
    """What ``fit`` gives a claim on ``variant``: by each GPU's name and target
    (``fit["H100"]``, ``fit["sm_90a"]``), this variant's row on that GPU."""
    swept = tuple(axis for axis in variant.axes if axis[0] not in ("target", "num_stages"))
    row = next((i for i, r in enumerate(table.rows)
                if r.swept == swept and r.num_stages == variant.num_stages), None)
    if row is None:
        return {}
    found: dict[str, SimpleNamespace] = {}
    for column, spec in enumerate(COLUMNS):
        cell = table.cells[row][column]
        value = SimpleNamespace(
            fits=cell.state == "fits", shared=cell.used, limit=spec.limit,
            misses=cell.misses, deepest=table.deepest(column, swept),
            blocks_per_sm=cell.blocks_per_sm, target=spec.archs[0],
            tried=table.rows[row].tried)
        for key in spec.keys:
            found[key] = value
    return found

