"""Golden snapshots: a directive's lowering facts as reviewable JSON in the source tree.

One file per directive ``:name:``; per variant the schedule, shared buffers, sync counts
and the normalised CUDA (one line per JSON string, so a review diff is small), plus the
TileLang version and target. Stable key order, no timestamps, no document line numbers:
prose added above a directive, or the directive moved, changes nothing stored.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from .cuda import visible_cuda
from .files import write_if_changed
from .pass_compare import longest, numbered
from .result import RESULT_SCHEMA, Result, depends_on_machine, validate
from .spec import DirectiveSpec

PENDING = ".pending.json"
MAX_SNAPSHOT_BYTES = 64 << 20
# The per-pass record is shown on the page but not kept: it is large and the CUDA and
# the facts already show when a pass changes what it does. The schedule the figures draw
# is derived from the IR (its waits are the sync counts', its stages the pipeline's).
_NOT_FACTS = ("seconds", "schema", "ok", "from_snapshot", "passes", "pass_diffs", "imports",
              "templates", "schedule")


def golden_path(folder: Path, name: str) -> Path:
    return folder / f"{name}.json"


def pending_path(folder: Path, name: str) -> Path:
    return folder / f"{name}{PENDING}"


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


def _variant(result: Result) -> dict[str, Any]:
    if not result.get("ok"):
        return {"error": result["error"]["message"]}
    facts = {k: v for k, v in result.items() if k not in _NOT_FACTS and k != "cuda"}
    facts["cuda"] = result["cuda"].splitlines()
    return facts


def describe(variant_id: str) -> str:
    """A snapshot's variant key in words: ``num_stages=2``, or the matrix key as it is."""
    return variant_id if "=" in variant_id else f"num_stages={variant_id}"


def _order(variant_id: str) -> tuple[int, str]:
    return (int(variant_id), "") if variant_id.isdigit() else (-1, variant_id)


def build(spec: DirectiveSpec, results: dict[str, Result],
          version: str | None) -> dict[str, Any] | None:
    """The snapshot of a directive, or None when a variant could not be verified here."""
    if any(depends_on_machine(r) for r in results.values()):
        return None
    first = spec.variants[0]
    snapshot = {
        "schema": RESULT_SCHEMA,
        "directive": spec.name,
        "tilelang": version,
        "target": spec.target.as_dict if len(spec.targets) == 1
        else [t.as_dict for t in spec.targets],
        "factory": first.factory,
        "params": dict(spec.params or first.params),
        "variants": {key: _variant(r) for key, r in results.items()},
    }
    if spec.sweep:
        snapshot["sweep"] = {name: list(values) for name, values in spec.sweep}
    if numbered(spec.passes, (e for _, e in spec.asserts)):
        # Provenance, never compared: the pipeline that ``Simplify#3`` was counted in, so
        # that after an upgrade the check can say when that number names another run.
        snapshot["pass_pipeline"] = longest(r.get("passes") or [] for r in results.values())
    return snapshot


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
    checked = validate(result)
    if checked is not None:
        checked["from_snapshot"] = True
    return checked


# --- what changed, in words -----------------------------------------------------------

def _shape(buffer: dict[str, Any]) -> str:
    return f"{tuple(buffer['shape'])} {buffer['dtype']}"


def _change(name: str, before: str, after: str) -> str:
    """``A_shared (3, 128, 64) -> (4, 128, 64)``: a shared trailing word said once."""
    a, b = before.rsplit(" ", 1), after.rsplit(" ", 1)
    if len(a) == len(b) == 2 and a[1] == b[1]:
        return f"{name} {a[0]} -> {b[0]} {a[1]}"
    return f"{name} {before} -> {after}"


def _list(values: Iterable[object]) -> str:
    return ",".join(str(v) for v in values) or "none"


def _count(value: object) -> str:
    return _list(value) if isinstance(value, list) else str(value)


def _variant_changes(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    if "error" in old or "error" in new:
        if old.get("error") == new.get("error"):
            return []
        before = f"failed ({old['error']})" if "error" in old else "lowered"
        after = f"failed ({new['error']})" if "error" in new else "lowered"
        return [f"{before} -> {after}"]
    changes: list[str] = []
    old_loops, new_loops = old.get("pipeline", []), new.get("pipeline", [])
    for key in ("stage", "order"):
        before = " ".join(_list(loop[key]) for loop in old_loops) or "none"
        after = " ".join(_list(loop[key]) for loop in new_loops) or "none"
        if before != after:
            changes.append(f"{key} {before} -> {after}")
    old_shared = {buf["name"]: _shape(buf) for buf in old.get("shared", [])}
    new_shared = {buf["name"]: _shape(buf) for buf in new.get("shared", [])}
    for name in sorted(old_shared.keys() | new_shared.keys()):
        if old_shared.get(name) != new_shared.get(name):
            changes.append(_change(name, old_shared.get(name, "absent"),
                                   new_shared.get(name, "absent")))
    if old.get("dynamic_shared_bytes") != new.get("dynamic_shared_bytes"):
        changes.append(f"shared memory {old.get('dynamic_shared_bytes', 0):,} -> "
                       f"{new.get('dynamic_shared_bytes', 0):,} B")
    if old.get("threads") != new.get("threads"):
        changes.append(f"threads {old.get('threads')} -> {new.get('threads')}")
    old_sync, new_sync = old.get("sync", {}), new.get("sync", {})
    # A counter the snapshot does not have was not recorded then: not a change.
    for key in sorted(old_sync.keys()):
        a, b = old_sync.get(key), new_sync.get(key)
        if a != b:
            changes.append(f"{key} {_count(a)} -> {_count(b)}")
    if old.get("warp_specialized") != new.get("warp_specialized"):
        changes.append("warp specialisation changed")
    for key in sorted(old.keys() - _COMPARED - {"cuda"}):
        # Facts added after the first schema: compared where the snapshot has them.
        if key in new and old[key] != new[key]:
            changes.append(f"{key} changed")
    old_cuda, new_cuda = visible_cuda(old.get("cuda", [])), visible_cuda(new.get("cuda", []))
    if old_cuda != new_cuda:
        diff = list(difflib.unified_diff(old_cuda, new_cuda, lineterm="", n=0))[2:]
        added = sum(1 for line in diff if line.startswith("+"))
        removed = sum(1 for line in diff if line.startswith("-"))
        changes.append(f"CUDA +{added} -{removed} lines")
    return changes


# planned_ir is a digest of TileLang's IR, which a release may print differently: only
# what it decides (which variants are shown as one) is compared, by _alike.
_COMPARED = frozenset({"error", "pipeline", "shared", "dynamic_shared_bytes", "threads", "sync",
                       "warp_specialized", "num_stages", "static_shared_bytes", "cuda_lines",
                       "planned_ir"})


def _alike(variants: dict[str, Any], ids: Sequence[str]) -> str | None:
    """The variants that lowered to the same planned IR and code, as the page merges them
    (``2,3; 4``-style groups), or None when the snapshot did not record it."""
    chosen = [variants[i] for i in ids]
    if any("error" not in v and "planned_ir" not in v for v in chosen):
        return None
    groups: dict[tuple[str, tuple[str, ...]], list[str]] = {}
    for i, v in zip(ids, chosen, strict=True):
        if "error" not in v and v["planned_ir"] is not None:
            groups.setdefault((v["planned_ir"], tuple(v.get("cuda", []))), []).append(i)
    merged = sorted((g for g in groups.values() if len(g) > 1), key=lambda g: _order(g[0]))
    return "; ".join(",".join(g) for g in merged) or "none"


def compare(old: dict[str, Any], new: dict[str, Any]) -> tuple[str | None, list[tuple[str, str]]]:
    """(TileLang versions when they differ, [(variant id or "", a visible change in
    words), ...]). Only what a reader can see counts: the facts and the CUDA as shown.
    The TileLang version, ``#line`` numbers into TileLang's files, a result-schema bump and
    facts an older snapshot did not record are provenance, never a change."""
    version = None
    if old.get("tilelang") != new.get("tilelang"):
        version = f"TileLang {old.get('tilelang')} -> {new.get('tilelang')}"
    changes: list[tuple[str, str]] = []
    for key in ("target", "factory", "sweep"):
        if old.get(key) != new.get(key):
            changes.append(("", f"{key} {old.get(key)} -> {new.get(key)}"))
    old_params, new_params = old.get("params", {}), new.get("params", {})
    for name in sorted(old_params.keys() | new_params.keys()):
        if old_params.get(name) != new_params.get(name):
            changes.append(("", f"params {name}={old_params.get(name, '(unset)')} -> "
                                f"{name}={new_params.get(name, '(unset)')}"))
    old_v, new_v = old["variants"], new["variants"]
    for stages in sorted(old_v.keys() | new_v.keys(), key=_order):
        if stages not in new_v:
            changes.append((stages, "no longer lowered"))
        elif stages not in old_v:
            changes.append((stages, "new"))
        else:
            found = _variant_changes(old_v[stages], new_v[stages])
            if found:
                changes.append((stages, "; ".join(found)))
    both = sorted(old_v.keys() & new_v.keys(), key=_order)
    before, after = _alike(old_v, both), _alike(new_v, both)
    if before is not None and before != after:
        changes.append(("", f"variants shown as one (lowered alike) {before} -> {after}"))
    return version, changes
