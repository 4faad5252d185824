"""Unified diffs between variants' CUDA, with the ``+a -b`` summaries shown collapsed."""

from __future__ import annotations

import difflib
import itertools
from collections.abc import Sequence
from dataclasses import dataclass

from .cuda import without_line_directives


@dataclass(frozen=True)
class Diff:
    """One diff: which variants, the text (maybe capped), and its full counts."""

    old: str
    new: str
    text: str
    added: int
    removed: int
    hidden_lines: int

    @property
    def counts(self) -> str:
        """``+a -b lines``: what a reader sees while the diff is collapsed."""
        return f"+{self.added} -{self.removed} lines"


Axes = tuple[tuple[str, str], ...]


def pairs(variants: Sequence[tuple[str, Axes]], mode: str) -> list[tuple[str, str, str]]:
    """Which variants to compare, as (old label, new label, title).

    Variants are compared along one axis, the innermost that varies (num_stages, unless
    it has a single value), within each group that agrees on every other axis:
    consecutive neighbours, or each against the group's first (``baseline``).
    """
    if mode == "none" or len(variants) < 2:
        return []
    names = [name for name, _ in variants[0][1]]
    varying = [name for name in names if len({dict(axes).get(name) for _, axes in variants}) > 1]
    if not varying:
        return []
    axis = varying[-1]
    groups: dict[Axes, list[tuple[str, str]]] = {}
    for label, axes in variants:
        rest = tuple((name, value) for name, value in axes if name != axis)
        groups.setdefault(rest, []).append((label, dict(axes)[axis]))
    found = []
    for rest, members in groups.items():
        where = ", ".join(value if name == "target" else f"{name}={value}"
                          for name, value in rest if name in varying)
        chosen = [(members[0], m) for m in members[1:]] if mode == "baseline" \
            else list(itertools.pairwise(members))
        for (old, a), (new, b) in chosen:
            title = f"{axis} {a} → {b}"
            found.append((old, new, f"{where}: {title}" if where else title))
    return found


def diff(old_label: str, old: str, new_label: str, new: str, max_lines: int) -> Diff:
    """The unified diff of two CUDA texts, ``#line`` directives left out."""
    lines = list(difflib.unified_diff(
        without_line_directives(old).splitlines(), without_line_directives(new).splitlines(),
        fromfile=f"{old_label}.cu", tofile=f"{new_label}.cu", n=3, lineterm="",
    ))
    added = sum(1 for line in lines[2:] if line.startswith("+"))
    removed = sum(1 for line in lines[2:] if line.startswith("-"))
    shown = lines[:max_lines]
    return Diff(old_label, new_label, "\n".join(shown), added, removed,
                len(lines) - len(shown))
