"""Building a directive's variants: the one place that turns parsed options into specs.

The ``tl-pipeline`` directive and ``tlstages lower`` both come here, so the terminal
prints the same matrix of variants the page shows.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import OptionError, SourceError
from ..kernel.source import Factory, check_params, choose_factory, find_factories, parse_kernel
from ..results.result import Result
from .spec import KernelOrigin, VariantSpec, canonical_params
from .targets import Target
from .toolkit import Toolkit

# More would make tables nobody can read and builds nobody waits for.
MAX_VARIANTS = 48


class OptionClash(OptionError):
    """An error about one option's value; ``option`` names it (``sweep``, ``num-stages``)
    so that the caller can point at its line."""

    def __init__(self, message: str, option: str) -> None:
        super().__init__(message)
        self.option = option


def kernel_factory(source: str, source_name: str, requested: str | None,
                   params: Mapping[str, object],
                   sweep: Mapping[str, Sequence[object]]) -> Factory:
    """Parse the kernel, choose its factory and check the keywords it will get."""
    clash = sorted(set(sweep) & set(params))
    if clash:
        raise OptionClash(f"{', '.join(clash)} is also given in :params:", "sweep")
    factory = choose_factory(find_factories(parse_kernel(source, source_name)), requested)
    check_params(factory, {**params, **{k: v[0] for k, v in sweep.items()}})
    return factory


def depths(factory: Factory, requested: Sequence[int], explicit: bool) -> tuple[int, ...]:
    """The num_stages values to lower: those asked for, unless the kernel sets its depth
    itself; then the one it wrote (and values asked for explicitly must be that one)."""
    depth = factory.depth
    if depth is None or depth.param is not None:
        return tuple(requested)
    if explicit and tuple(requested) != (depth.written,):
        raise OptionClash(
            f"{factory.name} fixes its pipeline depth ("
            + "; ".join(f"{said}, line {line}" for line, said in depth.each)
            + " of the kernel), so it lowers as written, with "
            f"num_stages={depth.written} only; to compare depths, give {factory.name} a "
            "num_stages parameter and pass it to "
            + ("its loops" if len(depth.each) > 1 else "that loop"), "num-stages")
    return (depth.written,)


def matrix(source: str, source_name: str, factory: str, params: Mapping[str, object],
           sweep: Mapping[str, Sequence[object]], num_stages: Sequence[int],
           targets: Sequence[Target], passes: tuple[str, ...] = (),
           origin: KernelOrigin | None = None,
           depth_param: str | None = "num_stages",
           record_passes: bool = False) -> tuple[VariantSpec, ...]:
    """Every combination of target, swept values and num_stages, num_stages varying
    fastest, so neighbouring columns differ in num_stages alone."""
    combos = 1
    for values in sweep.values():
        combos *= len(values)
    count = len(targets) * combos * len(num_stages)
    if count > MAX_VARIANTS:
        raise OptionClash(f"{count} variants ({len(targets)} targets x {combos} swept "
                          f"combinations x {len(num_stages)} num_stages); at most "
                          f"{MAX_VARIANTS}", "sweep" if sweep else "num-stages")
    variants = []
    names = list(sweep)
    for target, combo, stages in itertools.product(
            targets, itertools.product(*sweep.values()), num_stages):
        chosen = dict(zip(names, combo, strict=True))
        axes = [("target", target.label)] if len(targets) > 1 else []
        axes += [(name, repr(value)) for name, value in chosen.items()]
        axes.append(("num_stages", str(stages)))
        variants.append(VariantSpec(
            source, source_name, factory, canonical_params({**params, **chosen}), stages,
            target, axes=tuple(axes), ir_passes=passes, origin=origin or KernelOrigin(),
            depth_param=depth_param, record_passes=record_passes))
    return tuple(variants)


def with_toolkit(variants: Sequence[VariantSpec], toolkit: Toolkit | None
                 ) -> tuple[VariantSpec, ...]:
    """The variants, those for NVIDIA targets compiled with ``toolkit`` (the resources
    part); no other target has a compiler from which the part could be read."""
    return tuple(dataclasses.replace(v, toolkit=toolkit) if v.target.kind == "cuda" else v
                 for v in variants)


def lowered_alike(results: Sequence[Mapping[str, Any]]) -> bool:
    """The one rule for "num_stages had no effect": two or more variants, every one
    lowered (a result's ``ok``; a snapshot entry without an ``error``), to the same IR
    after pipeline planning and to the same code. The page merges such columns and
    snapshots compare which were merged, both by this rule, within :func:`alike_group`."""
    if len(results) < 2:
        return False
    first = results[0]
    return all(r.get("ok", "error" not in r) for r in results) \
        and first.get("planned_ir") is not None \
        and all(r.get("planned_ir") == first.get("planned_ir")
                and r.get("cuda") == first.get("cuda") for r in results)


def alike_group(variant_id: str) -> str:
    """Which variants may be merged with this one: those whose id differs only in
    num_stages (same target, same other swept values). Ids as snapshots write them:
    ``2``, or ``target=sm_80,block_K=64,num_stages=2``."""
    return ",".join(part for part in variant_id.split(",")
                    if not part.startswith("num_stages=") and not part.isdigit())


def merge_unchanged(rows: Sequence[tuple[VariantSpec, Result]]
                    ) -> tuple[list[tuple[VariantSpec, Result]], list[VariantSpec]]:
    """Variants that differ in num_stages alone and lowered alike, shown once.

    On some targets num_stages changes nothing (TileLang does not pipeline for gfx942):
    every value gives the same IR after pipeline planning and the same code, and columns
    that repeat one another would hide that. Returns the rows to show, where each such
    group is one row whose variant lists the values it stands for (``merged``), and those
    merged variants.
    """
    groups: dict[tuple[object, ...], list[tuple[VariantSpec, Result]]] = {}
    for variant, result in rows:
        others = tuple(axis for axis in variant.axes if axis[0] != "num_stages")
        groups.setdefault((variant.target, others), []).append((variant, result))
    shown: list[tuple[VariantSpec, Result]] = []
    merged: list[VariantSpec] = []
    done: set[tuple[object, ...]] = set()
    for variant, result in rows:
        key = (variant.target, tuple(a for a in variant.axes if a[0] != "num_stages"))
        group = groups[key]
        if not lowered_alike([r for _, r in group]):
            shown.append((variant, result))
        elif key not in done:
            done.add(key)
            one = dataclasses.replace(variant, merged=tuple(v.num_stages for v, _ in group))
            shown.append((one, result))
            merged.append(one)
    return shown, merged


def unchanged_sentence(variant: VariantSpec) -> str:
    """What a merged column stands for, in one sentence."""
    others = ", ".join(f"{name}={value}" for name, value in variant.axes
                       if name not in ("num_stages", "target"))
    where = variant.target.label + (f" with {others}" if others else "")
    *most, last = map(str, variant.merged)
    values = f"{', '.join(most)} and {last}"
    return (f"num_stages had no effect on {where}: num_stages {values} lower to the same IR "
            f"after pipeline planning and to the same {variant.target.language} code, "
            f"shown once as num_stages={variant.stages}.")


__all__ = ["MAX_VARIANTS", "OptionClash", "SourceError", "alike_group", "depths",
           "kernel_factory", "lowered_alike", "matrix", "merge_unchanged", "unchanged_sentence"]
