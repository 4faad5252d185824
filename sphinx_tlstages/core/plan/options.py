"""Parsing the directive's option values into plain Python values.

Each parser raises :class:`OptionError` with a message fit for the author; the directive
turns it into a warning at the option's line.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from ..errors import OptionError

DIFF_MODES = ("consecutive", "baseline", "none")

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_PARAM_START = re.compile(r"(?:^|\s)([A-Za-z_][A-Za-z0-9_]*)=")


@dataclass(frozen=True)
class DType:
    """A TileLang dtype written as TileLang's examples pass it, ``T.bfloat16``, or one of
    its enum constants, ``T.GemmWarpPolicy.FullRow`` (``name`` is then the dotted rest);
    its repr is that spelling, which is what keys and snapshots record."""

    name: str

    def __repr__(self) -> str:
        return f"T.{self.name}"


# The modules a dtype is spelled through, and the names that are dtypes.
_DTYPE_MODULES = ("T", "tl", "language", "tilelang.language")
_DTYPE_NAME = re.compile(r"(bool|(u?int|float|bfloat)\d+(_[A-Za-z0-9]+)*|float[468]_[A-Za-z0-9_]+)")
_ENUM_NAME = re.compile(r"[A-Z][A-Za-z0-9]*")  # GemmWarpPolicy, in T.GemmWarpPolicy.FullRow


def _dotted(node: ast.expr) -> str | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def _value(node: ast.expr, dtype: Callable[[str], object]) -> object:
    dotted = _dotted(node) if isinstance(node, ast.Attribute) else None
    if dotted is not None:
        module, _, name = dotted.rpartition(".")
        if module in _DTYPE_MODULES and _DTYPE_NAME.fullmatch(name):
            return dtype(name)
        root, _, enum = module.rpartition(".")
        if root in _DTYPE_MODULES and _ENUM_NAME.fullmatch(enum):
            return dtype(f"{enum}.{name}")
        raise ValueError(dotted)
    return ast.literal_eval(node)


def literal_value(text: str, dtype: Callable[[str], object] = DType) -> object:
    """One value as written in ``:params:`` or a key's record: a Python literal, or a
    TileLang dtype (``T.float16``) or enum constant (``T.GemmWarpPolicy.FullRow``), which
    becomes ``dtype(name)`` (``dtype("GemmWarpPolicy.FullRow")``)."""
    return _value(ast.parse(text.strip(), mode="eval").body, dtype)


def parse_num_stages(value: str | Iterable[int]) -> tuple[int, ...]:
    """``1 2 3 4`` or ``1, 2, 3`` -> distinct non-negative ints, in the order given."""
    words = value.replace(",", " ").split() if isinstance(value, str) else list(value)
    if not words:
        raise OptionError("empty: give at least one value, e.g. 1 2 3 4")
    result: list[int] = []
    for word in words:
        try:
            number = int(word)
        except (TypeError, ValueError):
            raise OptionError(f"{word!r} is not a whole number") from None
        if number < 0:
            raise OptionError(f"{number} is negative")
        if number in result:
            raise OptionError(f"{number} is listed twice")
        result.append(number)
    return tuple(result)


def first_key(text: str) -> int:
    """Where the first ``KEY=`` of ``text`` starts (its length where there is none)."""
    match = _PARAM_START.search(text)
    return match.start(1) if match else len(text)


def assignments(text: str, expected: str, repeats: bool = False
                ) -> Iterator[tuple[str, str]]:
    """``KEY=...`` groups of ``text`` as (key, the text up to the next key), in order; a
    key given twice is an error when it is reached (``repeats``: yielded again, for the
    caller to say), and so is text before the first key (``repeats``: skipped)."""
    starts = list(_PARAM_START.finditer(text))
    if not starts or (not repeats and text[: starts[0].start(1)].strip()):
        raise OptionError(f"expected {expected}, got {text!r}")
    seen: set[str] = set()
    for i, match in enumerate(starts):
        end = starts[i + 1].start() if i + 1 < len(starts) else len(text)
        key = match.group(1)
        if key in seen and not repeats:
            raise OptionError(f"{key} is given twice")
        seen.add(key)
        yield key, text[match.end(): end].strip()


def parse_params(value: str) -> dict[str, object]:
    """``M=1024 tile=(64, 64) dtype="float16"``: keyword arguments as Python literals."""
    text = value.strip()
    if not text:
        return {}
    params: dict[str, object] = {}
    for key, literal in assignments(text, "KEY=VALUE pairs"):
        if not literal:
            raise OptionError(f"{key} has no value")
        try:
            params[key] = literal_value(literal)
        except (ValueError, SyntaxError, TypeError):
            raise OptionError(
                f"the value of {key}, {literal!r}, is neither a Python literal nor a "
                "TileLang dtype or constant (quote strings: dtype=\"float16\"; or "
                "dtype=T.float16, policy=T.GemmWarpPolicy.FullRow)"
            ) from None
    return params


def parse_diff(value: str) -> str:
    mode = value.strip()
    if mode not in DIFF_MODES:
        raise OptionError(f"{mode!r} is not one of {', '.join(DIFF_MODES)}")
    return mode


def parse_name(value: str) -> str:
    name = value.strip()
    if not _NAME.match(name):
        raise OptionError(
            f"{name!r}: use letters, digits, '.', '_' and '-' (it names snapshot files)"
        )
    return name


@dataclass(frozen=True)
class Expected:
    """One value of ``:expect-error:`` or ``:expect-hazard:``: a num_stages value, on the
    target named (its label, ``sm_89``) or on every target (None), and, in a sweep, for
    the swept values named (``(("block_N", "128"),)``: each parameter and the repr of its
    value, as a variant's axes spell it) or for every combination (empty)."""

    num_stages: int
    target: str | None = None
    axes: tuple[tuple[str, str], ...] = ()

    def __str__(self) -> str:
        said = [self.target] if self.target else []
        said += [f"{name}={value}" for name, value in self.axes]
        return ":".join([*said, str(self.num_stages)])

    def matches(self, num_stages: int, target: str,
                axes: tuple[tuple[str, str], ...]) -> bool:
        """Whether it names the variant of ``num_stages`` on ``target`` (its label) with
        these ``axes`` (the variant's own)."""
        return self.num_stages == num_stages and self.target in (None, target) \
            and set(self.axes) <= set(axes)


# One entry: qualifiers (a target, or a swept ``param=value``), each followed by ``:``,
# then a num_stages value. A value holds no space, comma or colon.
_QUALIFIER = r"[A-Za-z_][A-Za-z0-9_.-]*(?:=[^\s,:]+)?"
_EXPECTED = re.compile(rf"(?P<qualifiers>(?:{_QUALIFIER}:)*)(?P<stages>-?\d+)"
                       r"(?=[\s,:]|$)[\s,]*")
EXPECT_SYNTAX = ("num_stages values (5 6), each optionally for one target (sm_89:4) and "
                 "for swept values (block_N=128:2, sm_90a:block_N=128:2)")


def _entry(match: re.Match[str]) -> Expected:
    """One entry of ``:expect-error:``, as matched."""
    stages = int(match["stages"])
    if stages < 0:
        raise OptionError(f"{stages} is negative")
    target: str | None = None
    axes: list[tuple[str, str]] = []
    for qualifier in match["qualifiers"].split(":")[:-1]:
        name, equals, value = qualifier.partition("=")
        if not equals:
            if target is not None:
                raise OptionError(f"{match.group(0).strip()!r} names two targets")
            target = name
            continue
        try:
            written = repr(literal_value(value))
        except (ValueError, SyntaxError, TypeError):
            raise OptionError(f"the value of {name} in {match.group(0).strip()!r}, "
                              f"{value!r}, is not written as in :sweep:") from None
        if any(known == name for known, _ in axes):
            raise OptionError(f"{match.group(0).strip()!r} names {name} twice")
        axes.append((name, written))
    return Expected(stages, target, tuple(axes))


def expected_entries(value: str) -> tuple[list[Expected], list[str], str]:
    """The entries of ``:expect-error:`` that can be read, what is wrong with the others
    (each said once), and the rest of the value (``: regex`` or empty)."""
    rest = value.strip()
    found: list[Expected] = []
    wrong: list[str] = []
    while rest and not rest.startswith(":"):
        match = _EXPECTED.match(rest)
        if match is None:
            word = rest.split()[0]
            wrong.append(f"cannot read {word!r}: expected {EXPECT_SYNTAX}")
            rest = rest[len(word):].lstrip(" \t,")
            continue
        rest = rest[match.end():]
        try:
            entry = _entry(match)
        except OptionError as exc:
            wrong.append(str(exc))
            continue
        if entry in found:
            wrong.append(f"{entry} is listed twice")
            continue
        found.append(entry)
    return found, wrong, rest


def expect_pattern(rest: str) -> str | None:
    """The regex after the entries (``: shared memory``), checked; None where none."""
    pattern = rest[1:].strip()
    if pattern:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise OptionError(f"{pattern!r} is not a regular expression: {exc}") from None
    return pattern or None


def parse_expect_error(value: str) -> tuple[tuple[Expected, ...], str | None]:
    """``5 6``, ``sm_89:4``, ``block_N=128:2`` or ``5 6: shared memory``: the variants
    that must fail (a num_stages value, on every target or on the one named, for every
    swept combination or for the values named), and a regex their messages must match."""
    found, wrong, rest = expected_entries(value)
    if wrong:
        raise OptionError(wrong[0])
    if not found:
        raise OptionError("empty: give the num_stages values that must fail, e.g. 5 6")
    return tuple(found), expect_pattern(rest)


def parse_timeline(value: str) -> tuple[Expected, ...]:
    """``1 3`` or ``sm_90a:3``: the variants whose measured timeline ``tlstages
    timeline`` records (a num_stages value, on every target or on the one named); empty:
    every variant (the caller knows them)."""
    if not value.strip():
        return ()
    found, pattern = parse_expect_error(value)
    if pattern is not None:
        raise OptionError(f"unexpected {pattern!r}: give num_stages values (1 3), "
                          "optionally for one target (sm_90a:3)")
    return found


def parse_expression(value: str) -> str:
    """A Python expression (``A @ B.T``, ``2*M*N*K``), checked for syntax only."""
    text = value.strip()
    try:
        ast.parse(text, mode="eval")
    except SyntaxError as exc:
        raise OptionError(f"{text!r} is not a Python expression: {exc.msg}") from None
    return text


def _number(value: str, what: str, upper: float = float("inf")) -> float:
    """A number above zero and below ``upper``."""
    try:
        number = float(value)
    except ValueError:
        raise OptionError(f"{value!r} is not a number") from None
    if not 0 < number < upper:
        raise OptionError(f"the {what} must be above 0" + (f" and below {upper:g}"
                                                            if upper != float("inf") else ""))
    return number


def parse_tolerance(value: str) -> float:
    """The largest relative error allowed against a reference."""
    return _number(value, "tolerance (a relative error)", upper=1)


def parse_timeout(value: str) -> float:
    """Seconds a variant may take to lower."""
    return _number(value, "timeout (in seconds)")


def parse_sweep(value: str) -> dict[str, list[object]]:
    """``block_K=32,64 threads=128,256``: each factory parameter and its values."""
    sweep: dict[str, list[object]] = {}
    for key, literal in assignments(value.strip(), "KEY=VALUE,VALUE,... groups"):
        if key == "num_stages":
            raise OptionError("num_stages is swept by :num-stages:")
        try:
            tree = ast.parse(f"[{literal}]", mode="eval").body
            assert isinstance(tree, ast.List)
            values = [_value(node, DType) for node in tree.elts]
        except (ValueError, SyntaxError, TypeError, AssertionError):
            raise OptionError(f"the values of {key}, {literal!r}, are not Python literals "
                              "or TileLang dtypes or constants separated by commas") from None
        if not values:
            raise OptionError(f"{key} has no value")
        if len({repr(v) for v in values}) != len(values):
            raise OptionError(f"{key} lists a value twice")
        sweep[key] = values
    return sweep


def parse_passes(value: str) -> tuple[str, ...]:
    """``PipelinePlanning tl.InjectSoftwarePipeline Simplify#3``: pass runs whose IR
    before and after is shown; a bare name means every run of that pass."""
    words = value.replace(",", " ").split()
    if not words:
        raise OptionError("empty: name at least one pass, e.g. InjectSoftwarePipeline")
    for word in words:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.]*(#[1-9][0-9]*)?", word):
            raise OptionError(f"{word!r} is not a pass name (NAME or NAME#RUN, e.g. "
                              "Simplify#3)")
    return tuple(dict.fromkeys(words))


# The blocks a launch on the GPU keeps when ``:hardware:`` names none: the first and the
# last (an edge tile, where the grid does not divide the sizes); -1 stands for the last.
FIRST_AND_LAST = (0, -1)
DEFAULT_LAUNCHES = 2


@dataclass(frozen=True)
class Hardware:
    """``:hardware:``: check each variant on a GPU under compute-sanitizer. ``sizes``:
    values of sizes known only at launch (``seqlen=129``); ``blocks``: the linear indices
    of the blocks launched (-1: the last), the others returning at once; ``launches``:
    how many times each variant is launched under each tool."""

    sizes: tuple[tuple[str, int], ...] = ()
    blocks: tuple[int, ...] = FIRST_AND_LAST
    launches: int = DEFAULT_LAUNCHES

    @property
    def blocks_words(self) -> str:
        """``the first and the last block``, ``blocks 0, 5``."""
        if self.blocks == FIRST_AND_LAST:
            return "the first and the last block"
        said = ", ".join("the last" if b == -1 else str(b) for b in self.blocks)
        return f"block{'s' if len(self.blocks) > 1 else ''} {said}"


def _whole(key: str, literal: str, low: int) -> int:
    try:
        number = int(literal)
    except ValueError:
        raise OptionError(f"{key}={literal!r} is not a whole number") from None
    if number < low:
        raise OptionError(f"{key} must be at least {low}")
    return number


def parse_hardware(value: str) -> Hardware:
    """Empty, or ``seqlen=129 blocks=0,-1 launches=2``: see :class:`Hardware`."""
    text = value.strip()
    if not text:
        return Hardware()
    sizes: list[tuple[str, int]] = []
    blocks: tuple[int, ...] = FIRST_AND_LAST
    launches = DEFAULT_LAUNCHES
    for key, literal in assignments(text, "NAME=VALUE pairs (seqlen=129 blocks=0,-1)"):
        if key == "blocks":
            words = literal.replace(",", " ").split()
            if not words:
                raise OptionError("blocks has no value")
            found = tuple(_whole("blocks", w, -1) for w in words)
            if len(set(found)) != len(found):
                raise OptionError("blocks lists a block twice")
            blocks = found
        elif key == "launches":
            launches = _whole("launches", literal, 1)
        else:
            sizes.append((key, _whole(key, literal, 1)))
    return Hardware(tuple(sizes), blocks, launches)
