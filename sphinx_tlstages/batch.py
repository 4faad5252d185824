"""After reading: lower every variant of the project in one batch.

Runs on ``env-updated``, when every document has been read (and, with ``-j``, merged).
Variants are deduplicated by key, taken from the cache where possible, and the misses
lowered by the worker pool. Failures are warned about on every build, cached or not, so
``-W`` stays red until the kernel is fixed.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sphinx.util import logging

from . import explain, facts
from .assertions import check, namespace
from .bench_data import BenchSet, load_all, stale_variants
from .cache import Cache, cache_dir
from .collector import all_directives
from .errors import warn
from .pass_compare import unmatched
from .pool import Job, default_jobs, run_jobs
from .render import over_limit
from .spec import DirectiveSpec, VariantSpec, tilelang_stamp, tilelang_version
from .verify import Outcome, check_snapshots, fill_from_snapshots, strict_environment

if TYPE_CHECKING:
    from sphinx.application import Sphinx
    from sphinx.environment import BuildEnvironment

logger = logging.getLogger(__name__)


@dataclass
class BatchState:
    """What the renderer needs: results by variant key, and how to key a variant."""

    stamp: str
    version: str | None
    cache: Cache
    results: dict[str, dict[str, Any]] = field(default_factory=dict)
    outcome: Outcome | None = None
    bench: BenchSet = field(default_factory=BenchSet)
    lowered: set[str] = field(default_factory=set)  # keys lowered (not cached) this build

    def result(self, variant: VariantSpec) -> dict[str, Any]:
        found = self.results.get(variant.key(self.stamp))
        return found or facts.failure("unavailable", "this variant was not lowered", None)


def batch_state(app: Sphinx) -> BatchState | None:
    state: BatchState | None = getattr(app, "_tlstages_batch", None)
    return state


def _report_duplicates(env: BuildEnvironment, specs: list[DirectiveSpec]) -> list[DirectiveSpec]:
    """Warn about every reused :name: (naming both places); keep the first of each."""
    seen: dict[str, DirectiveSpec] = {}
    kept = []
    for spec in specs:
        first = seen.setdefault(spec.name, spec)
        if first is spec:
            kept.append(spec)
            continue
        warn(f"tl-pipeline name {spec.name!r} is already used at "
             f"{env.doc2path(first.docname, False)}:{first.lineno}; give this directive its "
             "own :name:",
             "name", location=(spec.docname, spec.lineno))
    return kept


def _jobs(app: Sphinx) -> int:
    configured = os.environ.get("TLSTAGES_JOBS") or app.config.tlstages_jobs
    return max(1, int(configured)) if configured else default_jobs()


def lower_project(app: Sphinx, env: BuildEnvironment) -> list[str]:
    """Lower what the project needs; return documents whose results changed."""
    if app.config.tlstages_collect_only:
        return []
    specs = _report_duplicates(env, all_directives(env))
    stamp = tilelang_stamp()
    cache = Cache(cache_dir(app.config.tlstages_cache_dir, app.confdir, app.doctreedir))
    state = BatchState(stamp or "missing", tilelang_version(), cache)
    app._tlstages_batch = state  # type: ignore[attr-defined]
    wanted: dict[str, tuple[VariantSpec, DirectiveSpec]] = {}
    for spec in specs:
        for variant in spec.variants:
            wanted.setdefault(variant.key(state.stamp), (variant, spec))
    if not wanted:
        return []
    started = time.perf_counter()
    if stamp is None:
        message = "TileLang is not installed in this environment; nothing could be lowered"
        warn(message, "tilelang")
        state.results = {key: facts.failure("unavailable", message, None) for key in wanted}
    else:
        _lower(app, state, wanted)
        # Before any report: the record must say why even when the build then fails.
        _record_why(app, specs, state)
    if any(r["error"]["kind"] == "unavailable" for r in state.results.values()
           if not r.get("ok")):
        filled = fill_from_snapshots(app, specs, state)
        if filled:
            logger.info(f"tl-pipeline: {filled} variants rendered from committed snapshots")
        if strict_environment():
            logger.error("tl-pipeline: TileLang could not lower here, so nothing in this build "
                         "was verified", type="tlstages", subtype="tilelang")
            app.statuscode = 1
    failed = _report_variants(specs, state)
    state.outcome = check_snapshots(app, specs, state)
    state.outcome.failures += _check_asserts(specs, state)
    _check_pass_names(specs, state)
    _attach_bench(app, specs, state)
    logger.info(f"tl-pipeline: {len(wanted)} variants, {len(state.lowered)} lowered, "
                f"{len(wanted) - len(state.lowered)} cached, {failed} failed, "
                f"{time.perf_counter() - started:.1f} s")
    return _changed_documents(env, specs, state)


def _lower(app: Sphinx, state: BatchState,
           wanted: dict[str, tuple[VariantSpec, DirectiveSpec]]) -> None:
    cache = state.cache
    jobs = []
    for key, (variant, spec) in wanted.items():
        cached = cache.get(key)
        if cached is not None:
            state.results[key] = cached
            logger.info(f"tl-pipeline: {spec.name} {variant.label} [{variant.target.label}]: "
                        "cached")
        else:
            jobs.append(Job(key, variant.payload(), spec.timeout or app.config.tlstages_timeout))
    if not jobs:
        return

    def done(job: Job, result: dict[str, Any]) -> None:
        variant, spec = wanted[job.id]
        cache.put(job.id, result)
        state.results[job.id] = result
        state.lowered.add(job.id)
        status = "lowered" if result.get("ok") else f"failed ({result['error']['kind']})"
        logger.info(f"tl-pipeline: {spec.name} {variant.label} [{variant.target.label}]: "
                    f"{status} in {result.get('seconds', 0):.2f} s")

    stats = run_jobs(jobs, min(_jobs(app), len(jobs)), done)
    if stats.unavailable:
        warn(f"TileLang cannot lower here: {stats.unavailable}", "tilelang")
    logger.verbose(f"tl-pipeline: {stats.workers} workers, peak {stats.peak_rss_mb:.0f} MB each")


def _record_why(app: Sphinx, specs: list[DirectiveSpec], state: BatchState) -> None:
    """Rewrite the explain records of directives this build lowered or re-keyed; a
    rebuild that changed nothing (``-E`` included) reads one index and writes nothing."""
    folder = Path(app.doctreedir)
    keys = {spec.name: [v.key(state.stamp) for v in spec.variants] for spec in specs}
    before = explain.recorded_keys(folder)
    touched = [spec for spec in specs if before.get(spec.name) != keys[spec.name]
               or any(key in state.lowered for key in keys[spec.name])]
    explain.record(folder, touched, state.stamp, state.results, state.lowered)
    explain.write_index(folder, keys)


def _report_variants(specs: list[DirectiveSpec], state: BatchState) -> int:
    """Warn about each failed variant (over its shared-memory limit counts as failed) and
    each broken ``:expect-error:``; return how many variants failed."""
    failed = 0
    for spec in specs:
        for variant in spec.variants:
            result = state.result(variant)
            failure = variant_failure(variant, result)
            failed += failure is not None
            name, stages, what = spec.name, variant.num_stages, variant.heading
            if failure is None or failure[0] == "unavailable":  # that is said once
                if stages in spec.expect_error and failure is None:
                    warn(f"{name}: {what} lowered, but :expect-error: says it "
                         "must fail", "lowering", location=(spec.docname, spec.lineno))
                continue
            kind, message = failure
            if stages in spec.expect_error:
                pattern = spec.expect_pattern
                if pattern and not re.search(pattern, message):
                    warn(f"{name}: {what} failed as expected, but its message "
                         f"does not match {pattern!r}: {message}", "lowering",
                         location=(spec.docname, spec.lineno))
            elif kind == "limit":
                warn(f"{name}: {what} {message}", "limit",
                     location=(spec.docname, spec.lineno))
            else:
                warn(f"{name}: {what} failed to lower ({kind}): {message}",
                     "lowering", location=spec.kernel_location(result["error"].get("line")))
    return failed


def variant_names(variants: list[VariantSpec]) -> str:
    """``num_stages 2 3``, or each variant's heading in a matrix."""
    if all(v.only_num_stages for v in variants):
        return "num_stages " + " ".join(str(v.num_stages) for v in variants)
    return "; ".join(v.heading for v in variants)


def variant_failure(variant: VariantSpec,
                    result: dict[str, Any]) -> tuple[str, str] | None:
    """(kind, message) when a variant failed, exceeding its shared memory included."""
    if not result.get("ok"):
        return result["error"]["kind"], result["error"]["message"]
    limit = variant.target.shared_memory_limit
    if over_limit(result, limit):
        return "limit", (f"needs {facts.shared_bytes(result):,} B of shared memory per block; "
                         f"{variant.target.label} allows {limit:,} B")
    return None


def _check_asserts(specs: list[DirectiveSpec], state: BatchState) -> int:
    """Evaluate every :assert: line on every lowered variant; errors fail the build."""
    failures = 0
    for spec in specs:
        for line, expression in spec.asserts:
            for variant in spec.variants:
                result = state.result(variant)
                if not result.get("ok"):
                    continue
                why = check(expression, namespace(result, variant))
                if why is not None:
                    failures += 1
                    logger.error(f"{spec.name}: {variant.heading}: assertion "
                                 f"{expression!r} {why}", location=(spec.docname, line),
                                 type="tlstages", subtype="assert")
    return failures


def _check_pass_names(specs: list[DirectiveSpec], state: BatchState) -> None:
    """A :passes: name that no run matches is a typo or a pass of another target."""
    for spec in specs:
        logs = [r["passes"] for r in map(state.result, spec.variants) if r.get("passes")]
        if not spec.passes or not logs:
            continue
        for selector in unmatched(spec.passes, logs):
            names = sorted({rec["name"] for log in logs for rec in log})
            close = difflib.get_close_matches(selector.split("#")[0], names, n=3, cutoff=0.5)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            warn(f"{spec.name}: :passes: {selector} matches no pass run of any variant{hint}",
                 "option", location=(spec.docname, spec.lineno))


def _attach_bench(app: Sphinx, specs: list[DirectiveSpec], state: BatchState) -> None:
    """Load the bench files once; warn about malformed files and stale numbers."""
    folder = Path(app.srcdir, app.config.tlstages_bench_dir)
    state.bench = load_all(folder, app.config.tlstages_bench_gpus)
    for error in state.bench.errors:
        warn(f"bench file ignored: {error}", "bench")
    if app.config.tlstages_bench_stale not in ("mark", "hide"):
        warn("tlstages_bench_stale must be 'mark' or 'hide'", "bench")
    for spec in specs:
        for data, entry in state.bench.for_directive(spec.name):
            stale = stale_variants(list(spec.variants), entry, state.version)
            if stale:
                warn(f"{spec.name}: the numbers measured on {data['gpu']['name']} for "
                     f"{variant_names(stale)} are for another kernel or "
                     "TileLang; run tlstages bench again", "bench",
                     location=(spec.docname, spec.lineno))


def _changed_documents(env: BuildEnvironment, specs: list[DirectiveSpec],
                       state: BatchState) -> list[str]:
    """Documents Sphinx did not re-read whose variants now have other keys (a TileLang
    upgrade, say): they must be written again."""
    previous: dict[str, list[str]] = getattr(env, "tlstages_keys", {})
    current: dict[str, list[str]] = {}
    for spec in specs:
        keys = current.setdefault(spec.docname, [])
        keys.extend(v.key(state.stamp) for v in spec.variants)
        # Attached numbers are not Sphinx dependencies: a new bench file must rewrite too.
        keys.append(hashlib.sha256(json.dumps(state.bench.for_directive(spec.name),
                                              sort_keys=True).encode()).hexdigest())
    env.tlstages_keys = current  # type: ignore[attr-defined]
    return sorted(doc for doc, keys in current.items() if previous.get(doc) != keys)
