"""Everything one build holds in this process, behind one accessor, :func:`session`.

A :class:`Session` is made on ``config-inited`` and keyed by the build's ``Config``,
which the app, the environment and every directive share (and ``-j``'s forked readers and
writers inherit): the validated settings (:mod:`.config`), the fork server started ahead
and whether a directive may still start it (:mod:`.lowering.prestart`), and after lowering the
:class:`BuildState` (results by variant key, the checks' outcome) that the batch
(:mod:`.lowering.batch`) makes on ``env-updated`` and the checks, the placeholders and the exit
status read. Parallel writers are forks of the main process, so they see the state it
made before writing began. (What must outlive the process, the directives read and the
keys they asked for, is kept on the environment by :mod:`.collector`.)
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sphinx.config import Config

from ..core.records import hardware_data
from ..core.records.bench_data import Attached, BenchSet
from ..core.results.result import Result, failure
from . import priorities
from .config import Settings, read_settings
from .findings import Findings

if TYPE_CHECKING:
    from sphinx.application import Sphinx

    from ..core.plan.spec import VariantSpec
    from ..runner.forkserver import ForkServer
    from .cache.local import Cache
    from .cache.remote import Remote


@dataclass
class BuildState:
    """Results by variant key, and how to key a variant."""

    stamp: str
    version: str | None
    cache: Cache
    results: dict[str, Result] = field(default_factory=dict)
    findings: Findings = field(default_factory=Findings)  # the log, report, exit status
    bench: BenchSet = field(default_factory=BenchSet)
    timelines: BenchSet = field(default_factory=BenchSet)  # the recorded timelines' files
    lowered: set[str] = field(default_factory=set)  # keys lowered (not cached) this build
    attached: dict[str, list[Attached]] = field(default_factory=dict)  # by directive name
    hardware: BenchSet = field(default_factory=BenchSet)  # the hardware records
    hardware_attached: dict[str, list[hardware_data.Attached]] = field(default_factory=dict)
    attached_timelines: dict[str, list[Attached]] = field(default_factory=dict)  # likewise
    variants: int = 0  # distinct variants the project needs
    seconds: float = 0.0  # what lowering them (or reading them back) took
    remote: Remote | None = None  # the shared level, kept for the pages' fragments
    # (docname, serial) -> the error of a directive whose :name: another one has too.
    duplicates: dict[tuple[str, int], str] = field(default_factory=dict)

    def result(self, variant: VariantSpec) -> Result:
        found = self.results.get(variant.key(self.stamp))
        return found or failure("unavailable", "this variant was not lowered", None)


@dataclass
class Session:
    """One build's state in this process (see the module's docstring)."""

    settings: Settings
    build: BuildState | None = None
    server: tuple[ForkServer, str] | None = None  # started ahead, with its log line
    waiting: int | None = None  # the pid in which a directive read may start the server


_SESSIONS: weakref.WeakKeyDictionary[Config, Session] = weakref.WeakKeyDictionary()


def open_session(app: Sphinx, config: Config) -> None:
    """``config-inited``: the build's session, with the configuration validated."""
    _SESSIONS[config] = Session(read_settings(app, config))


def setup_state(app: Sphinx) -> None:
    app.connect("config-inited", open_session, priority=priorities.SETTINGS)


def session(where: Sphinx | Config) -> Session:
    """This build's :class:`Session`, from the app or its configuration."""
    config = where if isinstance(where, Config) else where.config
    return _SESSIONS[config]


def settings(where: Sphinx | Config) -> Settings:
    """This build's validated configuration, from the app or its ``Config``."""
    return session(where).settings


def build_state(app: Sphinx) -> BuildState | None:
    """This build's state, or None before (or without) lowering."""
    found = _SESSIONS.get(app.config)
    return found.build if found is not None else None


def start_build(app: Sphinx, state: BuildState) -> None:
    """Make ``state`` this build's state."""
    session(app).build = state
