"""``tlstages lower-book SRCDIR --shard I/N``: one shard of a book's lowering, into the
caches, for a CI matrix (as pytest-split's ``--splits N --group I`` or Playwright's
``--shard=I/N``).

The book is read by Sphinx itself with the dummy builder, as the command reads a project
elsewhere (:mod:`..ext.project`), but with ``tlstages_shard`` set instead of
``tlstages_collect_only``: the build's own batch (:mod:`..ext.lowering.batch`) takes
what the local and the shared cache hold and lowers the rest of this shard's variants
in its workers, writing each result to both caches; the checks and the pages are
skipped, and Sphinx's writing phase is never entered. Which variants are this shard's is
:mod:`..core.plan.shards`' split, the same in every shard with no coordination.

Afterwards every variant of the shard is checked to be where the final build will look
(the shared cache where this job may write to it, else the local one), and an entry a
write dropped (the build gives the remote a bounded time) is written again: the exit
status is 0 exactly when the whole shard is stored. A shard killed midway leaves only
whole entries (a local entry is renamed into place, a remote one is one PUT); running
it again lowers what is missing.
"""

from __future__ import annotations

import io
import os
import sys
import tempfile
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TextIO

from ..core.plan.shards import select
from ..core.plan.spec import DirectiveSpec, VariantSpec
from ..core.records.cache_entry import object_name, pack
from ..ext.cache.remote import PARALLEL, open_store, shown_url
from ..ext.checks.run import variant_failure
from ..ext.collector import all_directives
from ..ext.config import Settings, pull_request
from ..ext.state import BuildState, build_state, settings

Chosen = dict[str, tuple[VariantSpec, DirectiveSpec]]  # variants by key, with their directive


def lower_book(srcdir: Path, shard: tuple[int, int], cache_dir: Path | None = None,
               verbose: bool = False, out: TextIO | None = None) -> int:
    """Lower shard ``shard`` (I, N) of the book at ``srcdir`` into the caches; print the
    failed variants and one summary line. 0: the shard is stored; 1: some of it is not
    (or TileLang is missing); 2: its results would be kept nowhere."""
    from sphinx.application import Sphinx
    from sphinx.util.docutils import docutils_namespace, patch_docutils

    if cache_dir is not None:  # as a build would take it: the variable wins over conf.py
        os.environ["TLSTAGES_CACHE_DIR"] = str(cache_dir.resolve())
    label = f"shard {shard[0]}/{shard[1]}"
    status: TextIO = sys.stderr if verbose else io.StringIO()
    with tempfile.TemporaryDirectory(prefix="tlstages-shard-") as tmp, \
            patch_docutils(srcdir), docutils_namespace():
        app = Sphinx(str(srcdir), str(srcdir), str(Path(tmp, "out")), str(Path(tmp, "dt")),
                     "dummy", confoverrides={"tlstages_shard": f"{shard[0]}/{shard[1]}"},
                     status=status, warning=sys.stderr, freshenv=True)
        config = settings(app)
        destination = _destination(config, Path(tmp))
        try:
            if destination is None:
                print(f"tlstages lower-book: {label}: its results would be kept nowhere: "
                      "give a shared cache this job may write to (TLSTAGES_CACHE_URL and "
                      "TLSTAGES_CACHE_WRITE=1) or a local one (--cache-dir, "
                      "TLSTAGES_CACHE_DIR)", file=sys.stderr)
                return 2
            # Reading ends with env-updated, where the batch lowers this shard: Sphinx's
            # writing phase (every page resolved, and rendered) is not needed.
            app.builder.read()
        finally:
            # The remote's last writes, and the workers (a cold book may have started
            # them as the configuration was read) end here.
            app.events.emit("build-finished", None)
        state = build_state(app)
        if state is None:
            print(f"tlstages lower-book: {label}: nothing was lowered", file=sys.stderr)
            return 1
        mine = _shard_variants(all_directives(app.env), state.stamp, shard)
        missing = _store(config, state, mine, destination.startswith("local "), label)
        return _report(app.env.doc2path, label, mine, state, missing, destination,
                       out or sys.stdout)


def _destination(config: Settings, scratch: Path) -> str | None:
    """Where this shard's results go: the shared cache where this job may write, else a
    local cache that outlives the command; None where neither."""
    if config.cache_url and config.cache_write and not pull_request():
        return shown_url(config.cache_url)
    if not config.cache_dir.is_relative_to(scratch.resolve()):
        why = "; the shared cache is read-only here" if config.cache_url else ""
        return f"local {config.cache_dir}{why}"
    return None


def _shard_variants(specs: list[DirectiveSpec], stamp: str, shard: tuple[int, int]
                    ) -> Chosen:
    """This shard's variants by key, as the batch chose them."""
    wanted: dict[str, tuple[VariantSpec, DirectiveSpec]] = {}
    for spec in specs:
        for variant in spec.lowerings:
            wanted.setdefault(variant.key(stamp), (variant, spec))
    mine = select({key: variant for key, (variant, _) in wanted.items()}, stamp, shard)
    return {key: found for key, found in wanted.items() if key in mine}


def _store(config: Settings, state: BuildState, mine: Mapping[str, object], local: bool,
           label: str) -> list[str]:
    """The keys of ``mine`` not stored where the final build will look; an entry the
    build's remote writes dropped is written again from the local cache."""
    cache = state.cache
    stored = [key for key in mine if cache.path(key).is_file()]
    if local or not stored:
        return [key for key in mine if key not in set(stored)]
    errors: list[str] = []  # the first says why the shard is not stored
    try:
        import obstore
        from obstore.exceptions import AlreadyExistsError

        store = open_store(str(config.cache_url), config.cache_timeout)
    except Exception as exc:
        errors.append(_brief(exc))
        stored = []

    def there(key: str) -> bool:
        name = object_name(key)
        if errors:  # one failed request: the rest would fail (or time out) as well
            return False
        try:
            obstore.head(store, name)
            return True
        except FileNotFoundError:
            pass
        except Exception as exc:
            errors.append(_brief(exc))
            return False
        try:  # dropped, or the remote was off for a while: one more PUT, whole or absent
            obstore.put(store, name, pack(key, cache.path(key).read_bytes()),
                        mode="create")
        except AlreadyExistsError:
            pass  # another job wrote it meanwhile
        except Exception as exc:
            errors.append(_brief(exc))
            return False
        return True

    with ThreadPoolExecutor(PARALLEL) as pool:
        written = dict(zip(stored, pool.map(there, stored), strict=True))
    if errors:
        print(f"tlstages lower-book: {label}: remote cache {shown_url(str(config.cache_url))}:"
              f" {errors[0]}", file=sys.stderr)
    return [key for key in mine if not written.get(key)]


def _brief(exc: BaseException) -> str:
    """An exception's first line (obstore's messages carry a long debug dump)."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:300]


def _report(doc2path: Callable[..., Any], label: str, mine: Chosen, state: BuildState,
            missing: list[str], destination: str, out: TextIO) -> int:
    """The failed variants, in a build's words, then the shard's one line."""
    unavailable = 0
    failed: set[str] = set()  # counted apart from the lowered and the cached
    seconds = 0.0
    for key, (variant, spec) in mine.items():
        result = state.results.get(key)
        if result is None:
            continue
        if key in state.lowered:
            seconds += float(result.get("seconds", 0.0))
        failure = variant_failure(variant, result)
        if result.get("ok") or failure is None or spec.expects_failure(variant):
            continue
        kind, message = failure
        if kind == "unavailable":
            unavailable += 1
            continue
        failed.add(key)
        # Where a build's warning would point: a document line, or a :file: kernel's.
        where = spec.kernel_location(result["error"].get("line"))
        shown = where if isinstance(where, str) else f"{doc2path(where[0], False)}:{where[1]}"
        print(f"{shown}: {spec.name}: {variant.heading} failed to lower ({kind}): "
              f"{message}", file=sys.stderr)
    lowered = sum(1 for key in mine if key in state.lowered and key not in failed)
    cached = sum(1 for key in mine if key in state.results and key not in state.lowered
                 and key not in failed)
    stored_line = f"written to {destination}" if not missing else \
        f"{len(missing)} not stored in {destination}"
    print(f"{label}: {len(mine)} variants, {cached} already cached, {lowered} lowered "
          f"({seconds:.0f} s in workers), {len(failed)} failed, {stored_line}", file=out)
    if unavailable:
        print(f"tlstages lower-book: {label}: TileLang cannot lower here: {unavailable} "
              "variants not lowered", file=sys.stderr)
    out.flush()
    return 1 if missing or unavailable else 0
