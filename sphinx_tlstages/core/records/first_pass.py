"""The first pass whose output changed: a drift explained in the compiler's terms.

Each snapshot variant keeps the fingerprint of the IR after every pass run
(:mod:`..results.fingerprints`). Lining the recorded pipeline up with the new one (by
pass name, as :mod:`..results.pass_compare` lines up variants: a release that adds a
``Simplify`` run early renumbers every later one) and walking it in order, the first
aligned run whose fingerprint differs is where the page's change was made; the run
before it still produced the recorded IR. A run only one side has is the culprit when
it changed the IR there. Passes added, removed or renamed between the two pipelines are
said as well: after an upgrade that is often the answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..results.fingerprints import INPUT, parse
from ..results.pass_compare import pairs

Run = tuple[str, int, str]  # (pass name, run, fingerprint)


@dataclass(frozen=True)
class FirstChange:
    """Where two pipelines' IR first differ.

    ``changed``: the first run whose output differs (``tl.LowerTileOp#1``; ``(input)``
    when the traced IR already differs: the kernel or its parameters changed, or
    TileLang's front end); ``matched``: the run before it, whose output still matched
    (None when ``changed`` is the input); ``side``: ``both``, or ``new``/``recorded`` when
    only one pipeline runs ``changed``; ``added``/``removed``: pass names only the new or
    only the recorded pipeline runs."""

    changed: str | None
    matched: str | None
    side: str = "both"
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()

    def words(self) -> str:
        """The sentence a build, a report and ``tlstages report`` say."""
        if self.changed is None:
            said = "every pass's output still matches the recorded one"
        elif self.changed.startswith(INPUT):
            said = ("the IR differs before the first pass (the kernel as traced: its "
                    "source, parameters or TileLang's front end)")
        else:
            said = f"first changed by {self.changed}"
            if self.side == "new":
                said += " (a pass the recorded pipeline did not run)"
            elif self.side == "recorded":
                said += " (a pass the recorded pipeline ran and this one does not)"
            if self.matched:
                said += f", after {self.matched}, which still matched"
        if self.added or self.removed:
            listed = [f"added {', '.join(self.added)}" if self.added else "",
                      f"removed {', '.join(self.removed)}" if self.removed else ""]
            said += f"; the pass list changed: {'; '.join(x for x in listed if x)}"
        return said


def _id(run: Run) -> str:
    return f"{run[0]}#{run[1]}" if run[0] != INPUT else INPUT


def _names(runs: Sequence[Run]) -> list[str]:
    return list(dict.fromkeys(name for name, _, _ in runs if name != INPUT))


def first_change(recorded: object, new: object) -> FirstChange | None:
    """Where the IR of ``new``'s pipeline first differs from ``recorded``'s (both as a
    variant keeps them); None when either side has no fingerprints."""
    old_runs, new_runs = parse(recorded), parse(new)
    if old_runs is None or new_runs is None:
        return None
    old_names, new_names = set(_names(old_runs)), set(_names(new_runs))
    added = tuple(n for n in _names(new_runs) if n not in old_names)
    removed = tuple(n for n in _names(old_runs) if n not in new_names)
    matched = dict(pairs([{"name": n, "run": r} for n, r, _ in old_runs],
                         [{"name": n, "run": r} for n, r, _ in new_runs]))
    # Walk the runs that line up, in order. Between two of them each side may run passes
    # the other does not (a block): where both blocks leave the same IR (a renamed pass
    # doing the same work) the walk goes on; where not, the first run of the blocks that
    # moved the IR away from where both stood is the culprit.
    state = ""  # the fingerprint both sides stand at
    last: str | None = None  # the last run whose output matched
    after_new, after_old = 0, 0  # where the blocks since the last lined-up run start
    anchors = [*sorted(matched.items()), (len(new_runs), len(old_runs))]
    for k, j in anchors:
        blocks = ((new_runs[after_new:k], "new"), (old_runs[after_old:j], "recorded"))
        ends = [block[-1][2] if block else state for block, _ in blocks]
        if ends[0] != ends[1]:
            for block, side in blocks:
                moved = next((run for run in block if run[2] != state), None)
                if moved is not None:
                    return FirstChange(_id(moved), last, side, added, removed)
        state = ends[0]
        if k == len(new_runs):
            break
        if new_runs[k][2] != old_runs[j][2]:
            return FirstChange(_id(new_runs[k]), last, "both", added, removed)
        state, last = new_runs[k][2], _id(new_runs[k])
        after_new, after_old = k + 1, j + 1
    return FirstChange(None, last, "both", added, removed)
