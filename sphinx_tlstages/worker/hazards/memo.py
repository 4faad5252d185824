"""What the hazard trace reads of a function's IR structure, read once.

An unrolled loop asks the same questions of the same inner statements once per
iteration, and the walks of one function at several sizes, trip counts or mask patterns
(:mod:`.verdict`) ask them again: the answers are kept here by a node's address, which is
stable while the IR lives (the check holds it). Nothing here depends on the values a walk
gives its variables.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .masks import Masks

# An access's flat element index, element bytes, lanes, data's name and data variable.
Flat = tuple[Any, int, int, str, Any]


@dataclass
class Memo:
    """One function's structure as the walks read it (see the module's docstring)."""

    masks: Masks  # the conditions read from memory, read once for every walk
    synced: dict[int, bool] = field(default_factory=dict)  # holds a synchronisation
    calls: dict[int, tuple[str, list[Any]]] = field(default_factory=dict)  # name, args
    seqs: dict[int, list[Any]] = field(default_factory=dict)  # a sequence's items
    # A store's value, indices, whether into shared memory, and the scalar it sets.
    stores: dict[int, tuple[Any, list[Any], bool, tuple[Any, str] | None]] = field(
        default_factory=dict)
    # The roles of a branch on the thread index, by the statement and its live cases.
    roles: dict[tuple[int, tuple[bool, ...]], list[str]] = field(default_factory=dict)
    barriers: dict[int, tuple[str, Any]] = field(default_factory=dict)  # array, index
    # ``&buffer[i]`` -> (buffer, indices); a byte offset's (pointer, offset, None).
    pointers: dict[int, tuple[Any, ...] | None] = field(default_factory=dict)
    # An expression's shared loads, pointers passed on, TileLang templates followed, and
    # pointers handed to extern functions.
    loads: dict[int, tuple[list[Any], list[str], list[Any], list[tuple[str, Any]]]] = field(
        default_factory=dict)
    stored: dict[int, list[Any]] = field(default_factory=dict)  # scalars a statement sets
    flats: dict[Any, Flat] = field(default_factory=dict)  # by buffer's and indices' addresses
    # The form of the mask a loop's synchronisation sits under (None: none), by the loop.
    masked_loops: dict[int, str | None] = field(default_factory=dict)
    # The variables a mask's form reads besides its loop's (by the form).
    mask_vars: dict[str, list[Any]] = field(default_factory=dict)
    # A masked loop's iteration walked from one state: what it recorded and changed.
    iterations: dict[Any, Any] = field(default_factory=dict)
    uses: dict[int, set[Any]] = field(default_factory=dict)  # what a loop body reads
    # The calls accesses come from, numbered as the code prints them (:mod:`.verdict`).
    printed: tuple[dict[int, tuple[str, int]], dict[str, int]] | None = None

    @classmethod
    def of(cls, func: Any, synced: dict[int, bool] | None = None) -> Memo:
        """A fresh memo of ``func`` (``synced``: a memo of :func:`.calls.has_call` for
        :data:`.calls.SYNC_OPS` the caller already has)."""
        return cls(Masks(func), {} if synced is None else synced)
