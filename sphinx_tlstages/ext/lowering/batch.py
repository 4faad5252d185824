"""After reading: lower every variant of the project in one batch.

Runs on ``env-updated``, when every document has been read (and, with ``-j``, merged),
before :mod:`..checks.run` (a later priority on the same event). Variants are deduplicated by
key, taken from the cache where possible, and the misses lowered by the worker pool in
separate processes: this process never imports TileLang.
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from ...core.plan.shards import select
from ...core.plan.spec import DirectiveSpec, VariantSpec
from ...core.records import explain, snapshots
from ...core.records.places import records_folder
from ...core.results.result import Result, depends_on_machine, failure, failure_kind
from ...core.results.stamps import (
    TILELANG_TESTED,
    tilelang_stamp,
    tilelang_version,
    untested_tilelang,
)
from ...runner.launch import Job, default_jobs, start_server
from ...runner.pool import PoolStats, run_jobs
from ..cache.local import Cache
from ..cache.remote import Remote, open_store, shown_url
from ..collector import all_directives, project_directives
from ..config import Settings, pull_request
from ..messages import info, verbose, warn
from ..state import BuildState, build_state, settings, start_build
from .prestart import take

if TYPE_CHECKING:
    from sphinx.application import Sphinx
    from sphinx.environment import BuildEnvironment

    from ...runner.forkserver import ForkServer



def lower_project(app: Sphinx, env: BuildEnvironment) -> list[str]:
    """Lower what the project needs that the cache does not hold."""
    config = settings(app)
    if config.collect_only:
        return []
    specs = all_directives(env)
    stamp = tilelang_stamp()
    state = BuildState(stamp or "missing", tilelang_version(),
                       Cache(config.cache_dir, config.srcdir))
    start_build(app, state)
    wanted: dict[str, tuple[VariantSpec, DirectiveSpec]] = {}
    for spec in specs:
        for variant in spec.lowerings:  # the fit part's too
            key = variant.key(state.stamp)
            found = wanted.get(key)
            if found is None:
                wanted[key] = (variant, spec)
            elif variant.fingerprints and not found[0].fingerprints:
                wanted[key] = (variant, found[1])  # one page's snapshot needs them
    if config.shard is not None:  # tlstages lower-book --shard: this shard's variants only
        mine = select({key: variant for key, (variant, _) in wanted.items()}, state.stamp,
                      config.shard)
        wanted = {key: found for key, found in wanted.items() if key in mine}
    if not wanted:
        server, _ = take(app)
        if server is not None:
            server.close()
        return []
    started = time.perf_counter()
    if stamp is None:
        message = "TileLang is not installed in this environment; nothing could be lowered"
        warn(message, "tilelang")
        state.results = {key: failure("unavailable", message, None) for key in wanted}
    else:
        remote = state.remote = connect(config) if config.cache_url else None
        try:
            _lower(app, state, wanted, remote)
        finally:
            if remote is not None:
                remote.finish()
                _report_remote(remote, len(state.lowered))
            _report_local(state.cache)
        # Before any report: the record must say why even when the build then fails.
        _record_why(app, specs, state)
    if any(failure_kind(r) == "unavailable" for r in state.results.values()):
        # By name: a name two directives share is neither's to render from.
        filled = fill_from_snapshots(config.snapshot_dir, project_directives(env), state)
        if filled:
            info(f"tl-pipeline: {filled} variants rendered from committed snapshots")
        if config.strict:
            state.findings.error("tl-pipeline: TileLang could not lower here, so nothing "
                                 "in this build was verified", "tilelang")
    if any(not r.get("ok") for r in state.results.values()) and untested_tilelang(state.version):
        # Said once: the author should know the failure may be the upgrade's, not theirs.
        warn(f"TileLang {state.version} is newer than the newest this extension was tested "
             f"with ({TILELANG_TESTED[-1]}); a variant that fails to lower may fail because "
             "of it", "tilelang")
    state.variants, state.seconds = len(wanted), time.perf_counter() - started
    return []


def connect(config: Settings) -> Remote | None:
    """This build's remote level, or None (with a warning) where it cannot be used."""
    url = str(config.cache_url)
    try:
        store = open_store(url, config.cache_timeout)
    except ImportError as exc:
        needed = "boto3 (for AWS_PROFILE)" if exc.name == "boto3" else \
            "obstore (pip install 'sphinx-tlstages[cache]')"
        warn(f"remote cache {shown_url(url)}: not used, {needed} is not installed", "cache")
        return None
    except Exception as exc:
        warn(f"remote cache {shown_url(url)}: not used: {type(exc).__name__}: {exc}",
             "cache")
        return None
    why = pull_request()
    read_only = "" if config.cache_write and not why else \
        "read-only: pull request" if config.cache_write else "read-only"
    return Remote(url, store, config.cache_timeout, read_only)


def _report_remote(remote: Remote, lowered: int) -> None:
    """The remote's line, and what went wrong with it: information, not a warning, since
    the build lowered here what the remote could not give (a sick remote never fails a
    build; its errors are counted apart from misses, so it never looks like a cold one)."""
    info(f"tl-pipeline: {remote.line(lowered)}")
    counts = remote.counts
    if counts.errors:
        what = f"{counts.bad} bad entries" if counts.bad == counts.errors else \
            f"{counts.errors} failed requests" + (
                f" and bad entries ({counts.bad})" if counts.bad else "")
        info(f"tl-pipeline: remote cache {shown_url(remote.url)}: {what} "
             f"(first: {counts.first_error})"
             + (f"; switched off: {counts.off}" if counts.off else "")
             + "; what it could not give was lowered here")


def finish_remote(app: Sphinx, exception: BaseException | None) -> None:
    """``build-finished``: the pages' fragments written to the remote (within its budget),
    and the log's line about them."""
    state = build_state(app)
    if state is None or state.remote is None:
        return
    remote = state.remote
    remote.finish()
    counts = remote.counts
    if counts.fragments_hit or counts.fragments_missed or counts.fragments_written:
        info(f"tl-pipeline: {remote.fragments_line()}")


def _report_local(cache: Cache) -> None:
    """Entries of the local cache that could not be read or written: this machine's
    disk or permissions, which its owner can fix (the build itself goes on)."""
    if cache.problems:
        more = f" (and {len(cache.problems) - 1} more)" if len(cache.problems) > 1 else ""
        warn(f"local cache {cache.root}: {cache.problems[0]}{more}", "cache")
        cache.problems.clear()


def _from_remote(state: BuildState, remote: Remote | None, keys: list[str],
                 count_misses: bool = True) -> None:
    """Fill ``state.results`` with what the remote holds of ``keys`` (kept locally)."""
    if remote is None or not keys:
        return

    def accept(key: str, body: bytes) -> bool:
        result = state.cache.decode(key, body)
        if result is None:
            return False
        state.cache.put_raw(key, body)
        state.results[key] = result
        return True

    remote.fetch(keys, accept, count_misses)


def _lower(app: Sphinx, state: BuildState,
           wanted: dict[str, tuple[VariantSpec, DirectiveSpec]],
           remote: Remote | None = None) -> None:
    cache = state.cache
    jobs = []
    # A result that records pass changes holds all of one that does not: a variant that
    # records none takes its recording twin's, lowered in this batch or cached, rather
    # than being lowered a second time (key -> the twin's key, filled in at the end).
    twins: dict[str, str] = {}
    for key, (variant, _) in wanted.items():
        # A result without what the variant asks for (a snapshot's pass fingerprints) is
        # lowered again, here or by its twin.
        cached = state.results.get(key) or cache.get(key)
        if cached is not None and variant.answered_by(cached):
            state.results[key] = cached
        else:
            state.results.pop(key, None)
    _from_remote(state, remote, [key for key in wanted if key not in state.results])
    missing = {key: wanted[key][0].recording().key(state.stamp) for key in wanted
               if key not in state.results and not wanted[key][0].record_passes}
    _from_remote(state, remote, [twin for twin in missing.values()
                                 if twin not in wanted and cache.get(twin) is None],
                 count_misses=False)  # the variants' misses are counted already
    for key, (variant, spec) in wanted.items():
        cached = state.results.get(key)
        if cached is not None and not variant.answered_by(cached):
            del state.results[key]  # the remote's, without what this variant asks for
            cached = None
        twin = missing.get(key)  # asked for on a miss only: a warm build computes no second key
        if cached is None and twin is not None and twin not in wanted:
            cached = state.results.pop(twin, None) or cache.get(twin)
            if cached is not None:
                # Its own entry: the next lookups (and other machines) need no twin.
                raw = cache.put(key, cached)
                if raw is not None and remote is not None:
                    remote.write(key, raw)
        if cached is not None:
            state.results[key] = cached
            info(f"tl-pipeline: {spec.name} {variant.label} [{variant.target.label}]: "
                        "cached")
        elif twin is not None and twin in wanted:
            twins[key] = twin
        else:
            jobs.append(Job(key, variant.task(), spec.timeout or settings(app).timeout))
    by_key = {job.id: job for job in jobs}
    for key, twin in twins.items():  # the twin's job lowers for both: the longer limit
        job = by_key.get(twin)  # none where the twin was cached
        if job is not None:
            job.timeout = max(job.timeout, wanted[key][1].timeout or settings(app).timeout)
    try:
        _run(app, state, wanted, jobs, remote)
    finally:
        for key, twin in twins.items():
            if twin in state.results:
                # An entry of its own, as if lowered itself: a warm rebuild finds every
                # key on disk (and starts no worker), explain and the pages' digests
                # read it as any other.
                state.results[key] = state.results[twin]
                raw = cache.put(key, state.results[key])
                if raw is not None and remote is not None:
                    remote.write(key, raw)
                if twin in state.lowered:
                    state.lowered.add(key)
                variant, spec = wanted[key]
                verbose(f"tl-pipeline: {spec.name} {variant.label} "
                        f"[{variant.target.label}]: the result of the same variant "
                        "recording its pass changes")


def lower_with_fingerprints(app: Sphinx, state: BuildState, spec: DirectiveSpec) -> bool:
    """Lower again, taking the pass fingerprints, the variants of ``spec`` whose results
    lack them (lowered where no snapshot was to be written from them), before one is
    written or a drift explained. True when any was."""
    taking = [replace(variant, fingerprints=True) for variant in spec.variants]
    wanted = {variant.key(state.stamp): (variant, spec) for variant in taking
              if not variant.answered_by(state.result(variant))}
    if not wanted:
        return False
    info(f"tl-pipeline: {spec.name}: {len(wanted)} variants lowered again for the pass "
         "fingerprints its snapshot keeps")
    _lower(app, state, wanted)  # the remote's part of the build is over
    return True


def _run(app: Sphinx, state: BuildState, wanted: dict[str, tuple[VariantSpec, DirectiveSpec]],
         jobs: list[Job], remote: Remote | None) -> None:
    """Lower ``jobs`` in the worker pool, each result cached and kept as it comes."""
    cache = state.cache
    if not jobs:  # workers started while reading are not needed after all
        server, _ = take(app)
        if server is not None:
            server.close()
        return

    def done(job: Job, result: Result) -> None:
        variant, spec = wanted[job.id]
        raw = cache.put(job.id, result)
        if raw is not None and remote is not None:
            remote.write(job.id, raw)
        state.results[job.id] = result
        state.lowered.add(job.id)
        status = "lowered" if result.get("ok") else f"failed ({result['error']['kind']})"
        info(f"tl-pipeline: {spec.name} {variant.label} [{variant.target.label}]: "
                    f"{status} in {result.get('seconds', 0):.2f} s")

    config = settings(app)
    workers = config.jobs or default_jobs()
    server, _ = take(app)
    if server is None:
        server, note = start_server(config.keep_workers, [str(p) for p in config.python_path])
        verbose(f"tl-pipeline: {note}")
    try:
        stats = run_jobs(jobs, min(workers, len(jobs)), done, server=server)
    finally:
        if server is not None:
            server.close()
    if stats.unavailable:
        warn(f"TileLang cannot lower here: {stats.unavailable}", "tilelang")
    _report_workers(stats, server)


def _report_workers(stats: PoolStats, server: ForkServer | None) -> None:
    """Who lowered: kept workers reused (no TileLang import), forks, or spawned workers;
    and their memory."""
    answer = stats.server
    if server is not None and server.kept and server.reused and answer:
        up = time.time() - (answer.started or time.time())
        info(f"tl-pipeline: kept TileLang workers reused (server pid {answer.pid}, "
             f"up {up:.0f} s, build {answer.served} it served): "
             f"{stats.forked} forked, no TileLang import")
    if stats.fallback:
        info(f"tl-pipeline: workers spawned instead of forked: {stats.fallback}")
    if stats.recycled:
        info(f"tl-pipeline: {stats.recycled} workers retired after their memory grew "
             f"past the mark; fresh ones took over")
    imports = list(stats.import_seconds)
    if answer and not (server is not None and server.reused):
        imports.append(answer.import_seconds)
    verbose(f"tl-pipeline: {stats.workers} workers ({stats.forked} forked), "
            f"{len(imports)} TileLang imports ({sum(imports):.1f} s), "
            f"peak {stats.peak_rss_mb:.0f} MB per worker")


def _record_why(app: Sphinx, specs: list[DirectiveSpec], state: BuildState) -> None:
    """Rewrite the explain records of directives this build lowered or re-keyed; a
    rebuild that changed nothing (``-E`` included) reads one index and writes nothing."""
    folder = records_folder(Path(app.doctreedir), Path(app.outdir))
    keys = {spec.name: [v.key(state.stamp) for v in spec.variants] for spec in specs}
    before = explain.recorded_keys(folder)
    touched = [spec for spec in specs if before.get(spec.name) != keys[spec.name]
               or any(key in state.lowered for key in keys[spec.name])]
    explain.record(folder, touched, state.stamp, state.results, state.lowered)
    explain.write_index(folder, keys)

def fill_from_snapshots(folder: Path, specs: list[DirectiveSpec], state: BuildState) -> int:
    """Where nothing could be lowered, render from the committed snapshots; returns how
    many variants were filled."""
    filled = 0
    for spec in specs:
        try:
            old = snapshots.load(snapshots.golden_path(folder, spec.name))
        except ValueError:
            continue
        if old is None:
            continue
        for variant in spec.variants:
            key = variant.key(state.stamp)
            current = state.results.get(key)
            stored = old["variants"].get(variant.id)
            if stored is None or (current and current.get("ok")) or (
                    current and not depends_on_machine(current)):
                continue
            result = snapshots.as_result(stored, variant.num_stages)
            if result is not None:
                state.results[key] = result
                filled += 1
    return filled
