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
    # Walk both pipelines in order: the new one's runs, with the recorded runs it lacks
    # put where they ran (just before the next run that lines up).
    last_old = last_new = ""  # the fingerprint each side's walk stands at
    last: str | None = None  # the last run whose output matched
    j = 0  # next recorded run not yet walked
    for k, run in enumerate(new_runs):
        partner = matched.get(k)
        if partner is not None:
            for skipped in old_runs[j:partner]:  # runs only the recorded pipeline had
                if skipped[2] != last_old:
                    return FirstChange(_id(skipped), last, "recorded", added, removed)
                last_old = skipped[2]
            j = partner + 1
            if old_runs[partner][2] != run[2]:
                return FirstChange(_id(run), last, "both", added, removed)
            last_old = last_new = run[2]
            last = _id(run)
        else:
            if run[2] != last_new:
                return FirstChange(_id(run), last, "new", added, removed)
            last_new = run[2]
    for skipped in old_runs[j:]:
        if skipped[2] != last_old:
            return FirstChange(_id(skipped), last, "recorded", added, removed)
        last_old = skipped[2]
    return FirstChange(None, last, "both", added, removed)
