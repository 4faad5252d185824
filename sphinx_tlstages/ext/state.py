"""What one build knows after lowering: results by variant key, the checks' outcome.

The batch (:mod:`.batch`) makes it on ``env-updated``; the checks, the placeholders and
the exit status read it through :func:`build_state`. Parallel writers are forks of the
main process, so they see the state it made before writing began.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..core.bench_data import Attached, BenchSet
from ..core.result import Result, failure

if TYPE_CHECKING:
    from sphinx.application import Sphinx

    from ..core.spec import VariantSpec
    from .cache import Cache
    from .remote import Remote


@dataclass
class Outcome:
    """What the checks found; any failure makes the build exit non-zero."""

    failures: int = 0
    recorded: int = 0
    updated: int = 0


@dataclass
class BuildState:
    """Results by variant key, and how to key a variant."""

    stamp: str
    version: str | None
    cache: Cache
    results: dict[str, Result] = field(default_factory=dict)
    outcome: Outcome = field(default_factory=Outcome)
    bench: BenchSet = field(default_factory=BenchSet)
    lowered: set[str] = field(default_factory=set)  # keys lowered (not cached) this build
    attached: dict[str, list[Attached]] = field(default_factory=dict)  # by directive name
    variants: int = 0  # distinct variants the project needs
    seconds: float = 0.0  # what lowering them (or reading them back) took
    remote: Remote | None = None  # the shared level, kept for the pages' fragments

    def result(self, variant: VariantSpec) -> Result:
        found = self.results.get(variant.key(self.stamp))
        return found or failure("unavailable", "this variant was not lowered", None)


_STATES: weakref.WeakKeyDictionary[Sphinx, BuildState] = weakref.WeakKeyDictionary()


def build_state(app: Sphinx) -> BuildState | None:
    """This build's state, or None before (or without) lowering."""
    return _STATES.get(app)


def start_build(app: Sphinx, state: BuildState) -> None:
    """Make ``state`` this build's state."""
    _STATES[app] = state
