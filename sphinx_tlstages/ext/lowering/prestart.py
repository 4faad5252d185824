"""Lowering workers started before they are needed: their TileLang import runs while
Sphinx reads.

A first build with an empty cache, or a build that reads every document (no saved
environment) with a cache that lacks what the last build recorded, starts a fork server
(or reaches a kept one) as soon as the configuration is read, if a source file mentions
``tl-pipeline``: the TileLang import, most of a cold page's time, then starts before
Sphinx sets up its builder and environment (0.1 s sooner on the one-page benchmark). Otherwise, on
``env-before-read-docs`` Sphinx knows which documents it will read: when the cache
plainly cannot answer what they hold (the last build's variants not all in it), the
server starts then; when it may or may not (a first build against a shared cache, an
edited page), the first directive read whose variants are not all cached starts it.
The batch after reading (:mod:`.batch`) forks its workers from it. A warm ``-E`` rebuild
or a no-op rebuild starts nothing. With a remote cache (``tlstages_cache_url``) nothing
starts early: a fresh machine's empty local cache says nothing about what the remote
holds, so the batch starts the workers for what neither level has, if anything.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import TYPE_CHECKING

from sphinx.application import ENV_PICKLE_FILENAME

from ...core.plan.spec import DirectiveSpec
from ...core.records import explain
from ...core.records.places import records_folder
from ...core.results.stamps import tilelang_stamp
from ...runner.forkserver import ForkServer
from ...runner.launch import start_server
from ..cache.local import Cache
from ..collector import directives
from ..messages import verbose
from ..state import session, settings

if TYPE_CHECKING:
    from sphinx.application import Sphinx
    from sphinx.config import Config
    from sphinx.environment import BuildEnvironment

_MARK = "tl-pipeline"
_SCAN_LIMIT = 200  # source files read at start-up looking for a directive


def _mentions_directive(env: BuildEnvironment, docname: str) -> bool:
    with contextlib.suppress(OSError, UnicodeDecodeError):
        return _MARK in Path(env.doc2path(docname)).read_text(encoding="utf-8")
    return False


def _all_cached(cache: Cache, recorded: dict[str, list[str]]) -> bool:
    """Whether the cache holds every variant the last build recorded."""
    return all(cache.path(key).is_file() for keys in recorded.values() for key in keys)


def _cold(app: Sphinx) -> bool:
    """The batch will lower: nothing recorded here and the cache empty, or every document
    to be read (no saved environment) and the cache without a variant the last build
    recorded (its output folder removed, its records, beside it, kept)."""
    cache = Cache(settings(app).cache_dir)
    recorded = explain.recorded_keys(records_folder(Path(app.doctreedir), Path(app.outdir)))
    if recorded:
        if Path(app.doctreedir, ENV_PICKLE_FILENAME).is_file():
            return False  # which documents are read again is known later (_decide)
        return not _all_cached(cache, recorded)
    try:
        return not any(cache.root.iterdir())
    except OSError:
        return True


def early(app: Sphinx, config: Config) -> None:
    """``config-inited``: a cold build of a book with directives starts its workers now,
    before Sphinx sets up its builder and environment."""
    chosen = settings(config)
    if chosen.collect_only or chosen.cache_url or session(config).server \
            or tilelang_stamp() is None or not _cold(app):
        return
    suffixes = tuple(config.source_suffix) if isinstance(config.source_suffix, dict) \
        else (".rst", ".md")
    for count, path in enumerate(Path(app.srcdir).rglob("*")):
        if count >= _SCAN_LIMIT:
            return
        if path.suffix in suffixes and "_build" not in path.parts:
            with contextlib.suppress(OSError, UnicodeDecodeError):
                if _MARK in path.read_text(encoding="utf-8"):
                    _start(config, "as the configuration was read")
                    return


def _decide(app: Sphinx, env: BuildEnvironment, docnames: list[str]) -> str:
    """``now``, ``on-miss`` (at the first directive the cache cannot answer) or ``no``."""
    cache = Cache(settings(app).cache_dir)
    if env.all_docs:  # an incremental build: only the re-read pages can miss
        known = directives(env)
        mentioned = any(name in known or _mentions_directive(env, name) for name in docnames)
        return "on-miss" if mentioned else "no"
    recorded = explain.recorded_keys(records_folder(Path(app.doctreedir), Path(app.outdir)))
    if recorded:  # the last build's variants: a warm -E finds them all cached
        return "no" if _all_cached(cache, recorded) else "now"
    try:
        empty = not any(cache.root.iterdir())
    except OSError:
        empty = True
    if empty:
        return "now" if any(_mentions_directive(env, name) for name in docnames) else "no"
    return "on-miss"  # a first build against a cache shared with other projects


def before_reading(app: Sphinx, env: BuildEnvironment, docnames: list[str]) -> None:
    """``env-before-read-docs``: start the workers now if the batch will want them."""
    config = settings(app)
    if config.collect_only or config.cache_url or session(app).server \
            or tilelang_stamp() is None:
        return
    decision = _decide(app, env, docnames)
    if decision == "now":
        _start(app.config, "while Sphinx reads")
    elif decision == "on-miss":
        session(app).waiting = os.getpid()


def directive_read(config: Config, spec: DirectiveSpec) -> None:
    """A directive was read: the first one the cache cannot answer starts the workers
    (in Sphinx's own process; a ``-j`` reader is a fork that ends with its chunk)."""
    if session(config).waiting != os.getpid():
        return
    stamp = tilelang_stamp() or "missing"
    cache = Cache(settings(config).cache_dir)
    if all(cache.path(variant.key(stamp)).is_file() for variant in spec.lowerings):
        return
    session(config).waiting = None
    _start(config, f"at {spec.name}, the first directive the cache cannot answer")


def _start(config: Config, when: str) -> None:
    chosen = settings(config)
    server, note = start_server(chosen.keep_workers, [str(p) for p in chosen.python_path])
    verbose(f"tl-pipeline: {note}, {when}")
    if server is not None:
        session(config).server = (server, note)


def take(app: Sphinx) -> tuple[ForkServer | None, str | None]:
    """The server started for this build, now the batch's to use and close."""
    held = session(app)
    found, held.server, held.waiting = held.server, None, None
    return found if found is not None else (None, None)


def close(app: Sphinx, exception: BaseException | None) -> None:
    """``build-finished``: a server nobody took (nothing to lower, or an error) ends."""
    server, _ = take(app)
    if server is not None:
        server.close()
