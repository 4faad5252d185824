"""A directive's options to its variants, worked out once.

The ``tl-pipeline`` directive, ``tlstages lower`` and the resources benchmark all call
:func:`plan`: the option values (as written) with their defaults, the kernel's text and
where it comes from, in; a :class:`~.plan.spec.DirectiveSpec` with its variants out. A
bad value is an :class:`~.errors.OptionError` naming the option (``:sweep: ...``) at its
line, as the caller's ``line_of`` gives it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

from .claims import names_used, reads_passes
from .errors import OptionError
from .kernel.source import parse_kernel
from .kernel.tuning import tried
from .parts import DEFAULT_SHOW, parse_show
from .plan import options
from .plan.fit import fit_plan
from .plan.options import Expected
from .plan.spec import DirectiveSpec, KernelOrigin, canonical_params
from .plan.targets import Target, parse_targets
from .plan.toolkit import find as find_toolkit
from .plan.variants import (
    OptionClash,
    depth_of,
    depths,
    kernel_factory,
    matrix,
    with_toolkit,
    written_depth,
)
from .results.fact_table import BY_NAME

_T = TypeVar("_T")


@dataclass(frozen=True)
class Defaults:
    """What an option not given falls back to: ``conf.py``'s ``tlstages_*`` values for a
    directive, the command's for ``tlstages lower``."""

    targets: tuple[Target, ...]
    num_stages: tuple[int, ...] = (1, 2, 3, 4)
    show: tuple[str, ...] = DEFAULT_SHOW
    diff: str = "consecutive"
    timeout: float | None = None
    toolkit: str = "auto"  # NVIDIA's compiler for the resources part, as tlstages_toolkit


@dataclass(frozen=True)
class Kernel:
    """The kernel's text (normalised) and where it comes from."""

    source: str
    source_name: str  # the file name it compiles under
    origin: KernelOrigin = field(default_factory=KernelOrigin)
    line: int | None = None  # the document line of its first line (an inline kernel)
    path: str | None = None  # a file kernel's absolute path, for messages


def _no_line(option: str) -> int:
    return 0


def _unsaid(option: str, message: str) -> None:
    return None


def plan(given: Mapping[str, str], kernel: Kernel, defaults: Defaults, *, name: str,
         docname: str, lineno: int, title: str | None = None,
         line_of: Callable[[str], int] = _no_line,
         overridden: Callable[[str, str], None] = _unsaid,
         record_passes: bool = False) -> DirectiveSpec:
    """The directive that ``given`` (option -> value as written; the content aside)
    describes for ``kernel``. ``name``: the default of ``:name:``; ``overridden(option,
    message)``: an option the kernel overrides, said and lowered as written all the same;
    ``record_passes``: record every variant's pass changes whatever the page shows (a
    command's JSON output)."""

    def option(key: str, parser: Callable[[str], _T], default: _T) -> _T:
        if key not in given:
            return default
        try:
            return parser(given[key])
        except OptionError as exc:
            raise OptionError(f":{key}: {exc}", line_of(key)) from None

    # The default too: a document's name may not make a snapshot's file name.
    name = option("name", options.parse_name, None) or options.parse_name(name)
    num_stages = option("num-stages", options.parse_num_stages, defaults.num_stages)
    targets = option("target", parse_targets, defaults.targets)
    params: dict[str, object] = option("params", options.parse_params, {})
    show = option("show", parse_show, defaults.show)
    diff = option("diff", options.parse_diff, defaults.diff)
    timeout = option("timeout", options.parse_timeout, defaults.timeout)
    nothing: tuple[tuple[Expected, ...], str | None] = ((), None)
    expected, pattern = option("expect-error", options.parse_expect_error, nothing)
    hazards, hazard_pattern = option("expect-hazard", options.parse_expect_error, nothing)
    sweep: dict[str, list[object]] = option("sweep", options.parse_sweep, {})
    passes: tuple[str, ...] = option("passes", options.parse_passes, ())
    asserts = parse_asserts(given, line_of)
    try:
        factory = kernel_factory(kernel.source, kernel.source_name, given.get("factory"),
                                 params, sweep)
        arguments = {**params, **{k: v[0] for k, v in sweep.items()}}
        num_stages, unmet = depths(factory, num_stages, "num-stages" in given, arguments)
        if unmet:  # the kernel lowers as its author wrote it; the option is what to drop
            overridden("num-stages", unmet)
        variants = matrix(kernel.source, kernel.source_name, factory.name, params, sweep,
                          num_stages, targets, passes, kernel.origin, factory.depth_param,
                          record_passes=record_passes
                          or any(reads_passes(e) for _, e in asserts),
                          depth_for=depth_of(factory))
        # The passes table compares variants: with one, it has nothing to show.
        if "passes" in show and len(variants) > 1:
            variants = tuple(variant.recording() for variant in variants)
        if "resources" in show \
                or names_used(e for _, e in asserts) & set(BY_NAME["resources"].names):
            variants = with_toolkit(variants, find_toolkit(defaults.toolkit))
        fit = None
        if "fit" in show or "fit" in names_used(e for _, e in asserts):
            # The depths the kernel file tries, where the directive gives it its depth.
            tuning = tried(parse_kernel(kernel.source, kernel.source_name), factory.name,
                           kernel.source, ("num_stages", factory.depth_param or "")) \
                if factory.takes_depth else None
            fit = fit_plan(variants, tuning, as_written=variants[0].as_written)
    except OptionClash as exc:
        raise OptionError(f":{exc.option}: {exc}", line_of(exc.option)) from None
    labels = [t.label for t in targets]
    for key, entries in (("expect-error", expected), ("expect-hazard", hazards)):
        for entry in entries:
            if entry.num_stages not in num_stages:
                among = f"the depth the kernel fixes ({num_stages[0]}, as written)" \
                    if variants[0].as_written else "in :num-stages:"
                raise OptionError(f":{key}: {entry.num_stages} is not {among}", line_of(key))
            if entry.target is not None and entry.target not in labels:
                raise OptionError(f":{key}: {entry} names no target of this directive "
                                  f"({', '.join(labels)})", line_of(key))
    return DirectiveSpec(
        name=name, docname=docname, lineno=lineno, kernel_line=kernel.line,
        kernel_path=kernel.path, title=title or f"Kernel {factory.name}", targets=targets,
        variants=variants, show=show, diff=diff, timeout=timeout, expect_error=expected,
        expect_pattern=pattern, expect_hazard=hazards, expect_hazard_pattern=hazard_pattern,
        asserts=asserts,
        reference=option("reference", options.parse_expression, None),
        flops=option("flops", options.parse_expression, None),
        tolerance=option("tolerance", options.parse_tolerance, None),
        sweep=tuple((k, tuple(map(repr, v))) for k, v in sweep.items()),
        passes=passes, passes_line=line_of("passes"), params=canonical_params(params),
        written_depth=written_depth(factory, arguments), fit=fit)


def parse_asserts(given: Mapping[str, str],
                  line_of: Callable[[str], int]) -> tuple[tuple[int, str], ...]:
    """(document line, expression) of each ``:assert:`` line; an error at its own line."""
    if "assert" not in given:
        return ()
    first = line_of("assert")
    found = []
    for offset, line in enumerate(given["assert"].splitlines()):
        if line.strip():
            try:
                found.append((first + offset, options.parse_expression(line)))
            except OptionError as exc:
                raise OptionError(f":assert: {exc}", first + offset) from None
    return tuple(found)
