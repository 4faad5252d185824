"""Golden snapshots: a directive's lowering facts as reviewable JSON in the source tree.

One file per directive ``:name:``; per variant the facts its page reads (declared in
:mod:`..results.fact_table`: the schedule, shared buffers, sync counts, the normalised CUDA as one
JSON string per line so that a review diff is small, ...), plus the TileLang version and
target. Stable key order, no timestamps, no document line numbers: prose added above a
directive, or the directive moved, changes nothing stored. The layout is
``variants`` -> id -> fact -> value in every schema; a later schema only adds facts.
What a build does with them (records, compares, updates; fails or notes) is the snapshot
policy's to decide (:mod:`.snapshot_policy`), from the helpers here.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from ...version import __version__
from ..claims import names_used
from ..files import write_if_changed
from ..parts import shown
from ..plan.spec import DirectiveSpec
from ..results.fact_table import ALWAYS, BY_NAME, PROVENANCE, REQUIRED, read_by
from ..results.pass_compare import longest, numbered
from ..results.passes import counts, recorded
from ..results.result import RESULT_SCHEMA, Result, depends_on_machine, validate

PENDING = ".pending.json"
MAX_SNAPSHOT_BYTES = 64 << 20


def kept(spec: DirectiveSpec) -> list[str]:
    """The facts a directive's snapshot keeps: those a part it shows or a claim reads."""
    return read_by(shown(spec), names_used(e for _, e in spec.asserts))


def counted(spec: DirectiveSpec) -> list[str]:
    """The pass runs (``tl.Simplify#3``) whose counts a ``passes[...]`` claim reads."""
    return numbered((), (e for _, e in spec.asserts))


def lacks(snapshot: dict[str, Any], spec: DirectiveSpec) -> list[str]:
    """The facts the page reads that ``snapshot`` does not guard, as it spells them: a
    lowered variant without one (recorded before the fact existed, or before the page
    showed it), or ``pass_counts`` without a run a claim names."""
    runs = counted(spec)
    wanted = kept(spec)  # once, not once per variant: it parses every claim
    missing: dict[str, None] = {}
    for variant in snapshot.get("variants", {}).values():
        if not isinstance(variant, dict) or "error" in variant:
            continue
        for name in wanted:
            if name in PROVENANCE:  # explains a drift; guards nothing the page shows
                continue
            value = variant.get(name)
            if name not in variant or (name == "pass_counts" and isinstance(value, dict)
                                       and not set(runs) <= value.keys()):
                missing[name] = None
    return list(missing)


def reader(spec: DirectiveSpec, fact: str) -> str:
    """Who on the page reads ``fact``, in words: ``the gemm part``, ``:assert: gemm``."""
    parts = [p for p in shown(spec) if p in BY_NAME[fact].parts]
    if parts and parts[0] != ALWAYS:
        return f"the {parts[0]} part"
    if parts:
        return "the summary"
    used = names_used(e for _, e in spec.asserts) & set(BY_NAME[fact].names)
    return f":assert: {', '.join(sorted(used))}"


def unguarded(spec: DirectiveSpec, snapshot: dict[str, Any], path: Path) -> str | None:
    """The sentence saying which shown facts ``snapshot`` (at ``path``) does not keep,
    or None when it guards every one."""
    missing = lacks(snapshot, spec)
    if not missing:
        return None
    schema = snapshot.get("schema")
    said = "; ".join(f"{fact} (read by {reader(spec, fact)}"
                     + (f"; a fact since result schema {BY_NAME[fact].since}, the snapshot "
                        f"is schema {schema})" if isinstance(schema, int)
                        and BY_NAME[fact].since > schema else ")")
                     for fact in missing)
    return f"{spec.name}: {path} does not keep {said}, so nothing checks what the page shows"


def golden_path(folder: Path, name: str) -> Path:
    return folder / f"{name}.json"


def pending_path(folder: Path, name: str) -> Path:
    return folder / f"{name}{PENDING}"


def report_path(path: Path, srcdir: Path) -> str:
    """A snapshot's path as a report names it: relative to the source folder (never a
    path of this machine), or its name where the folder lies outside the sources."""
    try:
        return path.relative_to(srcdir).as_posix()
    except ValueError:  # tlstages_snapshot_dir outside the sources: its name
        return path.name


def stored(folder: Path) -> list[tuple[str, Path, bool]]:
    """(directive name, path, is it pending) of every snapshot file in ``folder``."""
    if not folder.is_dir():
        return []
    found = []
    for path in sorted(folder.glob("*.json")):
        pending = path.name.endswith(PENDING)
        name = path.name.removesuffix(PENDING) if pending else path.name.removesuffix(".json")
        found.append((name, path, pending))
    return found


def _variant(result: Result, facts: list[str], runs: list[str]) -> dict[str, Any]:
    """A variant as its snapshot keeps it: the ``facts`` the page reads, nothing else."""
    if not result.get("ok"):
        return {"error": result["error"]["message"]}
    found: dict[str, Any] = {k: result[k] for k in facts if k in result}  # type: ignore[literal-required]
    if "cuda" in found:
        found["cuda"] = result["cuda"].splitlines()
    if "pass_counts" in facts:
        # Only the runs a claim names, null where this pipeline has no such run: the
        # other runs are provenance, and an upgrade that changes nothing shown is green.
        records = result.get("passes") or []
        have = counts(records) if recorded(records) else result.get("pass_counts") or {}
        found["pass_counts"] = {run: have.get(run) for run in runs}
    return found


def describe(variant_id: str) -> str:
    """A snapshot's variant key in words: ``num_stages=2``, or the matrix key as it is."""
    return variant_id if "=" in variant_id else f"num_stages={variant_id}"


def _order(variant_id: str) -> tuple[int, str]:
    return (int(variant_id), "") if variant_id.isdigit() else (-1, variant_id)


def build(spec: DirectiveSpec, results: dict[str, Result],
          version: str | None) -> dict[str, Any] | None:
    """The snapshot of a directive, or None when a variant could not be verified here.

    It records what the page shows: a variant that failed to lower is kept (as its
    message) only where ``:expect-error:`` expects it; any other failure is this build's
    accident, left out, and recorded once it lowers (see :func:`added`)."""
    if any(depends_on_machine(r) for r in results.values()):
        return None
    expected = {v.id for v in spec.variants if spec.expects_failure(v)}
    first = spec.variants[0]
    facts, runs = kept(spec), counted(spec)
    snapshot = {
        "schema": RESULT_SCHEMA,
        "directive": spec.name,
        "tilelang": version,
        # Provenance, never compared: which release of this extension recorded it.
        "sphinx_tlstages": __version__,
        "target": spec.target.as_dict if len(spec.targets) == 1
        else [t.as_dict for t in spec.targets],
        "factory": first.factory,
        "params": dict(spec.params or first.params),
        "variants": {key: _variant(r, facts, runs) for key, r in results.items()
                     if r.get("ok") or key in expected},
    }
    toolkits = sorted({str(r["toolkit"]) for r in results.values() if r.get("toolkit")})
    if toolkits:  # provenance beside TileLang's: the resources part's compiler
        snapshot["toolkit"] = " ".join(toolkits)
    if spec.sweep:
        snapshot["sweep"] = {name: list(values) for name, values in spec.sweep}
    if numbered(spec.passes, (e for _, e in spec.asserts)):
        # Provenance, never compared: the pipeline that ``Simplify#3`` was counted in, so
        # that after an upgrade the check can say when that number names another run.
        snapshot["pass_pipeline"] = longest(r.get("passes") or [] for r in results.values())
    return snapshot


def fingerprinting(spec: DirectiveSpec, taken: bool) -> DirectiveSpec:
    """``spec`` with its variants taking the pass fingerprints (provenance a snapshot
    keeps, about 2 % of a lowering) or not: ``taken`` where this build may write a
    snapshot from their results or explain a drift in them (the policy's
    :attr:`~.snapshot_policy.Policy.writes`). A drift found in variants lowered without
    them has them taken then (:attr:`~.snapshot_policy.Decision.fingerprints`, carried
    out by ext/checks/snapshots.py)."""
    return replace(spec, variants=tuple(replace(variant, fingerprints=taken)
                                        for variant in spec.variants))


def added(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """The variants ``new`` records and ``old`` lacks: one that had not lowered when
    ``old`` was recorded, or a depth the directive added since. Recorded, not drift."""
    return [key for key in sorted(new["variants"], key=_order) if key not in old["variants"]]


def with_added(old: dict[str, Any], new: dict[str, Any], keys: list[str]) -> dict[str, Any]:
    """``old`` with ``new``'s records of the variants ``keys`` (and nothing else of it)."""
    return {**old, "variants": {**old["variants"], **{k: new["variants"][k] for k in keys}}}


def dumps(snapshot: dict[str, Any]) -> str:
    return json.dumps(snapshot, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def load(path: Path) -> dict[str, Any] | None:
    """A snapshot file, or None if missing; raises ValueError if it is not one."""
    try:
        if path.stat().st_size > MAX_SNAPSHOT_BYTES:
            raise ValueError(f"{path} is larger than {MAX_SNAPSHOT_BYTES >> 20} MiB")
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path} is not a readable snapshot: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("variants"), dict):
        raise ValueError(f"{path} is not a tl-pipeline snapshot")
    return data


def write(path: Path, snapshot: dict[str, Any]) -> bool:
    """Write ``snapshot`` unless ``path`` holds it already; True when written. Unchanged
    bytes are left alone: a live-preview server watching the source tree would see the
    rename of each rewrite as an edit and rebuild for ever."""
    return write_if_changed(path, dumps(snapshot))


def as_result(variant: dict[str, Any], num_stages: int) -> Result | None:
    """A stored variant as a lowering result (for pages built without TileLang)."""
    if "error" in variant:
        result: dict[str, Any] = {"schema": RESULT_SCHEMA, "ok": False,
                                  "error": {"kind": "exception", "message": variant["error"],
                                            "line": None}}
    else:
        result = {**variant, "schema": RESULT_SCHEMA, "ok": True, "num_stages": num_stages,
                  "cuda": "\n".join(variant.get("cuda", [])) + "\n"}
    # A part the directive does not show is not kept: only what every page reads must be.
    checked = validate(result, {k: t for k, t in REQUIRED.items()
                                if ALWAYS in BY_NAME[k].parts})
    if checked is not None:
        checked["from_snapshot"] = True
    return checked
