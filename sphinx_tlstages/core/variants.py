"""Building a directive's variants: the one place that turns parsed options into specs.

The ``tl-pipeline`` directive and ``tlstages lower`` both come here, so the terminal
prints the same matrix of variants the page shows.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence

from .errors import OptionError, SourceError
from .kernel_source import Factory, check_params, choose_factory, find_factories, parse_kernel
from .spec import KernelOrigin, VariantSpec, canonical_params
from .targets import Target

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


def matrix(source: str, source_name: str, factory: str, params: Mapping[str, object],
           sweep: Mapping[str, Sequence[object]], num_stages: Sequence[int],
           targets: Sequence[Target], passes: tuple[str, ...] = (),
           origin: KernelOrigin | None = None) -> tuple[VariantSpec, ...]:
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
            target, axes=tuple(axes), ir_passes=passes, origin=origin or KernelOrigin()))
    return tuple(variants)


__all__ = ["MAX_VARIANTS", "OptionClash", "SourceError", "kernel_factory", "matrix"]
