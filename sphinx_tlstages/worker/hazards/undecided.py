"""What a walk of the hazard trace cannot decide alone.

:class:`Undecided` ends a walk with its reason: the check says "not checked" and why,
never "hazard" (so does a walk past :data:`MAX_STEPS`). Its subclasses name a choice
the driver (:func:`.verdict.check`) makes instead, one walk per value: a trip count that
is a range (:class:`Ranged`), a block index a loop starts at (:class:`Blocked`), a
condition every thread decides alike (:class:`Forked`); :class:`Masked` asks the
brute-force reference for a mask's element.
"""

from __future__ import annotations

from collections.abc import Hashable

# Loops unrolled in all, over the whole kernel: past this the check says "not checked".
MAX_STEPS = 4096
# The upper bound of a range a symbolic size leaves open: a loop variable or a block index
# whose extent depends on one (:mod:`.sizes` fixes the size for the synchronised loops only).
OPEN = 1 << 30


class Undecided(Exception):
    """The walk cannot say what the code does; the message says why."""


class Ranged(Undecided):
    """A synchronised loop whose trip count is a range (it depends on the block index,
    as a causal mask's does): the walk is made once per trip count (:attr:`.Trace.trips`,
    keyed by the extent's structural hash). A loop a block mask guards
    (:func:`.masks.masked_loop`) is one too: its count is that of the iterations the mask
    runs (:attr:`masked` names the mask; keyed by the mask's form and row)."""

    # Whether the choices past the bound of the periodic argument (:mod:`.sizes`) repeat
    # those below it (a trip count's do; a block index's need not).
    periodic = True

    def __init__(self, key: Hashable, lo: int, hi: int, name: str, masked: str = "") -> None:
        super().__init__(f"{name} has a trip count from {lo} to {hi}")
        self.key, self.lo, self.hi, self.name = key, lo, hi, name
        # The mask whose true iterations the count is (``""``: none): a loop whose
        # synchronisations a condition read from memory runs or skips
        # (:func:`.masks.masked_loop`).
        self.masked = masked

    def said(self, value: int) -> str:
        """The walk's choice, in words."""
        if self.masked:
            return (f"{self.name} running {value} of its iterations (the others skipped "
                    f"by the mask {self.masked})")
        return f"{self.name} running {value} times"

    def covered(self, lo: int, hi: int) -> str:
        """The choices walked, in words."""
        if self.masked:
            return (f"every pattern of the mask {self.masked} over {self.name} ({lo} to {hi} "
                    "of its iterations running, each skipped one doing nothing)")
        return f"{self.name} running {lo} to {hi} times"


class Masked(Undecided):
    """A mask's element the walk of fixed mask values (:attr:`.Trace.masks`) has no value
    for: the brute-force reference walks again with each."""

    def __init__(self, key: str) -> None:
        super().__init__(f"the mask {key} has no value")
        self.key = key


class Blocked(Ranged):
    """A synchronised loop whose first iteration depends on the block index (a sliding
    window's first key block, ``max(0, bx - w)``), in a grid of known extent: the walk is
    made once per value of that index (:attr:`.Trace.trips`, keyed by its thread tag), each
    the exact walk of those blocks."""

    periodic = False

    def __init__(self, key: Hashable, hi: int, name: str, loop: str) -> None:
        Undecided.__init__(self, f"{loop} starts at a value set by {name}")
        self.key, self.lo, self.hi, self.name, self.masked = key, 0, hi, name, ""

    def said(self, value: int) -> str:
        return f"{self.name} = {value}"

    def covered(self, lo: int, hi: int) -> str:
        return f"{self.name} from {lo} to {hi}"


class Forked(Ranged):
    """A synchronisation under a condition the walk cannot decide but that every thread
    of the block decides alike (it reads memory at an index that does not depend on the
    thread: ``if tile < s_cum[groups]``, a block past the data's tiles skipping its
    work), met once in a walk: the walk is made once with the condition false and once
    with it true (:attr:`.Trace.trips`, keyed by the statement). One read from memory in
    each iteration of the synchronised loop it guards (a block mask) is a mask instead
    (:func:`.masks.masked_loop`: every pattern)."""

    periodic = False

    def __init__(self, key: Hashable, name: str) -> None:
        Undecided.__init__(self, f"a synchronisation under the condition {name}")
        self.key, self.lo, self.hi, self.name, self.masked = key, 0, 1, name, ""

    def said(self, value: int) -> str:
        return f"the condition {self.name} {'true' if value else 'false'}"

    def covered(self, lo: int, hi: int) -> str:
        return f"the condition {self.name} true and false"
