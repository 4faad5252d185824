"""The compiler's pass pipeline, pass by pass: what each run changed in the IR.

:class:`PassLog` is fed by the lowering's pass instrument (in the worker) with each pass
run and, when the IR changed, its new text; it keeps per run the lines added and removed
and a digest of exactly which lines, plus full before/after diffs for the runs that
``:passes:`` asked for. Comparing variants is :mod:`.pass_compare`'s business (it runs in
Sphinx's process, and editing it must not invalidate cached lowerings).

A run is named ``name#run``: Simplify runs many times, and its third run is
``tir.Simplify#3``.
"""

from __future__ import annotations

import difflib
import hashlib
import re
from collections.abc import Callable, Sequence
from typing import Any

Record = dict[str, Any]
# The variant's own inputs are in the IR from the start: the loop's num_stages
# annotation, and the target's arch once BindTarget has written it. A pass that merely
# carries those lines along (re-indents them, say) changes every variant alike, and
# writing the target down is not where the variants behave differently; so the
# comparison between variants reads both values as placeholders.
_OWN_INPUTS = (
    (re.compile(r"""(num_stages["']?\s*[:=]\s*)\d+"""), r"\1N"),
    (re.compile(r'("arch":\s*")[^"]*(")'), r"\1ARCH\2"),
)


def run_id(name: str, run: int) -> str:
    return f"{name}#{run}"


def matches(selector: str, name: str, run: int) -> bool:
    """``InjectSoftwarePipeline``, ``tl.InjectSoftwarePipeline`` or ``Simplify#3``."""
    wanted, _, number = selector.partition("#")
    if number and int(number) != run:
        return False
    return wanted == name or wanted == name.rsplit(".", 1)[-1]


def recorded(records: Sequence[Record]) -> bool:
    """Whether a result's pass records say what each run changed (see ``PassLog``'s
    ``changes``), not just which runs ran."""
    return bool(records) and all("added" in record for record in records)


def counts(records: Sequence[Record]) -> dict[str, int]:
    """Lines of IR each run changed, by ``name#run``: what ``passes[...]`` reads."""
    return {run_id(r["name"], r["run"]): r["added"] + r["removed"] for r in records}


def _changed_lines(diff: list[str]) -> list[str]:
    return [line for line in diff[2:] if line[:1] in "+-"]


def _digest(text: str) -> str:
    for pattern, placeholder in _OWN_INPUTS:
        text = pattern.sub(placeholder, text)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


class PassLog:
    """What each pass run did to the IR of one variant.

    With ``changes`` off it keeps the names of the runs only (enough to number them and
    to say when a release renumbers them): the lines each run changed are only worth
    printing the IR for when a page reads them.
    """

    def __init__(self, wanted: Sequence[str] = (), changes: bool = True) -> None:
        self.wanted = tuple(wanted)
        self.changes = changes
        self.records: list[Record] = []
        self.diffs: dict[str, str] = {}
        self._text: str | None = None
        self._state = ""  # digest of the IR as it stands, num_stages read as N
        self._runs: dict[str, int] = {}

    def start(self, text: str) -> None:
        """The IR before the first pass."""
        self._text = text
        self._state = _digest(text)

    def after(self, name: str, changed: bool, text: Callable[[], str]) -> None:
        """One pass ran; ``text`` is called (printing IR costs) only if it ``changed``."""
        run = self._runs[name] = self._runs.get(name, 0) + 1
        if not self.changes:
            self.records.append({"name": name, "run": run,
                                 "position": len(self.records) + 1})
            return
        # "input" tells, between variants, where a difference starts: a run whose input
        # is the same everywhere but whose change is not is where the variants part ways.
        record: Record = {"name": name, "run": run, "position": len(self.records) + 1,
                          "added": 0, "removed": 0, "digest": "", "input": self._state}
        if changed and self._text is not None:
            new = text()
            diff = list(difflib.unified_diff(self._text.splitlines(), new.splitlines(),
                                             "before", "after", n=3, lineterm=""))
            lines = _changed_lines(diff)
            record["added"] = sum(1 for line in lines if line.startswith("+"))
            record["removed"] = len(lines) - record["added"]
            if lines:
                record["digest"] = _digest("\n".join(lines))
            # Every run of a chosen name: which run is "#3" is decided when the
            # variants' pipelines are lined up (see align), not here.
            if any(matches(s.split("#")[0], name, run) for s in self.wanted):
                before = f"IR before {run_id(name, run)}"
                self.diffs[run_id(name, run)] = "\n".join(
                    [f"--- {before}", f"+++ IR after {run_id(name, run)}", *diff[2:]])
            self._text = new
            self._state = _digest(new)
        elif changed:
            self._text = text()
            self._state = _digest(self._text)
        self.records.append(record)
