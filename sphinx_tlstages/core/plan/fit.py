"""What the fit part lowers: one lowering per target family its columns need.

The table's rows are the page's depths (and swept values), with the depths the kernel's
own tuning list tries besides; its columns are the GPUs of :mod:`.gpus`. Each column reads
one lowering per row: the page's own variant where the page lowers the column's target or
one TileLang lowers alike (:data:`.gpus.LOWERED_ALIKE`), else a variant lowered for the
part alone, for the first target of the family, shared by every column of that family.
Those extra variants go through the batch and the cache as any other (the same key
anywhere in a project is lowered once); :class:`FitPlan` says which column reads which.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from ..kernel.tuning import Tuning
from .gpus import COLUMNS, LOWERED_ALIKE, Column
from .spec import VariantSpec
from .targets import parse_target
from .variants import OptionClash

# Lowerings beyond the page's own: seven families at four depths is 28; a sweep or a long
# tuning list multiplies it, and a build nobody waits for helps nobody.
MAX_EXTRA = 64


@dataclass(frozen=True)
class FitRow:
    """One row: the swept values and the depth, and where the depth comes from."""

    swept: tuple[tuple[str, str], ...]  # (parameter, repr of its value), as the axes say
    num_stages: int
    on_page: bool  # among the page's own variants (else only the tuning list tries it)
    tried: bool | None  # in the kernel's tuning list (None: the kernel lists none)

    @property
    def heading(self) -> str:
        """``num_stages=3``, ``block_K=64, num_stages=3``."""
        return ", ".join([*(f"{name}={value}" for name, value in self.swept),
                          f"num_stages={self.num_stages}"])


@dataclass(frozen=True)
class Lowering:
    """One target lowered for the table, the columns that read it and its variants."""

    arch: str  # the target lowered: sm_80, gfx942
    columns: tuple[int, ...]  # positions in :data:`.gpus.COLUMNS`
    variants: tuple[VariantSpec, ...]  # one per row, in row order
    extra: tuple[bool, ...]  # per row: lowered for the table alone (not a page variant)


@dataclass(frozen=True)
class FitPlan:
    """The fit part's rows, the lowerings it reads and the kernel's tuning list."""

    rows: tuple[FitRow, ...]
    lowerings: tuple[Lowering, ...]
    tuning: Tuning | None = None
    # The depth the kernel sets itself: nothing to audit against a tuning list.
    as_written: bool = False

    @property
    def columns(self) -> tuple[Column, ...]:
        return COLUMNS

    @property
    def extra(self) -> tuple[VariantSpec, ...]:
        """The variants lowered for the table alone, each once."""
        found = [v for low in self.lowerings
                 for v, extra in zip(low.variants, low.extra, strict=True) if extra]
        return tuple(dict.fromkeys(found))

    def lowering_of(self, column: int) -> Lowering:
        return next(low for low in self.lowerings if column in low.columns)


def _swept(variant: VariantSpec) -> tuple[tuple[str, str], ...]:
    return tuple(axis for axis in variant.axes if axis[0] not in ("target", "num_stages"))


def _extra(template: VariantSpec, arch: str, num_stages: int) -> VariantSpec:
    """``template`` (a page variant of the same swept values) for ``arch`` at
    ``num_stages``: no pass records, and NVIDIA's compiler only for NVIDIA targets."""
    target = parse_target(arch)
    axes = (("target", arch), *_swept(template), ("num_stages", str(num_stages)))
    return dataclasses.replace(
        template, target=target, num_stages=num_stages, axes=axes, ir_passes=(),
        record_passes=False, merged=(), fingerprints=False,
        toolkit=template.toolkit if target.kind == "cuda" else None)


def fit_plan(variants: Sequence[VariantSpec], tuning: Tuning | None,
             as_written: bool) -> FitPlan:
    """The fit part of a page whose variants are ``variants``; ``tuning``: the depths its
    kernel file tries (added as rows, unless the kernel sets its depth itself)."""
    combos: dict[tuple[tuple[str, str], ...], VariantSpec] = {}
    depths: dict[tuple[tuple[str, str], ...], set[int]] = {}
    for variant in variants:
        combos.setdefault(_swept(variant), variant)
        depths.setdefault(_swept(variant), set()).add(variant.num_stages)
    audited = tuning if tuning is not None and not as_written else None
    rows = []
    for swept, own in depths.items():
        listed = set(audited.depths) if audited else set()
        for depth in sorted(own | listed):
            rows.append(FitRow(swept, depth, depth in own,
                               None if audited is None else depth in listed))
    page = {(v.target.label, _swept(v), v.num_stages): v for v in variants}
    labels = {v.target.label for v in variants}
    # Each column reads its own target where the page lowers it, else the page's target of
    # its family, else the family's first: one lowering per family the page lacks.
    read: dict[str, list[int]] = {}
    for i, column in enumerate(COLUMNS):
        group = next(g for g in LOWERED_ALIKE if column.archs[0] in g)
        mine = [a for a in column.archs if a in labels]
        kin = [a for a in group if a in labels]
        read.setdefault((mine or kin or [group[0]])[0], []).append(i)
    lowerings = []
    for arch, columns in read.items():
        chosen, extra = [], []
        for row in rows:
            found = page.get((arch, row.swept, row.num_stages))
            chosen.append(found or _extra(combos[row.swept], arch, row.num_stages))
            extra.append(found is None)
        lowerings.append(Lowering(arch, tuple(columns), tuple(chosen), tuple(extra)))
    plan = FitPlan(tuple(rows), tuple(lowerings), audited, as_written)
    if len(plan.extra) > MAX_EXTRA:
        raise OptionClash(
            f"the fit part needs {len(plan.extra)} lowerings beyond the page's own "
            f"({len(rows)} rows x the target families the page does not lower); at most "
            f"{MAX_EXTRA}: sweep fewer values, or list fewer depths", "show")
    return plan
