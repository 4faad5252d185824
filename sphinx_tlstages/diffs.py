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


def pairs(labels: Sequence[str], mode: str) -> list[tuple[str, str]]:
    """Which variants to compare: consecutive, each against the first, or none."""
    if mode == "none" or len(labels) < 2:
        return []
    if mode == "baseline":
        return [(labels[0], label) for label in labels[1:]]
    return list(itertools.pairwise(labels))


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
