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


def _assignments(text: str, expected: str) -> Iterator[tuple[str, str]]:
    """``KEY=...`` groups of ``text`` as (key, the text up to the next key), in order; a
    key given twice is an error when it is reached."""
    starts = list(_PARAM_START.finditer(text))
    if not starts or text[: starts[0].start(1)].strip():
        raise OptionError(f"expected {expected}, got {text!r}")
    seen: set[str] = set()
    for i, match in enumerate(starts):
        end = starts[i + 1].start() if i + 1 < len(starts) else len(text)
        key = match.group(1)
        if key in seen:
            raise OptionError(f"{key} is given twice")
        seen.add(key)
        yield key, text[match.end(): end].strip()


def parse_params(value: str) -> dict[str, object]:
    """``M=1024 tile=(64, 64) dtype="float16"``: keyword arguments as Python literals."""
    text = value.strip()
    if not text:
        return {}
    params: dict[str, object] = {}
    for key, literal in _assignments(text, "KEY=VALUE pairs"):
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
    """One value of ``:expect-error:``: a num_stages value that must fail, on the target
    named (its label, ``sm_89``) or on every target (None)."""

    num_stages: int
    target: str | None = None

    def __str__(self) -> str:
        return f"{self.target}:{self.num_stages}" if self.target else str(self.num_stages)


_EXPECTED = re.compile(r"(?:(?P<target>[A-Za-z][A-Za-z0-9_.-]*):)?(?P<stages>-?\d+)"
                       r"(?=[\s,:]|$)[\s,]*")


def parse_expect_error(value: str) -> tuple[tuple[Expected, ...], str | None]:
    """``5 6``, ``sm_89:4`` or ``5 6: shared memory``: the variants that must fail (a
    num_stages value, on every target or on the one named), and a regex their messages
    must match."""
    rest = value.strip()
    found: list[Expected] = []
    while rest and not rest.startswith(":"):
        match = _EXPECTED.match(rest)
        if match is None:
            word = rest.split()[0]
            raise OptionError(f"cannot read {word!r}: expected num_stages values (5 6), "
                              "optionally for one target (sm_89:4)")
        stages = int(match["stages"])
        if stages < 0:
            raise OptionError(f"{stages} is negative")
        entry = Expected(stages, match["target"])
        if entry in found:
            raise OptionError(f"{entry} is listed twice")
        found.append(entry)
        rest = rest[match.end():]
    if not found:
        raise OptionError("empty: give the num_stages values that must fail, e.g. 5 6")
    pattern = rest[1:].strip()
    if pattern:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise OptionError(f"{pattern!r} is not a regular expression: {exc}") from None
    return tuple(found), pattern or None


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
    for key, literal in _assignments(value.strip(), "KEY=VALUE,VALUE,... groups"):
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
