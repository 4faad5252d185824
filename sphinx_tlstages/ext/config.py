"""Every configuration value and environment variable, declared once.

Each value is one :class:`ConfigValue` on :class:`Settings`: its ``conf.py`` name,
default, what a change invalidates, its types, what it means, the environment variable
that wins over it and how it is read (validated, made absolute). ``setup_config``
registers them with Sphinx, :func:`read_settings` reads them into the ``Settings`` the
rest of the extension uses, and the book's reference page is generated from the same
declarations, so the documentation cannot drift from the code.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, Literal, TypeVar, overload

from sphinx.application import Sphinx
from sphinx.config import Config

from ..core.errors import OptionError
from ..core.parts import DEFAULT_SHOW, parse_show
from ..core.plan import options, shards
from ..core.plan.targets import Target, parse_targets
from ..core.records.places import records_folder
from .messages import warn

DEFAULT_SNAPSHOT_DIR = "_tlstages/snapshots"


T = TypeVar("T")
SNAPSHOT_MODES = ("auto", "check", "update", "off")
BENCH_STALE_MODES = ("mark", "hide")


@dataclass(frozen=True)
class Reading:
    """One value being read: ``conf.py``'s value, its environment variable's (None where
    unset), and the folders and mode that reading it may need."""

    name: str
    default: Any
    configured: Any
    env_name: str | None
    env: str | None
    confdir: Path
    srcdir: Path
    doctreedir: Path
    outdir: Path
    strict: bool


class ConfigValue(Generic[T]):
    """One ``conf.py`` value: its name, default, what it invalidates, its types and what
    it means; the environment variable that wins over it (and what it says there); and
    how it is read into :class:`Settings`, whose attribute of the same declaration holds
    the value read."""

    def __init__(self, name: str, default: Any, rebuild: Literal["", "env", "html"],
                 types: tuple[type, ...], doc: str, *, read: Callable[[Reading], T],
                 env: str | None = None, env_doc: str = "") -> None:
        self.name, self.default, self.rebuild, self.types, self.doc = \
            name, default, rebuild, types, doc
        self.read, self.env, self.env_doc = read, env, env_doc
        self.attr = ""

    def __set_name__(self, owner: type, attr: str) -> None:
        self.attr = attr

    @overload
    def __get__(self, settings: None, owner: type) -> ConfigValue[T]: ...

    @overload
    def __get__(self, settings: Settings, owner: type) -> T: ...

    def __get__(self, settings: Settings | None, owner: type) -> ConfigValue[T] | T:
        if settings is None:
            return self
        value: T = settings.values[self.attr]
        return value

    def environment(self) -> tuple[str, str] | None:
        """Its environment variable and what the reference says of it."""
        if self.env is None:
            return None
        wins = f"wins over ``{self.name}``"
        doc = self.env_doc.format(wins=wins) if "{wins}" in self.env_doc \
            else f"{self.env_doc}; {wins}."
        return self.env, doc


def _flag(name: str) -> bool:
    return _true(os.environ.get(name, ""))


def _true(text: str) -> bool:
    return text.strip().lower() not in ("", "0", "false", "no")


def strict_environment() -> bool:
    """Whether this runs under ``CI`` or on Read the Docs: what a page or a command says
    it shows must be built there (a missing snapshot or compiler is an error)."""
    return _flag("CI") or _flag("READTHEDOCS")


def _parsed(parser: Callable[[Any], T]) -> Callable[[Reading], T]:
    """``conf.py``'s value through ``parser``; else one warning naming ``conf.py``, and
    the value's default."""
    def read(reading: Reading) -> T:
        try:
            return parser(reading.configured)
        except (OptionError, TypeError, ValueError) as exc:
            warn(f"conf.py {reading.name}: {exc}; using the default {reading.default!r}",
                 "option")
            return parser(reading.default)
    return read


def _choice(value: str, allowed: tuple[str, ...], what: str, fallback: str) -> str:
    if value in allowed:
        return value
    warn(f"{what} must be one of {', '.join(allowed)}, not {value!r}; using {fallback!r}",
         "option")
    return fallback


def _seconds(text: object, names: str, least: float, default: float) -> float:
    """``text`` as seconds (at least ``least``); else a warning naming ``names`` and
    ``default``."""
    try:
        return max(least, float(str(text)))
    except ValueError:
        warn(f"{names} must be a number of seconds, not {text!r}", "option")
        return default


def _folders(reading: Reading) -> tuple[Path, ...]:
    # Relative folders mean "relative to conf.py", which only the app knows; resolved once.
    return tuple(Path(reading.confdir, folder).resolve() for folder in reading.configured)


def _snapshot_mode(reading: Reading) -> str:
    return _choice(str(reading.env or reading.configured), SNAPSHOT_MODES,
                   f"{reading.name} / {reading.env_name}", "check")


def _bench_stale(reading: Reading) -> str:
    return _choice(reading.configured, BENCH_STALE_MODES, reading.name, "mark")


def _cache_dir(reading: Reading) -> Path:
    cache = reading.env or reading.configured
    # Never inside the published output (see core.records.places).
    return Path(reading.confdir, cache).resolve() if cache \
        else records_folder(reading.doctreedir, reading.outdir) / "tlstages-cache"


def _cache_write(reading: Reading) -> bool:
    # Set but empty is "no", as for any flag; unset leaves it to conf.py.
    return _true(reading.env) if reading.env is not None else bool(reading.configured)


def _cache_timeout(reading: Reading) -> float:
    return _seconds(reading.env or reading.configured,
                    f"{reading.env_name} / {reading.name}", 0.1, 5.0)


def _jobs(reading: Reading) -> int | None:
    text = reading.env or reading.configured
    if text in (None, ""):
        return None
    try:
        return max(1, int(str(text)))
    except ValueError:
        warn(f"{reading.env_name} / {reading.name} must be a whole number, not {text!r}",
             "option")
        return None


def _keep_workers(reading: Reading) -> float:
    if reading.strict:  # a CI or Read the Docs build is the last one on that machine
        return 0.0
    return _seconds(reading.env or reading.configured, f"{reading.env_name} / {reading.name}",
                    0.0, 0.0)


class Settings:
    """The configuration as the rest of the extension reads it: validated once, with the
    environment overrides applied and every folder absolute. Each attribute below is a
    ``conf.py`` value's one declaration; :attr:`confdir`, :attr:`srcdir` and
    :attr:`strict` are where and how the build runs."""

    # The directives' defaults are parsed here once: a bad value is one warning, not one
    # per directive.
    num_stages: ConfigValue[tuple[int, ...]] = ConfigValue(
        "tlstages_num_stages", "1 2 3 4", "env", (str, list, tuple),
        "num_stages values lowered when a directive gives no ``:num-stages:``.",
        read=_parsed(options.parse_num_stages),
    )
    targets: ConfigValue[tuple[Target, ...]] = ConfigValue(
        "tlstages_target", "sm_80", "env", (str,),
        "Target used when a directive gives no ``:target:`` (an arch such as ``sm_80`` or "
        "``gfx942``, ``metal``, ``cuda -arch=sm_90a`` or a JSON target). Never ``auto``: "
        "docs build without a GPU.",
        read=_parsed(parse_targets),
    )
    file_roots: ConfigValue[tuple[Path, ...]] = ConfigValue(
        "tlstages_file_roots", [], "env", (list, tuple),
        "Folders besides the source directory from which ``:file:`` may read kernels "
        "(relative to the configuration directory, or absolute).",
        read=_folders,
    )
    python_path: ConfigValue[tuple[Path, ...]] = ConfigValue(
        "tlstages_python_path", [], "env", (list, tuple),
        "Folders (relative to the configuration directory, or absolute) put first on the "
        "import path while a kernel runs, after a ``:file:`` kernel's own folder: where "
        "inline kernels find helper modules (``from tile_helpers import ...``). What a "
        "kernel imports from these folders is part of what its cached result depends on.",
        read=_folders,
    )
    show: ConfigValue[tuple[str, ...]] = ConfigValue(
        "tlstages_show", list(DEFAULT_SHOW), "env", (list, tuple, str),
        "Parts shown when a directive gives no ``:show:``: every part but ``passes``, whose "
        "facts cost about a tenth of each lowering (a directive with ``:passes:`` shows "
        "it all the same).",
        read=_parsed(parse_show),
    )
    diff: ConfigValue[str] = ConfigValue(
        "tlstages_diff", "consecutive", "env", (str,),
        "CUDA diffs when a directive gives no ``:diff:``: ``consecutive``, ``baseline`` "
        "or ``none``.",
        read=_parsed(options.parse_diff),
    )
    max_lines: ConfigValue[int] = ConfigValue(
        "tlstages_max_lines", 400, "html", (int,),
        "Lines of one CUDA diff or listing shown on the page; the rest is one click away in "
        "the downloadable CUDA files.",
        read=lambda r: int(r.configured),
    )
    snapshot_dir: ConfigValue[Path] = ConfigValue(
        "tlstages_snapshot_dir", DEFAULT_SNAPSHOT_DIR, "", (str,),
        "Folder of the golden snapshots, relative to the source directory: one JSON file "
        "per directive ``:name:``, committed with the book.",
        read=lambda r: Path(r.srcdir, r.configured),
    )
    snapshot_mode: ConfigValue[str] = ConfigValue(
        "tlstages_snapshots", "auto", "", (str,),
        "``auto`` records missing snapshots and fails on a mismatch (under ``CI`` or "
        "``READTHEDOCS`` a missing one fails too, as does one that lacks a fact its page "
        "shows, and nothing is written); ``check`` never records; ``update`` rewrites what "
        "changed or is lacking and removes unused ones; ``off``. In every mode, the "
        "snapshot of a directive with an option in error, or that could not be read, is "
        "only read, and each variant it records that the build cannot show fails. "
        "``TLSTAGES_SNAPSHOTS`` wins.",
        read=_snapshot_mode, env="TLSTAGES_SNAPSHOTS",
        env_doc="Snapshot mode (``auto``, ``check``, ``update``, ``off``)",
    )
    bench_dir: ConfigValue[Path] = ConfigValue(
        "tlstages_bench_dir", "_tlstages/bench", "html", (str,),
        "Folder of the benchmark files written by ``tlstages bench`` (one per GPU), "
        "relative to the source directory.",
        read=lambda r: Path(r.srcdir, r.configured),
    )
    bench_gpus: ConfigValue[list[str] | None] = ConfigValue(
        "tlstages_bench_gpus", None, "html", (list, tuple, type(None)),
        "Which bench files to show, and in which order (file names without ``.json`` or "
        "GPU names); default: all, by file name.",
        read=lambda r: list(r.configured) if r.configured else None,
    )
    bench_stale: ConfigValue[str] = ConfigValue(
        "tlstages_bench_stale", "mark", "html", (str,),
        "Numbers whose kernel fingerprint no longer matches the page: ``mark`` shows them "
        "marked stale (with a warning), ``hide`` leaves them out.",
        read=_bench_stale,
    )
    hardware_dir: ConfigValue[Path] = ConfigValue(
        "tlstages_hardware_dir", "_tlstages/hardware", "html", (str,),
        "Folder of the hardware records written by ``tlstages hardware`` (one per GPU: "
        "what compute-sanitizer observed of each variant of the directives with "
        "``:hardware:``), relative to the source directory.",
        read=lambda r: Path(r.srcdir, r.configured),
    )
    timeline_dir: ConfigValue[Path] = ConfigValue(
        "tlstages_timeline_dir", "_tlstages/timeline", "html", (str,),
        "Folder of the measured timelines written by ``tlstages timeline`` (one file per "
        "GPU), relative to the source directory; ``tlstages_bench_gpus`` picks among them "
        "too, and ``tlstages_bench_stale`` says what becomes of a stale one.",
        read=lambda r: Path(r.srcdir, r.configured),
    )
    cache_dir: ConfigValue[Path] = ConfigValue(
        "tlstages_cache_dir", None, "", (str, type(None)),
        "Folder of the lowering cache (default ``tlstages-cache`` in the doctree folder, "
        "which survives ``-E``; where the doctrees are inside the output folder, as with a "
        "plain ``sphinx-build SRC OUT``, in ``OUT.tlstages`` beside it, never published). "
        "The environment variable ``TLSTAGES_CACHE_DIR`` wins.",
        read=_cache_dir, env="TLSTAGES_CACHE_DIR",
        env_doc="Folder of the lowering cache",
    )
    cache_url: ConfigValue[str | None] = ConfigValue(
        "tlstages_cache_url", None, "", (str, type(None)),
        "A shared second level of the lowering cache: ``s3://bucket/prefix``, "
        "``gs://``, ``az://``, ``https://`` or ``file://`` (needs the ``cache`` extra: "
        "``pip install sphinx-tlstages[cache]``). A local miss reads it, a hit is kept "
        "locally, and only what neither holds is lowered. Read-only unless "
        "``tlstages_cache_write``; ``TLSTAGES_CACHE_URL`` wins.",
        read=lambda r: r.env or r.configured or None, env="TLSTAGES_CACHE_URL",
        env_doc="The shared cache's URL",
    )
    cache_write: ConfigValue[bool] = ConfigValue(
        "tlstages_cache_write", False, "", (bool,),
        "Write what this build lowers to ``tlstages_cache_url`` (never in a build of a pull "
        "request, as far as the CI says so). ``TLSTAGES_CACHE_WRITE=1`` wins.",
        read=_cache_write, env="TLSTAGES_CACHE_WRITE",
        env_doc="``1`` lets this build write to the shared cache",
    )
    cache_timeout: ConfigValue[float] = ConfigValue(
        "tlstages_cache_timeout", 5.0, "", (int, float),
        "Seconds one request to ``tlstages_cache_url`` may take (connecting: a fifth of "
        "it, at least one second); a build waits at most six times this for the remote "
        "in all. ``TLSTAGES_CACHE_TIMEOUT`` wins.",
        read=_cache_timeout, env="TLSTAGES_CACHE_TIMEOUT",
        env_doc="Seconds per request to the shared cache",
    )
    jobs: ConfigValue[int | None] = ConfigValue(
        "tlstages_jobs", None, "", (int, type(None)),
        "Worker processes that lower cache misses (default: the CPUs this process may "
        "use, capped so the workers fit in memory). ``TLSTAGES_JOBS`` wins.",
        read=_jobs, env="TLSTAGES_JOBS",
        env_doc="Number of lowering workers",
    )
    keep_workers: ConfigValue[float] = ConfigValue(
        "tlstages_keep_workers", 0, "", (int, float),
        "Seconds a fork server (TileLang imported once; every worker a fork of it) stays "
        "alive without use after a build, so that the next build on this machine with the "
        "same interpreter, TileLang, extension code and environment lowers what changed "
        "without importing TileLang again: for live preview (``nox -s docs-live`` sets "
        "600). ``0`` (the default) stops the workers with the build. Off under ``CI`` and "
        "``READTHEDOCS``; ``TLSTAGES_KEEP_WORKERS`` wins. ``tlstages workers status`` "
        "and ``tlstages workers stop`` show and end kept servers.",
        read=_keep_workers, env="TLSTAGES_KEEP_WORKERS",
        env_doc="Seconds kept workers outlive a build; {wins} (ignored under ``CI`` and "
                "``READTHEDOCS``).",
    )
    timeout: ConfigValue[float] = ConfigValue(
        "tlstages_timeout", 300, "", (int, float),
        "Seconds one variant may take to lower (from the start of its lowering, not the "
        "worker's start-up) before it is killed and reported as timed out.",
        read=_parsed(lambda v: options.parse_timeout(str(v))),
    )
    toolkit: ConfigValue[str] = ConfigValue(
        "tlstages_toolkit", "auto", "env", (str,),
        "NVIDIA's compiler for the ``resources`` part: ``auto`` (the release the "
        "``resources`` extra pins, ``pip install sphinx-tlstages[resources]``; else an "
        "``nvcc`` on ``PATH``, else under ``CUDA_HOME``), ``none`` (the part only says it "
        "has no numbers; no warning), or the path of an ``nvcc``. The pinned release wins "
        "over any other, since another release compiles to other SASS.",
        read=lambda r: str(r.configured),
    )
    collect_only: ConfigValue[bool] = ConfigValue(
        "tlstages_collect_only", False, "", (bool,),
        "Read the directives without lowering or checking anything; the ``tlstages`` "
        "command sets it to find a project's directives as the docs build does.",
        read=lambda r: bool(r.configured),
    )
    shard: ConfigValue[tuple[int, int] | None] = ConfigValue(
        "tlstages_shard", "", "", (str,),
        "``I/N``: lower only shard I of N of the project's variants, into the caches, and "
        "neither check nor write pages; ``tlstages lower-book --shard I/N`` sets it.",
        read=lambda r: shards.parse_shard(r.configured) if r.configured else None,
    )

    def __init__(self, confdir: Path, srcdir: Path, strict: bool,
                 values: dict[str, Any]) -> None:
        self.confdir, self.srcdir = confdir, srcdir
        self.strict = strict  # CI or Read the Docs: a missing snapshot fails, nothing is written
        self.values = values  # by attribute: what each declaration read


CONFIG_VALUES: tuple[ConfigValue[Any], ...] = tuple(
    value for value in vars(Settings).values() if isinstance(value, ConfigValue))


def _environment(*values: ConfigValue[Any]) -> dict[str, str]:
    return dict(found for value in values if (found := value.environment()) is not None)


# In the reference's order: the cache's, the pull request's, the workers', the checks'.
ENVIRONMENT_VARIABLES: dict[str, str] = {
    **_environment(Settings.cache_dir, Settings.cache_url, Settings.cache_write,
                   Settings.cache_timeout),
    "READTHEDOCS_VERSION_TYPE": "``external`` (a pull request's build on Read the Docs): "
                                "the shared cache is read, never written.",
    "GITHUB_EVENT_NAME": "``pull_request`` or ``pull_request_target``: the shared cache "
                         "is read, never written.",
    "CI_MERGE_REQUEST_IID": "Set by GitLab in a merge request's pipeline: the shared "
                            "cache is read, never written.",
    **_environment(Settings.jobs, Settings.keep_workers),
    "TLSTAGES_WORKERS_DIR": "Folder of the kept workers' sockets (default "
                            "``$XDG_RUNTIME_DIR/sphinx-tlstages``, else "
                            "``sphinx-tlstages-<uid>`` in the temporary folder); made "
                            "private to its user.",
    **_environment(Settings.snapshot_mode),
    "CI": "When set (and not ``0``/``false``), snapshots are checked strictly: a missing "
          "one, or one that lacks a fact its page shows, fails the build and nothing is "
          "written; a page showing ``resources`` without NVIDIA's compiler fails it too.",
    "READTHEDOCS": "Set by Read the Docs; the same strict checking as ``CI``.",
}

# Every value that names an environment variable is in the reference's table.
assert {v.env for v in CONFIG_VALUES if v.env} <= ENVIRONMENT_VARIABLES.keys()


def pull_request() -> str | None:
    """What says this build is a pull request's (best effort: what the CI sets), if so."""
    if os.environ.get("READTHEDOCS_VERSION_TYPE") == "external":
        return "READTHEDOCS_VERSION_TYPE=external"
    event = os.environ.get("GITHUB_EVENT_NAME", "")
    if event in ("pull_request", "pull_request_target"):
        return f"GITHUB_EVENT_NAME={event}"
    if os.environ.get("CI_MERGE_REQUEST_IID"):
        return "CI_MERGE_REQUEST_IID"
    return None


def read_settings(app: Sphinx, config: Config) -> Settings:
    """Validate ``config`` (and the environment) into :class:`Settings`, each value as
    its declaration reads it."""
    confdir, srcdir = Path(app.confdir).resolve(), Path(app.srcdir).resolve()
    strict = strict_environment()
    values = {
        value.attr: value.read(Reading(
            name=value.name, default=value.default, configured=getattr(config, value.name),
            env_name=value.env, env=os.environ.get(value.env) if value.env else None,
            confdir=Path(app.confdir), srcdir=Path(app.srcdir), doctreedir=Path(app.doctreedir),
            outdir=Path(app.outdir), strict=strict))
        for value in CONFIG_VALUES}
    return Settings(confdir, srcdir, strict, values)


def setup_config(app: Sphinx) -> None:
    """Register every value of :data:`CONFIG_VALUES` (:mod:`.state` validates them into
    :class:`Settings` once they are read)."""
    for value in CONFIG_VALUES:
        app.add_config_value(value.name, value.default, value.rebuild, types=value.types,
                             description=value.doc)
