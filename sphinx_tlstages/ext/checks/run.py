"""After lowering: every check a build makes on the results, and the exit status.

Runs on ``env-updated`` after :mod:`..lowering.batch` (a later priority): reused names, failed
variants and ``:expect-error:``, the snapshots (:mod:`.snapshots`), ``:assert:``,
``:passes:`` names, the attached benchmark numbers. Failures are reported on every build,
cached or not, so ``-W`` stays red until the kernel is fixed; errors are counted in the
state's outcome, which fails the build on ``build-finished``.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import re
from typing import TYPE_CHECKING, Any

from ...core.claims import check, names_used, namespace, one_line
from ...core.hardware.fit import fit_names, fit_table
from ...core.hazards.check import cuda_words
from ...core.parts import shows
from ...core.plan.spec import DirectiveSpec, VariantSpec
from ...core.plan.variants import merge_unchanged, unchanged_sentence
from ...core.records.bench_data import attach, load_all, other_headers, provenance
from ...core.records.drift import Finding
from ...core.records.timeline_data import attach as attach_timelines
from ...core.records.timeline_data import load_timelines
from ...core.results.pass_compare import unmatched
from ...core.results.result import Result, over_limit, shared_bytes
from ...core.results.unread import unread
from ..collector import all_directives, all_unread, project_directives
from ..messages import error, info
from ..state import BuildState, build_state, settings
from .hardware import attach_hardware
from .snapshots import check_snapshots

if TYPE_CHECKING:
    from sphinx.application import Sphinx
    from sphinx.environment import BuildEnvironment

def check_project(app: Sphinx, env: BuildEnvironment) -> list[str]:
    """Run every check; return the documents whose results changed."""
    state = build_state(app)
    if state is None or settings(app).collect_only or settings(app).shard:
        return []  # a shard's build (tlstages lower-book) only fills the caches
    specs = all_directives(env)  # each renders under its own identity, a shared name too
    report = state.findings.start(app, len(specs), settings(app).strict)
    _report_duplicates(env, specs, state)
    report.built_with = state.version
    _report_variants(specs, state)
    report.variants_failed = _unexpected_failures(specs, state)
    if state.variants:
        info(f"tl-pipeline: {_variant_counts(specs, state)}, {state.seconds:.1f} s")
    _report_unchanged(specs, state)
    if settings(app).toolkit != "none":  # turned off on purpose: the part says so
        _report_toolkit(specs, state, settings(app).strict)
    # A name two directives share belongs to neither: no snapshot is checked, written or
    # removed for it, nor are bench numbers attached by it.
    unique = project_directives(env)
    check_snapshots(app, unique, all_unread(env), state,
                    frozenset({spec.name for spec in specs} - {spec.name for spec in unique}))
    _check_asserts(specs, state)
    _report_hazards(specs, state)
    _report_unread(specs, state)
    _check_pass_names(specs, state)
    _attach_bench(app, unique, state)
    attach_hardware(app, unique, state)
    _attach_timelines(app, unique, state)
    return _changed_documents(env, specs, state)


def _report_duplicates(env: BuildEnvironment, specs: list[DirectiveSpec],
                       state: BuildState) -> None:
    """Every :name: two directives share: an error at each, naming the others; none of
    them is checked against a snapshot until one is renamed, and the pages say so."""
    by_name: dict[str, list[DirectiveSpec]] = {}
    for spec in specs:
        by_name.setdefault(spec.name, []).append(spec)
    state.duplicates = {}
    for name, shared in by_name.items():
        if len(shared) < 2:
            continue
        for spec in shared:
            others = [f"{env.doc2path(other.docname, False)}:{other.lineno}"
                      for other in shared if other is not spec]
            said = (f"tl-pipeline name {name!r} is also used at {', '.join(others)}; give "
                    f"each directive its own :name: (neither is checked against the snapshot "
                    f"{name}.json, nor is one written, until then)")
            state.duplicates[(spec.docname, spec.serial)] = said
            state.findings.error(said, "name", location=(spec.docname, spec.lineno))


def _variant_counts(specs: list[DirectiveSpec], state: BuildState) -> str:
    """``11 variants, 8 lowered, 0 cached, 3 failed``: each distinct variant counted
    once, as lowered in this build, read from the cache, or failed (either way: ``(1 of
    them cached)``)."""
    outcome: dict[str, bool] = {}
    for spec in specs:
        for variant in spec.variants:
            failure = variant_failure(variant, state.result(variant))
            outcome[variant.key(state.stamp)] = failure is None
    failed = [key for key, ok in outcome.items() if not ok]
    lowered = sum(1 for key, ok in outcome.items() if ok and key in state.lowered)
    cached = sum(1 for key, ok in outcome.items() if ok and key not in state.lowered)
    from_cache = sum(1 for key in failed if key not in state.lowered)
    return (f"{len(outcome)} variant{'' if len(outcome) == 1 else 's'}, {lowered} lowered, "
            f"{cached} cached, {len(failed)} failed"
            + (f" ({from_cache} of them cached)" if from_cache else ""))


def _report_variants(specs: list[DirectiveSpec], state: BuildState) -> None:
    """Warn about each failed variant (over its shared-memory limit counts as failed) and
    each broken ``:expect-error:``."""
    for spec in specs:
        for variant in spec.variants:
            result = state.result(variant)
            failure = variant_failure(variant, result)
            name, what = spec.name, variant.heading
            expected = spec.expects_failure(variant)
            if failure is None or failure[0] == "unavailable":  # that is said once
                if expected and failure is None:
                    state.findings.warn(f"{name}: {what} lowered, but :expect-error: says it "
                                        "must fail", "lowering",
                                        location=(spec.docname, spec.lineno))
                continue
            kind, message = failure
            if expected:
                pattern = spec.expect_pattern
                if pattern and not re.search(pattern, message):
                    state.findings.warn(f"{name}: {what} failed as expected, but its message "
                                        f"does not match {pattern!r}: {message}", "lowering",
                                        location=(spec.docname, spec.lineno))
            elif kind == "limit":
                state.findings.warn(f"{name}: {what} {message}", "limit",
                                    location=(spec.docname, spec.lineno))
            else:
                state.findings.warn(f"{name}: {what} failed to lower ({kind}): {message}",
                                    "lowering",
                                    location=spec.kernel_location(result["error"].get("line")))


def _unexpected_failures(specs: list[DirectiveSpec], state: BuildState) -> int:
    """The variants that failed and that no ``:expect-error:`` expects (the drift
    report's verdict counts them apart from those it compared)."""
    count = 0
    for spec in specs:
        for variant in spec.variants:
            failure = variant_failure(variant, state.result(variant))
            count += failure is not None and failure[0] != "unavailable" \
                and not spec.expects_failure(variant)
    return count


def _report_unchanged(specs: list[DirectiveSpec], state: BuildState) -> None:
    """Say in the build log (not as a warning: nothing is wrong) where num_stages changed
    nothing; the page says it too, and shows those variants once."""
    for spec in specs:
        rows = [(v, state.result(v)) for v in spec.variants]
        for variant in merge_unchanged(rows)[1]:
            state.findings.note(f"tl-pipeline: {spec.name}: {unchanged_sentence(variant)}")


def _report_toolkit(specs: list[DirectiveSpec], state: BuildState, strict: bool) -> None:
    """One warning per build where a page wants the resources part and no NVIDIA
    compiler was found (under ``CI`` or ``READTHEDOCS`` an error: the page would show
    less than it says, and a CI build is where the part must be built), and one per
    directive with variants the part has no figures for (nvcc failed, or the CUDA holds
    several kernels)."""
    missing = []
    for spec in specs:
        wanted = [v for v in spec.variants if v.target.kind == "cuda"
                  and (shows(spec, "resources") or v.toolkit is not None)]
        if not wanted:
            continue
        if any(v.toolkit is None for v in wanted):
            missing.append(spec)
            continue
        errors = {state.result(v).get("resources_error") for v in wanted} - {None}
        if errors:
            state.findings.warn(f"{spec.name}: no resources figures for {len(errors)} "
                                f"variant(s): {sorted(map(str, errors))[0]}",
                                "toolkit", location=(spec.docname, spec.lineno))
    if not missing:
        return
    first = missing[0]
    said = (f"no NVIDIA compiler found: {len(missing)} directive(s) show resources without "
            "registers, spills or occupancy (pip install sphinx-tlstages[resources], or set "
            "tlstages_toolkit to an nvcc)")
    if strict:
        state.findings.error(said, "toolkit", location=(first.docname, first.lineno))
    else:
        state.findings.warn(said, "toolkit", location=(first.docname, first.lineno))


def variant_names(variants: list[VariantSpec]) -> str:
    """``num_stages 2 3``, or each variant's heading in a matrix."""
    if all(v.only_num_stages for v in variants):
        return "num_stages " + " ".join(str(v.num_stages) for v in variants)
    return "; ".join(v.heading for v in variants)


def variant_failure(variant: VariantSpec,
                    result: Result) -> tuple[str, str] | None:
    """(kind, message) when a variant failed, exceeding its shared memory included."""
    if not result.get("ok"):
        return result["error"]["kind"], result["error"]["message"]
    limit = variant.target.shared_memory_limit
    if over_limit(result, limit):
        return "limit", (f"needs {shared_bytes(result):,} B of {variant.target.memory}; "
                         f"{variant.target.label} allows {limit:,} B")
    return None


def _check_asserts(specs: list[DirectiveSpec], state: BuildState) -> None:
    """Evaluate every :assert: line on every lowered variant; errors fail the build."""
    for spec in specs:
        # Each variant's names read once for all its claims (the pass counts alone, read
        # for each claim again, were most of the checks' time on a warm build); a copy for
        # each claim, so that one claim cannot change what the next one reads.
        names: dict[int, dict[str, Any]] = {}
        # The fit table, where a claim names it: lowered here in full, or not checked (a
        # page built from a snapshot lacks the lowerings beyond the page's own).
        table = fit_table(spec.fit, state.result) if spec.fit is not None \
            and "fit" in names_used(e for _, e in spec.asserts) else None
        for line, expression in spec.asserts:
            said: set[str] = set()
            if "fit" in names_used((expression,)) and (table is None or not table.complete):
                state.findings.note(f"{spec.name}: assertion {expression!r} not checked: "
                                    "TileLang could not lower here the targets the fit "
                                    "table reads beyond the page's own",
                                    location=(spec.docname, line))
                continue
            for index, variant in enumerate(spec.variants):
                result = state.result(variant)
                if not result.get("ok"):
                    continue
                if index not in names:
                    names[index] = namespace(result, variant, spec.kernel_line or 1)
                    if table is not None:
                        names[index]["fit"] = fit_names(table, variant)
                why = check(expression, dict(names[index]))
                if why is not None and not (why.startswith("uses ") and why in said):
                    said.add(why)  # an unknown name: once, not once per variant
                    state.findings.error(
                        f"{spec.name}: {variant.heading}: assertion {expression!r} {why}",
                        "assert", location=(spec.docname, line), spec=spec,
                        drift=[Finding("assert", variant.heading,
                                       f"{expression!r} {one_line(why)}", line)])


def _report_hazards(specs: list[DirectiveSpec], state: BuildState) -> None:
    """Warn about each variant the hazard check flags (a note where ``:expect-hazard:``
    lists it); a listed variant it does not flag is an error."""
    for spec in specs:
        for variant in spec.variants:
            result = state.result(variant)
            found = result.get("hazards")
            if not result.get("ok") or found is None:
                continue  # a failed variant, or a page built from an older snapshot
            where = (spec.docname, spec.lineno)
            texts = [f["text"] + _statements(spec, f) for f in found["findings"]]
            said = f"{spec.name}: {variant.heading}: {found['text']}: " + "; ".join(texts)
            if not spec.expects_hazard(variant):
                if found["verdict"] == "hazard":
                    state.findings.warn(said, "hazard", location=where, spec=spec, drift=[
                        Finding("hazard", variant.heading,
                                f"{found['text']}: " + "; ".join(texts))])
                continue
            pattern = spec.expect_hazard_pattern
            if found["verdict"] != "hazard":
                why = f"the check says {found['text']!r}"
            elif pattern and not any(re.search(pattern, f"{f['kind']} on {f['buffer']}: "
                                               f"{f['text']}") for f in found["findings"]):
                why = f"no finding matches {pattern!r} ({'; '.join(texts)})"
            else:
                state.findings.note(f"{said} (expected by :expect-hazard:)", location=where)
                continue
            state.findings.error(f"{spec.name}: {variant.heading}: :expect-hazard: lists "
                                 f"it, but {why}", "hazard", location=where)


def _report_unread(specs: list[DirectiveSpec], state: BuildState) -> None:
    """Warn, once per directive and reason, where a lowered variant's page shows less than
    it should (a figure not drawn, a statement on no kernel line): the page says the same
    where the part would be."""
    for spec in specs:
        reasons: dict[str, list[VariantSpec]] = {}

        def where(line: int, spec: DirectiveSpec = spec) -> str:
            # As the page numbers it: the document's line, or the :file:'s own.
            if spec.kernel_line is None:
                return f"{spec.variants[0].source_name}:{line}"
            return f"line {spec.kernel_line + line - 1}"

        for variant in spec.variants:
            for reason in unread(state.result(variant), where):
                reasons.setdefault(reason, []).append(variant)
        for reason, variants in reasons.items():
            state.findings.warn(f"{spec.name}: {variant_names(variants)}: {reason}",
                                "unread", location=(spec.docname, spec.lineno))


def _statements(spec: DirectiveSpec, finding: dict[str, Any]) -> str:
    """`` (T.copy(A[k + 1, :], S) at line 14; ...)``: where a finding's buffer is named
    in the pipelined loop."""
    said = []
    for statement in finding.get("statements", []):
        where = spec.kernel_location(statement["line"])
        line = f"line {where[1]}" if isinstance(where, tuple) else where
        cuda = cuda_words(statement.get("cuda_lines", []))
        said.append(f"{statement['text']} at {line}" + (f", {cuda}" if cuda else ""))
    return f" ({'; '.join(said)})" if said else ""


def _check_pass_names(specs: list[DirectiveSpec], state: BuildState) -> None:
    """A :passes: name that no run matches is a typo or a pass of another target."""
    for spec in specs:
        logs = [r["passes"] for r in map(state.result, spec.variants) if r.get("passes")]
        if not spec.passes or not logs:
            continue
        for selector in unmatched(spec.passes, logs):
            names = sorted({rec["name"] for log in logs for rec in log})
            close = difflib.get_close_matches(selector.split("#")[0], names, n=3, cutoff=0.5)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            state.findings.warn(f"{spec.name}: :passes: {selector} matches no pass run of "
                                f"any variant{hint}", "option",
                                location=(spec.docname, spec.lineno))


def _attach_bench(app: Sphinx, specs: list[DirectiveSpec], state: BuildState) -> None:
    """Load the bench files once; warn about malformed files and stale numbers (their
    kernel's inputs or code changed), and tell numbers measured with another TileLang."""
    config = settings(app)
    state.bench = load_all(config.bench_dir, config.bench_gpus)
    for problem in state.bench.errors:
        state.findings.warn(f"bench file ignored: {problem}", "bench")
    for spec in specs:
        state.attached[spec.name] = attach(spec, state.bench, state.result)
        for data, numbers, stale_ids in state.attached[spec.name]:
            said = provenance(spec, data, state.version)
            if said is not None:  # provenance, not a problem: the page says it too
                state.findings.note(f"{spec.name}: numbers from {data['gpu']['name']}: {said}",
                                    location=(spec.docname, spec.lineno))
            headers = other_headers(spec, data, numbers, state.result)
            if headers:
                state.findings.note(f"{spec.name}: the numbers from {data['gpu']['name']} for "
                                    f"{variant_names(headers)} were timed with other TileLang "
                                    "template headers than this build's; the code the page "
                                    "shows is the same (provenance, not a change)",
                                    location=(spec.docname, spec.lineno))
            stale = [v for v in spec.variants if v.id in stale_ids]
            if stale:
                state.findings.warn(
                    f"{spec.name}: the numbers measured on {data['gpu']['name']} for "
                    f"{variant_names(stale)} are for another kernel or code; run tlstages "
                    "bench again", "bench", location=(spec.docname, spec.lineno), spec=spec,
                    drift=[Finding("stale", variant_names(stale),
                                   f"the numbers measured on {data['gpu']['name']} are for "
                                   "another kernel or TileLang; run tlstages bench again")])


def _attach_timelines(app: Sphinx, specs: list[DirectiveSpec], state: BuildState) -> None:
    """Load the timeline files once; warn about malformed files and stale recordings (the
    code the page lists changed since), as for benchmark numbers."""
    config = settings(app)
    state.timelines = load_timelines(config.timeline_dir, config.bench_gpus)
    for problem in state.timelines.errors:
        state.findings.warn(f"timeline file ignored: {problem}", "timeline")
    for spec in specs:
        state.attached_timelines[spec.name] = attach_timelines(spec, state.timelines,
                                                               state.result)
        for data, _, stale_ids in state.attached_timelines[spec.name]:
            stale = [v for v in spec.variants if v.id in stale_ids]
            if stale:
                state.findings.warn(
                    f"{spec.name}: the timeline recorded on {data['gpu']['name']} for "
                    f"{variant_names(stale)} is of other code than the page lists; run "
                    "tlstages timeline again", "timeline",
                    location=(spec.docname, spec.lineno), spec=spec,
                    drift=[Finding("stale", variant_names(stale),
                                   f"the timeline recorded on {data['gpu']['name']} is of "
                                   "other code; run tlstages timeline again")])


def _changed_documents(env: BuildEnvironment, specs: list[DirectiveSpec],
                       state: BuildState) -> list[str]:
    """Documents Sphinx did not re-read whose variants now have other keys (a TileLang
    upgrade, say): they must be written again."""
    previous: dict[str, list[str]] = getattr(env, "tlstages_keys", {})
    current: dict[str, list[str]] = {}
    for spec in specs:
        keys = current.setdefault(spec.docname, [])
        keys.extend(v.key(state.stamp) for v in spec.lowerings)
        # A helper module edited re-lowers a variant under the same key: its result's
        # content is what the page shows.
        keys.extend(state.cache.digests.get(v.key(state.stamp), "") for v in spec.lowerings)
        # A name shared with another page's directive since: its box must be written.
        keys.append(state.duplicates.get((spec.docname, spec.serial), ""))
        # Attached numbers, hardware records and timelines are not Sphinx dependencies: a
        # new file or record must rewrite too.
        attached = [state.attached.get(spec.name, []),
                    state.hardware_attached.get(spec.name, []),
                    state.attached_timelines.get(spec.name, [])]
        keys.append(hashlib.sha256(json.dumps(attached, sort_keys=True).encode()).hexdigest())
    env.tlstages_keys = current  # type: ignore[attr-defined]
    return sorted(doc for doc, keys in current.items() if previous.get(doc) != keys)


def set_exit_status(app: Sphinx, exception: BaseException | None) -> None:
    """``build-finished``: a failed check fails the build, with or without ``-W``; the
    closing line counts them by what they are."""
    state = build_state(app)
    if state is not None and state.findings.failures:
        error(f"tl-pipeline: {state.findings.failures} check(s) failed: "
              f"{state.findings.failed_kinds()}", "failed")
        app.statuscode = 1
