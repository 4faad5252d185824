"""Every configuration value and environment variable, declared once.

``setup_config`` registers them with Sphinx; the book's reference page is generated from
the same tuples, so the documentation cannot drift from the code.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from sphinx.application import Sphinx
from sphinx.config import Config

from ..core.errors import OptionError
from ..core.plan import options, shards
from ..core.plan.options import DEFAULT_SHOW
from ..core.plan.targets import Target, parse_targets
from ..core.records.places import records_folder
from .messages import warn

DEFAULT_SNAPSHOT_DIR = "_tlstages/snapshots"


@dataclass(frozen=True)
class ConfigValue:
    """One ``conf.py`` value: its name, default, what it invalidates and what it means."""

    name: str
    default: Any
    rebuild: Literal["", "env", "html"]
    types: tuple[type, ...]
    doc: str


CONFIG_VALUES: tuple[ConfigValue, ...] = (
    ConfigValue(
        "tlstages_num_stages", "1 2 3 4", "env", (str, list, tuple),
        "num_stages values lowered when a directive gives no ``:num-stages:``.",
    ),
    ConfigValue(
        "tlstages_target", "sm_80", "env", (str,),
        "Target used when a directive gives no ``:target:`` (an arch such as ``sm_80`` or "
        "``gfx942``, ``cuda -arch=sm_90a`` or a JSON target). Never ``auto``: docs build "
        "without a GPU.",
    ),
    ConfigValue(
        "tlstages_file_roots", [], "env", (list, tuple),
        "Folders besides the source directory from which ``:file:`` may read kernels "
        "(relative to the configuration directory, or absolute).",
    ),
    ConfigValue(
        "tlstages_python_path", [], "env", (list, tuple),
        "Folders (relative to the configuration directory, or absolute) put first on the "
        "import path while a kernel runs, after a ``:file:`` kernel's own folder: where "
        "inline kernels find helper modules (``from tile_helpers import ...``). What a "
        "kernel imports from these folders is part of what its cached result depends on.",
    ),
    ConfigValue(
        "tlstages_show", list(DEFAULT_SHOW), "env", (list, tuple, str),
        "Parts shown when a directive gives no ``:show:``: every part but ``passes``, whose "
        "facts cost about a tenth of each lowering (a directive with ``:passes:`` shows "
        "it all the same).",
    ),
    ConfigValue(
        "tlstages_diff", "consecutive", "env", (str,),
        "CUDA diffs when a directive gives no ``:diff:``: ``consecutive``, ``baseline`` "
        "or ``none``.",
    ),
    ConfigValue(
        "tlstages_max_lines", 400, "html", (int,),
        "Lines of one CUDA diff or listing shown on the page; the rest is one click away in "
        "the downloadable CUDA files.",
    ),
    ConfigValue(
        "tlstages_snapshot_dir", DEFAULT_SNAPSHOT_DIR, "", (str,),
        "Folder of the golden snapshots, relative to the source directory: one JSON file "
        "per directive ``:name:``, committed with the book.",
    ),
    ConfigValue(
        "tlstages_snapshots", "auto", "", (str,),
        "``auto`` records missing snapshots and fails on a mismatch (under ``CI`` or "
        "``READTHEDOCS`` a missing one fails too, as does one that lacks a fact its page "
        "shows, and nothing is written); ``check`` never records; ``update`` rewrites what "
        "changed or is lacking and removes unused ones; ``off``. "
        "``TLSTAGES_SNAPSHOTS`` wins.",
    ),
    ConfigValue(
        "tlstages_bench_dir", "_tlstages/bench", "html", (str,),
        "Folder of the benchmark files written by ``tlstages bench`` (one per GPU), "
        "relative to the source directory.",
    ),
    ConfigValue(
        "tlstages_bench_gpus", None, "html", (list, tuple, type(None)),
        "Which bench files to show, and in which order (file names without ``.json`` or "
        "GPU names); default: all, by file name.",
    ),
    ConfigValue(
        "tlstages_bench_stale", "mark", "html", (str,),
        "Numbers whose kernel fingerprint no longer matches the page: ``mark`` shows them "
        "marked stale (with a warning), ``hide`` leaves them out.",
    ),
    ConfigValue(
        "tlstages_cache_dir", None, "", (str, type(None)),
        "Folder of the lowering cache (default ``tlstages-cache`` in the doctree folder, "
        "which survives ``-E``; where the doctrees are inside the output folder, as with a "
        "plain ``sphinx-build SRC OUT``, in ``OUT.tlstages`` beside it, never published). "
        "The environment variable ``TLSTAGES_CACHE_DIR`` wins.",
    ),
    ConfigValue(
        "tlstages_cache_url", None, "", (str, type(None)),
        "A shared second level of the lowering cache: ``s3://bucket/prefix``, "
        "``gs://``, ``az://``, ``https://`` or ``file://`` (needs the ``cache`` extra: "
        "``pip install sphinx-tlstages[cache]``). A local miss reads it, a hit is kept "
        "locally, and only what neither holds is lowered. Read-only unless "
        "``tlstages_cache_write``; ``TLSTAGES_CACHE_URL`` wins.",
    ),
    ConfigValue(
        "tlstages_cache_write", False, "", (bool,),
        "Write what this build lowers to ``tlstages_cache_url`` (never in a build of a pull "
        "request, as far as the CI says so). ``TLSTAGES_CACHE_WRITE=1`` wins.",
    ),
    ConfigValue(
        "tlstages_cache_timeout", 5.0, "", (int, float),
        "Seconds one request to ``tlstages_cache_url`` may take (connecting: a fifth of "
        "it, at least one second); a build waits at most six times this for the remote "
        "in all. ``TLSTAGES_CACHE_TIMEOUT`` wins.",
    ),
    ConfigValue(
        "tlstages_jobs", None, "", (int, type(None)),
        "Worker processes that lower cache misses (default: the CPUs this process may "
        "use, capped so the workers fit in memory). ``TLSTAGES_JOBS`` wins.",
    ),
    ConfigValue(
        "tlstages_keep_workers", 0, "", (int, float),
        "Seconds a fork server (TileLang imported once; every worker a fork of it) stays "
        "alive without use after a build, so that the next build on this machine with the "
        "same interpreter, TileLang, extension code and environment lowers what changed "
        "without importing TileLang again: for live preview (``nox -s docs-live`` sets "
        "600). ``0`` (the default) stops the workers with the build. Off under ``CI`` and "
        "``READTHEDOCS``; ``TLSTAGES_KEEP_WORKERS`` wins. ``tlstages workers status`` "
        "and ``tlstages workers stop`` show and end kept servers.",
    ),
    ConfigValue(
        "tlstages_timeout", 300, "", (int, float),
        "Seconds one variant may take to lower (from the start of its lowering, not the "
        "worker's start-up) before it is killed and reported as timed out.",
    ),
    ConfigValue(
        "tlstages_toolkit", "auto", "env", (str,),
        "NVIDIA's compiler for the ``resources`` part: ``auto`` (the release the "
        "``resources`` extra pins, ``pip install sphinx-tlstages[resources]``; else an "
        "``nvcc`` on ``PATH``, else under ``CUDA_HOME``), ``none`` (the part only says it "
        "has no numbers; no warning), or the path of an ``nvcc``. The pinned release wins "
        "over any other, since another release compiles to other SASS.",
    ),
    ConfigValue(
        "tlstages_collect_only", False, "", (bool,),
        "Read the directives without lowering or checking anything; the ``tlstages`` "
        "command sets it to find a project's directives as the docs build does.",
    ),
    ConfigValue(
        "tlstages_shard", "", "", (str,),
        "``I/N``: lower only shard I of N of the project's variants, into the caches, and "
        "neither check nor write pages; ``tlstages lower-book --shard I/N`` sets it.",
    ),
)

ENVIRONMENT_VARIABLES: dict[str, str] = {
    "TLSTAGES_CACHE_DIR": "Folder of the lowering cache; wins over ``tlstages_cache_dir``.",
    "TLSTAGES_CACHE_URL": "The shared cache's URL; wins over ``tlstages_cache_url``.",
    "TLSTAGES_CACHE_WRITE": "``1`` lets this build write to the shared cache; wins over "
                            "``tlstages_cache_write``.",
    "TLSTAGES_CACHE_TIMEOUT": "Seconds per request to the shared cache; wins over "
                              "``tlstages_cache_timeout``.",
    "READTHEDOCS_VERSION_TYPE": "``external`` (a pull request's build on Read the Docs): "
                                "the shared cache is read, never written.",
    "GITHUB_EVENT_NAME": "``pull_request`` or ``pull_request_target``: the shared cache "
                         "is read, never written.",
    "CI_MERGE_REQUEST_IID": "Set by GitLab in a merge request's pipeline: the shared "
                            "cache is read, never written.",
    "TLSTAGES_JOBS": "Number of lowering workers; wins over ``tlstages_jobs``.",
    "TLSTAGES_KEEP_WORKERS": "Seconds kept workers outlive a build; wins over "
                             "``tlstages_keep_workers`` (ignored under ``CI`` and "
                             "``READTHEDOCS``).",
    "TLSTAGES_WORKERS_DIR": "Folder of the kept workers' sockets (default "
                            "``$XDG_RUNTIME_DIR/sphinx-tlstages``, else "
                            "``sphinx-tlstages-<uid>`` in the temporary folder); made "
                            "private to its user.",
    "TLSTAGES_SNAPSHOTS": "Snapshot mode (``auto``, ``check``, ``update``, ``off``); wins "
                          "over ``tlstages_snapshots``.",
    "CI": "When set (and not ``0``/``false``), snapshots are checked strictly: a missing "
          "one, or one that lacks a fact its page shows, fails the build and nothing is "
          "written; a page showing ``resources`` without NVIDIA's compiler fails it too.",
    "READTHEDOCS": "Set by Read the Docs; the same strict checking as ``CI``.",
}


SNAPSHOT_MODES = ("auto", "check", "update", "off")
BENCH_STALE_MODES = ("mark", "hide")


def _flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() not in ("", "0", "false", "no")


def strict_environment() -> bool:
    """Whether this runs under ``CI`` or on Read the Docs: what a page or a command says
    it shows must be built there (a missing snapshot or compiler is an error)."""
    return _flag("CI") or _flag("READTHEDOCS")


@dataclass(frozen=True)
class Settings:
    """The configuration as the rest of the extension reads it: validated once, with the
    environment overrides applied and every folder absolute."""

    confdir: Path
    srcdir: Path
    # The directives' defaults, parsed here once: a bad value is one warning, not one per
    # directive.
    num_stages: tuple[int, ...]
    targets: tuple[Target, ...]
    file_roots: tuple[Path, ...]
    python_path: tuple[Path, ...]
    show: tuple[str, ...]
    diff: str
    max_lines: int
    snapshot_dir: Path
    snapshot_mode: str
    strict: bool  # CI or Read the Docs: a missing snapshot fails, nothing is written
    bench_dir: Path
    bench_gpus: list[str] | None
    bench_stale: str
    cache_dir: Path
    cache_url: str | None
    cache_write: bool
    cache_timeout: float
    jobs: int | None
    keep_workers: float  # seconds; 0: the workers end with the build
    timeout: float
    collect_only: bool
    toolkit: str = "auto"  # tlstages_toolkit
    shard: tuple[int, int] | None = None  # tlstages_shard: (I, N)


def _choice(value: str, allowed: tuple[str, ...], what: str, fallback: str) -> str:
    if value in allowed:
        return value
    warn(f"{what} must be one of {', '.join(allowed)}, not {value!r}; using {fallback!r}",
         "option")
    return fallback


def _jobs(configured: object) -> int | None:
    text = os.environ.get("TLSTAGES_JOBS") or configured
    if text in (None, ""):
        return None
    try:
        return max(1, int(str(text)))
    except ValueError:
        warn(f"TLSTAGES_JOBS / tlstages_jobs must be a whole number, not {text!r}", "option")
        return None


def _keep_workers(configured: object, strict: bool) -> float:
    if strict:  # a CI or Read the Docs build is the last one on that machine
        return 0.0
    return _seconds(os.environ.get("TLSTAGES_KEEP_WORKERS") or configured,
                    "TLSTAGES_KEEP_WORKERS / tlstages_keep_workers", 0.0, 0.0)


def _seconds(text: object, names: str, least: float, default: float) -> float:
    """``text`` as seconds (at least ``least``); else a warning naming ``names`` and
    ``default``."""
    try:
        return max(least, float(str(text)))
    except ValueError:
        warn(f"{names} must be a number of seconds, not {text!r}", "option")
        return default


_DEFAULTS = {value.name: value.default for value in CONFIG_VALUES}


def _parsed(parser: Any, config: Config, name: str) -> Any:
    """``conf.py``'s ``name`` through ``parser``; else one warning naming ``conf.py``, and
    the value's default."""
    try:
        return parser(getattr(config, name))
    except (OptionError, TypeError, ValueError) as exc:
        warn(f"conf.py {name}: {exc}; using the default {_DEFAULTS[name]!r}", "option")
        return parser(_DEFAULTS[name])


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
    """Validate ``config`` (and the environment) into :class:`Settings`."""
    confdir, srcdir = Path(app.confdir), Path(app.srcdir)
    # Relative roots mean "relative to conf.py", which only the app knows; resolve once.
    roots = tuple(Path(confdir, root).resolve() for root in config.tlstages_file_roots)
    cache = os.environ.get("TLSTAGES_CACHE_DIR") or config.tlstages_cache_dir
    mode = os.environ.get("TLSTAGES_SNAPSHOTS") or config.tlstages_snapshots
    strict = strict_environment()
    return Settings(
        confdir=confdir.resolve(),
        srcdir=srcdir.resolve(),
        num_stages=_parsed(options.parse_num_stages, config, "tlstages_num_stages"),
        targets=_parsed(parse_targets, config, "tlstages_target"),
        file_roots=roots,
        python_path=tuple(Path(confdir, p).resolve() for p in config.tlstages_python_path),
        show=_parsed(options.parse_show, config, "tlstages_show"),
        diff=_parsed(options.parse_diff, config, "tlstages_diff"),
        max_lines=int(config.tlstages_max_lines),
        snapshot_dir=Path(srcdir, config.tlstages_snapshot_dir),
        snapshot_mode=_choice(str(mode), SNAPSHOT_MODES,
                              "tlstages_snapshots / TLSTAGES_SNAPSHOTS", "check"),
        strict=strict,
        bench_dir=Path(srcdir, config.tlstages_bench_dir),
        bench_gpus=list(config.tlstages_bench_gpus) if config.tlstages_bench_gpus else None,
        bench_stale=_choice(config.tlstages_bench_stale, BENCH_STALE_MODES,
                            "tlstages_bench_stale", "mark"),
        cache_dir=Path(confdir, cache).resolve() if cache
        # Never inside the published output (see core.records.places).
        else records_folder(Path(app.doctreedir), Path(app.outdir)) / "tlstages-cache",
        cache_url=os.environ.get("TLSTAGES_CACHE_URL") or config.tlstages_cache_url or None,
        cache_write=_flag("TLSTAGES_CACHE_WRITE") if "TLSTAGES_CACHE_WRITE" in os.environ
        else bool(config.tlstages_cache_write),
        cache_timeout=_seconds(os.environ.get("TLSTAGES_CACHE_TIMEOUT")
                               or config.tlstages_cache_timeout,
                               "TLSTAGES_CACHE_TIMEOUT / tlstages_cache_timeout", 0.1, 5.0),
        jobs=_jobs(config.tlstages_jobs),
        keep_workers=_keep_workers(config.tlstages_keep_workers, strict),
        timeout=_parsed(lambda v: options.parse_timeout(str(v)), config, "tlstages_timeout"),
        collect_only=bool(config.tlstages_collect_only),
        toolkit=str(config.tlstages_toolkit),
        shard=shards.parse_shard(config.tlstages_shard) if config.tlstages_shard else None,
    )


def setup_config(app: Sphinx) -> None:
    """Register every value of :data:`CONFIG_VALUES` (:mod:`.state` validates them into
    :class:`Settings` once they are read)."""
    for value in CONFIG_VALUES:
        app.add_config_value(value.name, value.default, value.rebuild, types=value.types,
                             description=value.doc)
