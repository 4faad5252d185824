"""A directive's options to its variants, worked out once.

The ``tl-pipeline`` directive, ``tlstages lower`` and the resources benchmark all call
:func:`plan`: the option values (as written) with their defaults, the kernel's text and
where it comes from, in; a :class:`~.plan.spec.DirectiveSpec` with its variants out. A
bad value is an :class:`~.errors.OptionError` naming the option (``:sweep: ...``) at its
line, as the caller's ``line_of`` gives it.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from .claims import names_used, reads_passes
from .errors import OptionError, SourceError
from .kernel.numbers import numeric_use
from .kernel.source import parse_kernel
from .kernel.tuning import tried
from .parts import DEFAULT_SHOW, parse_show
from .plan import options, partial
from .plan.fit import fit_plan
from .plan.options import Expected
from .plan.spec import DirectiveSpec, KernelOrigin, Problem, canonical_params
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
_E = TypeVar("_E", OptionError, SourceError)


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


# A value of one of these types is a number; one of another is not, where the kernel
# uses it as one (bool is an int to Python and to TVM alike).
_NUMBERS = (int, float)


def _wrong_type(value: object, integer: bool) -> bool:
    """Whether ``value`` cannot stand where the kernel uses a number (``integer``: where
    it must be a whole one: a size, an extent, a count)."""
    return not isinstance(value, _NUMBERS) or (integer and isinstance(value, float))


def _type_name(value: object) -> str:
    return "a TileLang dtype" if isinstance(value, options.DType) else \
        f"a {type(value).__name__}"


class _Options:
    """The option values as written, read one at a time. Strict: the first bad value
    raises, naming the option and its line. Tolerant: each bad value is kept as a
    :class:`~.plan.spec.Problem` and its good part used, or the default."""

    def __init__(self, given: Mapping[str, str], line_of: Callable[[str], int],
                 tolerant: bool) -> None:
        self.given, self.line_of, self.tolerant = given, line_of, tolerant
        self.problems: list[Problem] = []
        self.bare: dict[Problem, str] = {}  # each problem without what was kept

    def fail(self, option: str, message: str, kept: str = "", line: int | None = None) -> None:
        """A bad value of ``option``: raised where strict, kept where tolerant."""
        at = self.line_of(option) if line is None else line
        if not self.tolerant:
            raise OptionError(f":{option}: {message}", at)
        problem = Problem(f":{option}: {message}" + (f" ({kept})" if kept else ""), at)
        if problem not in self.bare:
            self.problems.append(problem)
            self.bare[problem] = f":{option}: {message}"

    def read(self, key: str, parser: Callable[[str], _T], default: _T,
             kept: Callable[[_T], str] = lambda value: "") -> _T:
        if key not in self.given:
            return default
        try:
            return parser(self.given[key])
        except OptionError as exc:
            if not self.tolerant:
                raise OptionError(f":{key}: {exc}", self.line_of(key)) from None
            first = str(exc)
        part, wrong = partial.PARTS[key](self.given[key]) if key in partial.PARTS \
            else (None, [])
        value: _T = default if part is None else part
        said = kept(value)
        said = (f"ignored; {said}" if said else "ignored") if part is None else \
            (f"kept: {said}" if said else "the rest is kept")
        for message in wrong or [first]:
            self.fail(key, message, said)
        return value

    def cause(self, options: tuple[str, ...]) -> OptionError | None:
        """The first problem of ``options``, as the error that stops the planning (the
        others kept on it, to be said too)."""
        first = next((p for p in self.problems if p.message.startswith(
            tuple(f":{o}:" for o in options))), None)
        if first is None:
            return None
        return self.stop(OptionError(self.bare[first], first.line), first)

    def stop(self, error: _E, instead: Problem | None = None) -> _E:
        """``error``, carrying the other problems found (said by the caller too)."""
        error.problems = tuple(p for p in self.problems if p != instead)
        return error


def _unquoted(value: object) -> str | None:
    """``64`` for the string ``"64"``: the number a quoted value meant, if it is one."""
    if isinstance(value, str):
        try:
            return repr(options.literal_value(value)) if isinstance(
                options.literal_value(value), _NUMBERS) else None
        except (ValueError, SyntaxError, TypeError):
            return None
    return None


def _stages_words(stages: tuple[int, ...]) -> str:
    return "num_stages " + " ".join(map(str, stages))


def plan(given: Mapping[str, str], kernel: Kernel, defaults: Defaults, *, name: str,
         docname: str, lineno: int, title: str | None = None,
         line_of: Callable[[str], int] = _no_line,
         overridden: Callable[[str, str], None] = _unsaid,
         record_passes: bool = False, tolerant: bool = False) -> DirectiveSpec:
    """The directive that ``given`` (option -> value as written; the content aside)
    describes for ``kernel``. ``name``: the default of ``:name:``; ``overridden(option,
    message)``: an option the kernel overrides, said and lowered as written all the same;
    ``record_passes``: record every variant's pass changes whatever the page shows (a
    command's JSON output). ``tolerant``: a bad value is ignored (or cut to its good part)
    rather than raised, and the spec keeps it
    (:attr:`~.plan.spec.DirectiveSpec.problems`); what cannot be planned at all still
    raises, with the problems found before on the error (``problems``)."""
    read = _Options(given, line_of, tolerant)
    try:
        return _plan(read, kernel, defaults, name, docname, lineno, title, overridden,
                     record_passes)
    except OptionError as exc:
        if tolerant and exc.problems is None:
            raise read.stop(exc) from None
        raise
    except SourceError as exc:
        if tolerant and exc.problems is None:
            raise read.stop(exc) from None
        raise


def _plan(read: _Options, kernel: Kernel, defaults: Defaults, name: str, docname: str,
          lineno: int, title: str | None, overridden: Callable[[str, str], None],
          record_passes: bool) -> DirectiveSpec:
    given, line_of = read.given, read.line_of
    # The default too: a document's name may not make a snapshot's file name.
    name = read.read("name", options.parse_name, None,
                     lambda _: f"named {name}") or options.parse_name(name)
    num_stages = read.read("num-stages", options.parse_num_stages, defaults.num_stages,
                           _stages_words)
    targets = read.read("target", parse_targets, defaults.targets,
                        lambda found: "target " + " ".join(t.label for t in found))
    params: dict[str, object] = read.read("params", options.parse_params, {})
    show = read.read("show", parse_show, defaults.show,
                     lambda found: "showing " + (" ".join(found) or "the summary"))
    diff = read.read("diff", options.parse_diff, defaults.diff)
    timeout = read.read("timeout", options.parse_timeout, defaults.timeout)
    nothing: tuple[tuple[Expected, ...], str | None] = ((), None)
    expected, pattern = read.read("expect-error", options.parse_expect_error, nothing)
    hazards, hazard_pattern = read.read("expect-hazard", options.parse_expect_error, nothing)
    timeline: tuple[Expected, ...] = read.read("timeline", options.parse_timeline, ())
    sweep: dict[str, list[object]] = read.read("sweep", options.parse_sweep, {})
    passes: tuple[str, ...] = read.read("passes", options.parse_passes, ())
    asserts = parse_asserts(given, line_of, read)
    reference = read.read("reference", options.parse_expression, None)
    flops = read.read("flops", options.parse_expression, None)
    tolerance = read.read("tolerance", options.parse_tolerance, None)
    hardware = read.read("hardware", options.parse_hardware, None)
    clash = sorted(set(sweep) & set(params))
    if clash and read.tolerant:  # the fixed value stands; the sweep goes without it
        read.fail("sweep", f"{', '.join(clash)} is also given in :params:",
                  "swept without it")
        sweep = {key: values for key, values in sweep.items() if key not in clash}
    try:
        factory = kernel_factory(kernel.source, kernel.source_name, given.get("factory"),
                                 params, sweep)
    except OptionClash as exc:
        raise OptionError(f":{exc.option}: {exc}", line_of(exc.option)) from None
    except SourceError as exc:
        # A value left out for what is wrong with it leaves the factory without it.
        cause = read.cause(("params", "sweep")) if "needs :params:" in str(exc) else None
        if cause is not None:
            raise cause from None
        raise
    tree = parse_kernel(kernel.source, kernel.source_name)
    params, sweep = _typed(read, tree, kernel, factory.name, params, sweep)
    if any(key not in params and key not in sweep and key != factory.depth_param
           for key in factory.required):
        cause = read.cause(("params", "sweep"))
        assert cause is not None  # only a value taken out leaves one missing here
        raise cause
    try:
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
    written = variants[0].as_written
    expected = _expectations(read, "expect-error", expected, num_stages, targets, sweep,
                             written)
    hazards = _expectations(read, "expect-hazard", hazards, num_stages, targets, sweep,
                            written)
    if "timeline" in given and not timeline:  # the option alone: every variant
        timeline = tuple(Expected(n) for n in num_stages)
    timeline = _expectations(read, "timeline", timeline, num_stages, targets, sweep, written)
    return DirectiveSpec(
        name=name, docname=docname, lineno=lineno, kernel_line=kernel.line,
        kernel_path=kernel.path, title=title or f"Kernel {factory.name}", targets=targets,
        variants=variants, show=show, diff=diff, timeout=timeout, expect_error=expected,
        expect_pattern=pattern if expected else None, expect_hazard=hazards,
        expect_hazard_pattern=hazard_pattern if hazards else None,
        asserts=asserts, reference=reference, flops=flops, tolerance=tolerance,
        hardware=hardware, timeline=timeline,
        sweep=tuple((k, tuple(map(repr, v))) for k, v in sweep.items()),
        passes=passes, passes_line=line_of("passes"), params=canonical_params(params),
        written_depth=written_depth(factory, arguments), problems=tuple(read.problems),
        fit=fit)


def _typed(read: _Options, tree: ast.Module, kernel: Kernel, factory: str,
           params: dict[str, object], sweep: dict[str, list[object]]
           ) -> tuple[dict[str, object], dict[str, list[object]]]:
    """``params`` and ``sweep`` without the values the kernel uses as a number and that
    are not one (``block_M="64"``): each said at its option's line, with its value, its
    type and the kernel line that uses it."""
    def wrong(key: str, value: object) -> str | None:
        for integer in (False, True):
            if not _wrong_type(value, integer):
                continue
            used = numeric_use(tree, factory, key, integer, kernel.source)
            if used is not None:
                line, text = used
                at = f"line {line} of {Path(kernel.path).name}" if kernel.path else \
                    f"line {line if kernel.line is None else kernel.line + line - 1}"
                kind = "a whole number" if integer and isinstance(value, float) \
                    else "a number"
                fix = _unquoted(value)
                return (f"{key}={value!r} is {_type_name(value)}, but the kernel uses "
                        f"{key} as {kind}"
                        + (f" (write {key}={fix}, without quotes)" if fix else "")
                        + f" at {at}: {text}")
        return None

    kept: dict[str, object] = {}
    for key, value in params.items():
        said = wrong(key, value)
        if said is None:
            kept[key] = value
        else:
            read.fail("params", said, f"{key} is not passed")
    swept: dict[str, list[object]] = {}
    for key, values in sweep.items():
        good = []
        for value in values:
            said = wrong(key, value)
            if said is None:
                good.append(value)
            else:
                read.fail("sweep", said, f"{key}={value!r} is not swept")
        if good:
            swept[key] = good
    return kept, swept


def _expectations(read: _Options, key: str, entries: tuple[Expected, ...],
                  num_stages: tuple[int, ...], targets: tuple[Target, ...],
                  sweep: Mapping[str, list[object]], written: bool) -> tuple[Expected, ...]:
    """The entries of ``:expect-error:`` (or ``:expect-hazard:``) that name variants of
    this directive; each other one said at the option's line (and dropped)."""
    labels = [t.label for t in targets]
    values = {name: [repr(v) for v in found] for name, found in sweep.items()}
    kept = []
    for entry in entries:
        if entry.num_stages not in num_stages:
            among = f"the depth the kernel fixes ({num_stages[0]}, as written)" \
                if written else "in :num-stages:"
            read.fail(key, f"{entry.num_stages} is not {among}", "the entry is dropped")
        elif entry.target is not None and entry.target not in labels:
            read.fail(key, f"{entry} names no target of this directive "
                      f"({', '.join(labels)})", "the entry is dropped")
        elif any(name not in values for name, _ in entry.axes):
            name = next(name for name, _ in entry.axes if name not in values)
            swept = ", ".join(values) or "none"
            read.fail(key, f"{entry} names {name}, which is not swept (swept: {swept})",
                      "the entry is dropped")
        elif any(value not in values[name] for name, value in entry.axes):
            name, value = next((n, v) for n, v in entry.axes if v not in values[n])
            read.fail(key, f"{entry} names {name}={value}, which is not a value of "
                      f"{name} in :sweep: ({', '.join(values[name])})",
                      "the entry is dropped")
        else:
            kept.append(entry)
    return tuple(kept)


def parse_asserts(given: Mapping[str, str], line_of: Callable[[str], int],
                  read: _Options | None = None) -> tuple[tuple[int, str], ...]:
    """(document line, expression) of each ``:assert:`` line; an error at its own line
    (``read``: tolerant, said there, and the line dropped)."""
    if "assert" not in given:
        return ()
    first = line_of("assert")
    found = []
    for offset, line in enumerate(given["assert"].splitlines()):
        if line.strip():
            try:
                found.append((first + offset, options.parse_expression(line)))
            except OptionError as exc:
                if read is None or not read.tolerant:
                    raise OptionError(f":assert: {exc}", first + offset) from None
                read.fail("assert", str(exc), "the claim is not checked", first + offset)
    return tuple(found)
