"""Building a directive's variants: the one place that turns parsed options into specs.

The ``tl-pipeline`` directive and ``tlstages lower`` both come here, so the terminal
prints the same matrix of variants the page shows.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import OptionError, SourceError
from ..kernel.computed import Unknown
from ..kernel.depth import Depth
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
    factory = choose_factory(find_factories(parse_kernel(source, source_name), source),
                             requested)
    check_params(factory, {**params, **{k: v[0] for k, v in sweep.items()}})
    return factory


def _evaluated(factory: Factory, arguments: Mapping[str, object]) -> Depth:
    """The factory's depth as written, computed ones told for ``arguments``."""
    assert factory.depth is not None
    try:
        return factory.depth.evaluated(arguments)
    except Unknown as exc:
        line, how = factory.depth.computed[0]
        raise SourceError(
            f"{factory.name} computes its pipeline depth ({how.name} = {how.expression}, "
            f"for the loop at line {line}) and the kernel text cannot tell its value for "
            f"these arguments: {exc}; give it in :params: or give {factory.name} a "
            "num_stages parameter", how.line) from None


def written_depth(factory: Factory, arguments: Mapping[str, object]
                  ) -> tuple[tuple[int, str], ...]:
    """(kernel line, what it says) of each depth a kernel lowered as written sets, for
    these arguments (empty when the directive's num_stages values are given to it)."""
    if factory.depth is None or factory.depth.param is not None:
        return ()
    return _evaluated(factory, arguments).each


def depth_of(factory: Factory) -> Callable[[Mapping[str, object]], int] | None:
    """For a factory that computes its depth from its arguments, the depth a variant's
    arguments give (a swept argument may change it); None otherwise."""
    if factory.depth is None or factory.depth.param is not None or not factory.depth.computed:
        return None
    return lambda arguments: _evaluated(factory, arguments).written


def depths(factory: Factory, requested: Sequence[int], explicit: bool,
           arguments: Mapping[str, object] | None = None) -> tuple[tuple[int, ...], str]:
    """The num_stages values to lower: those asked for, unless the kernel sets its depth
    itself; then the one it wrote or computes for ``arguments``, and, where values were
    asked for explicitly that differ, what to say about it (empty: nothing)."""
    depth = factory.depth
    if depth is None or depth.param is not None:
        return tuple(requested), ""
    depth = _evaluated(factory, arguments or {})
    if not explicit or tuple(requested) == (depth.written,):
        return (depth.written,), ""
    verb = "computes" if depth.computed else "fixes"
    asked = " ".join(map(str, requested))
    return (depth.written,), (
        f"{factory.name} {verb} its pipeline depth ("
        + "; ".join(f"{said}, line {line}" for line, said in depth.each)
        + f" of the kernel), so it lowers as written, with num_stages={depth.written} "
        f"only, not {asked}: drop :num-stages:, or, to compare depths, give "
        f"{factory.name} a num_stages parameter and pass it to "
        + ("its loops" if len(depth.each) > 1 else "that loop"))


def matrix(source: str, source_name: str, factory: str, params: Mapping[str, object],
           sweep: Mapping[str, Sequence[object]], num_stages: Sequence[int],
           targets: Sequence[Target], passes: tuple[str, ...] = (),
           origin: KernelOrigin | None = None,
           depth_param: str | None = "num_stages",
           record_passes: bool = False,
           depth_for: Callable[[Mapping[str, object]], int] | None = None
           ) -> tuple[VariantSpec, ...]:
    """Every combination of target, swept values and num_stages, num_stages varying
    fastest, so neighbouring columns differ in num_stages alone (``depth_for``: the one
    depth a factory computes from each combination's arguments, see :func:`depth_of`)."""
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
        if depth_for is not None:
            stages = depth_for({**params, **chosen})
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
    snapshots compare which were merged, both by this rule, in :func:`alike_groups`."""
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


@dataclass(frozen=True)
class AlikeGroup:
    """Variants that differ in num_stages alone, by their positions in what was grouped
    (in order), and which of them lowered alike."""

    members: tuple[int, ...]
    # All of them lowered alike: the page shows them as one column.
    merged: bool
    # When not merged, each set of two or more of them that lowered alike, in order.
    within: tuple[tuple[int, ...], ...]


def alike_groups(variants: Sequence[tuple[Hashable, Mapping[str, Any]]]) -> list[AlikeGroup]:
    """The one place that decides which variants lowered alike, for the page and the
    snapshots. ``variants``: for each, what it is besides its num_stages (its target and
    other swept values, in any form that tells them apart: the page's axes, a snapshot's
    :func:`alike_group`) and its result or snapshot entry. Groups come in the order of
    their first members; whether members lowered alike is :func:`lowered_alike`'s say."""
    groups: dict[Hashable, list[int]] = {}
    for i, (others, _) in enumerate(variants):
        groups.setdefault(others, []).append(i)
    found = []
    for members in groups.values():
        if lowered_alike([variants[i][1] for i in members]):
            found.append(AlikeGroup(tuple(members), merged=True, within=()))
            continue
        # Each member joins the first set whose first member it lowered alike with; one
        # that failed, or kept no planned IR, stays alone.
        sets: list[list[int]] = []
        for i in members:
            for alike in sets:
                if lowered_alike([variants[alike[0]][1], variants[i][1]]):
                    alike.append(i)
                    break
            else:
                sets.append([i])
        found.append(AlikeGroup(tuple(members), merged=False,
                                within=tuple(tuple(a) for a in sets if len(a) > 1)))
    return found


def _page_groups(rows: Sequence[tuple[VariantSpec, Result]]) -> list[AlikeGroup]:
    """:func:`alike_groups` of a page's rows, told apart by target and the other axes."""
    return alike_groups([((variant.target, tuple(axis for axis in variant.axes
                                                 if axis[0] != "num_stages")), result)
                         for variant, result in rows])


def merge_unchanged(rows: Sequence[tuple[VariantSpec, Result]]
                    ) -> tuple[list[tuple[VariantSpec, Result]], list[VariantSpec]]:
    """Variants that differ in num_stages alone and lowered alike, shown once.

    On some targets num_stages changes nothing (TileLang does not pipeline for gfx942):
    every value gives the same IR after pipeline planning and the same code, and columns
    that repeat one another would hide that. Returns the rows to show, where each such
    group is one row whose variant lists the values it stands for (``merged``), and those
    merged variants.
    """
    # A merged group is shown where its first member stands, with that member's result.
    firsts = {group.members[0]: group for group in _page_groups(rows) if group.merged}
    hidden = {i for group in firsts.values() for i in group.members[1:]}
    shown: list[tuple[VariantSpec, Result]] = []
    merged: list[VariantSpec] = []
    for i, (variant, result) in enumerate(rows):
        group = firsts.get(i)
        if group is not None:
            one = dataclasses.replace(
                variant, merged=tuple(rows[j][0].num_stages for j in group.members))
            shown.append((one, result))
            merged.append(one)
        elif i not in hidden:
            shown.append((variant, result))
    return shown, merged


def alike_within(rows: Sequence[tuple[VariantSpec, Result]]) -> list[str]:
    """Where only some num_stages values of a group lowered alike (two of four depths),
    one sentence per such set, saying which: the page shows their columns apart, so
    that the reader would otherwise have to compare them line by line."""
    said: list[str] = []
    for group in _page_groups(rows):
        for alike in group.within:
            first = rows[alike[0]][0]
            swept = ", ".join(f"{name}={value}" for name, value in first.axes
                              if name not in ("num_stages", "target"))
            where = first.target.label + (f" with {swept}" if swept else "")
            *most, last = (rows[i][0].stages for i in alike)
            said.append(f"On {where}, num_stages {', '.join(most)} and {last} lower to the "
                        "same IR after pipeline planning and to the same "
                        f"{first.target.language} code; the other values differ.")
    return said


def _and(values: Sequence[str]) -> str:
    """``64``, ``64 and 128``, ``1, 2 and 3``."""
    *most, last = values
    return f"{', '.join(most)} and {last}" if most else last


def set_label(variants: Sequence[VariantSpec]) -> str:
    """The variants a merged row stands for, read as one set: ``2 and 3`` (num_stages
    alone); in a matrix, the values every variant shares, then the others' values each
    once: ``num_stages=1, block_N 64 and 128``. Where the variants are not every
    combination of those values, their headings one by one, ``;`` between them."""
    if not variants:
        return ""
    if all(v.only_num_stages for v in variants):
        return _and([v.stages for v in variants])
    axes: list[tuple[str, list[str]]] = []
    for name, _ in variants[0].axes:
        seen = [v.stages if name == "num_stages" else dict(v.axes).get(name, "")
                for v in variants]
        axes.append((name, list(dict.fromkeys(seen))))
    combinations = 1
    for _, values in axes:
        combinations *= len(values)
    if len(variants) == 1 or combinations != len({v.axes for v in variants}) \
            or any(v.as_written for v in variants):
        return "; ".join(v.heading for v in variants)

    def said(name: str, values: list[str]) -> str:
        if name == "target":
            return _and(values)
        return f"{name}={values[0]}" if len(values) == 1 else f"{name} {_and(values)}"
    shared = [said(name, values) for name, values in axes if len(values) == 1]
    varying = [said(name, values) for name, values in axes if len(values) > 1]
    return ", ".join(shared + varying)


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


__all__ = ["MAX_VARIANTS", "AlikeGroup", "OptionClash", "SourceError", "alike_group",
           "alike_groups", "alike_within", "depth_of", "depths",
           "kernel_factory", "lowered_alike", "matrix", "merge_unchanged", "set_label",
           "unchanged_sentence",
           "written_depth"]
