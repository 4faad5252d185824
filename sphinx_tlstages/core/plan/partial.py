"""The good part of an option value in error: a typo costs nothing that was right.

Where an option's value cannot be read whole (:mod:`.options` raises on the first bad
piece), the directive still renders what the rest allows: each function here reads the
value piece by piece and returns the pieces that can be used (None: nothing usable, so
the option's default) and what is wrong with each other piece. The planner says each at
the option's line, with what it kept.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from ..errors import OptionError
from ..parts import WORDS, parse_show
from . import options
from .targets import Target, parse_target, split_targets

_T = TypeVar("_T")

Partial = tuple[Any, list[str]]


def _each(pieces: list[str], parse: Callable[[str], _T]) -> tuple[list[_T], list[str]]:
    """Every piece parsed alone: the values read, and the messages of those that were
    not."""
    kept: list[_T] = []
    wrong: list[str] = []
    for piece in pieces:
        try:
            kept.append(parse(piece))
        except OptionError as exc:
            wrong.append(str(exc))
    return kept, wrong


def num_stages(value: str) -> Partial:
    kept: list[int] = []
    wrong: list[str] = []
    for word in value.replace(",", " ").split():
        try:
            [number] = options.parse_num_stages(word)
        except OptionError as exc:
            wrong.append(str(exc))
            continue
        if number in kept:
            wrong.append(f"{number} is listed twice")
        else:
            kept.append(number)
    return (tuple(kept) or None), wrong


def targets(value: str) -> Partial:
    kept: list[Target] = []
    wrong: list[str] = []
    for piece in split_targets(value, loose=True):
        try:
            target = parse_target(piece)
        except OptionError as exc:
            wrong.append(str(exc))
            continue
        if target in kept:
            wrong.append(f"target {piece!r} is listed twice")
        else:
            kept.append(target)
    return (tuple(kept) or None), wrong


def params(value: str) -> Partial:
    found, wrong = _groups(value, options.parse_params)
    merged: dict[str, object] = {}
    for group in found:
        merged.update(group)
    return merged, wrong


def sweep(value: str) -> Partial:
    found, wrong = _groups(value, options.parse_sweep)
    merged: dict[str, list[object]] = {}
    for group in found:
        merged.update(group)
    return merged, wrong


def _groups(value: str, parse: Callable[[str], dict[str, _T]]
            ) -> tuple[list[dict[str, _T]], list[str]]:
    """``KEY=...`` groups parsed one at a time; a key given twice keeps its first."""
    text = value.strip()
    try:
        groups = list(options.assignments(text, "KEY=VALUE groups", repeats=True))
    except OptionError as exc:
        return [], [str(exc)]
    wrong: list[str] = []
    head = text[: options.first_key(text)].strip()
    if head:
        wrong.append(f"cannot read {head!r} before the first KEY=VALUE")
    seen: set[str] = set()
    kept: list[dict[str, _T]] = []
    for key, literal in groups:
        if key in seen:
            wrong.append(f"{key} is given twice")
            continue
        seen.add(key)
        try:
            kept.append(parse(f"{key}={literal}"))
        except OptionError as exc:
            wrong.append(str(exc))
    return kept, wrong


def show(value: str) -> Partial:
    words = value.replace(",", " ").split()
    known = [word for word in words if word in WORDS]
    wrong = [] if len(known) == len(words) else [_show_error(words)]
    return (parse_show(known) if known else None), wrong


def _show_error(words: list[str]) -> str:
    try:
        parse_show(words)
    except OptionError as exc:
        return str(exc)
    return ""


def passes(value: str) -> Partial:
    kept, wrong = _each(value.replace(",", " ").split(), options.parse_passes)
    said = tuple(dict.fromkeys(word for found in kept for word in found))
    return (said or None), wrong


def expected(value: str) -> Partial:
    found, wrong, rest = options.expected_entries(value)
    try:
        pattern = options.expect_pattern(rest)
    except OptionError as exc:
        wrong.append(f"{exc} (the values are kept, without it)")
        pattern = None
    return ((tuple(found), pattern) if found else None), wrong


# Option -> how its good part is read; an option not here is ignored whole.
PARTS: dict[str, Callable[[str], Partial]] = {
    "num-stages": num_stages, "target": targets, "params": params, "sweep": sweep,
    "show": show, "passes": passes, "expect-error": expected, "expect-hazard": expected,
}
