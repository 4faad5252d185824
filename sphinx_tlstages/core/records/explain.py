"""Why a variant was lowered again: the record behind ``tlstages explain NAME``.

Each build that lowers or re-keys a directive writes
``<doctrees>/tlstages-explain/<name>.json`` (beside the build's doctrees, not in the
cache: a cache may be shared by many projects, and the question is about this build):
per variant its key, the readable parts of that key, what that build did (lowered or
took it from the cache) and, from the last build that lowered it, why: which parts of its
key had changed since the build before. No-op rebuilds leave it alone, so the reason
survives them.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..files import write_if_changed
from ..plan.spec import DirectiveSpec
from ..results.result import Result, failure_kind

FOLDER = "tlstages-explain"
INDEX = "index.keys"  # not .json: never taken for a directive's record


def record_path(doctreedir: Path, name: str) -> Path:
    return doctreedir / FOLDER / f"{name}.json"


def recorded_keys(doctreedir: Path) -> dict[str, list[str]]:
    """Each directive's variant keys as of its last record (empty if unreadable)."""
    try:
        data = json.loads((doctreedir / FOLDER / INDEX).read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


def write_index(doctreedir: Path, keys: dict[str, list[str]]) -> None:
    write_if_changed(doctreedir / FOLDER / INDEX, json.dumps(keys, sort_keys=True) + "\n",
                     durable=False)  # rewritten by any build that finds it outdated


def _load(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return {}
    return data if isinstance(data, dict) and isinstance(data.get("variants"), dict) else {}


def _source_change(old: str, new: str, first_line: int) -> str:
    """``18-19 changed (first: - old / + new)``, numbered from ``first_line``."""
    old_lines, new_lines = old.splitlines(), new.splitlines()
    matcher = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
    edits = [op for op in matcher.get_opcodes() if op[0] != "equal"]
    if not edits:
        return "whitespace at the ends of lines only"
    at = first_line
    spans = [f"{j1 + at}" if j2 - j1 <= 1 else f"{j1 + at}-{j2 + at - 1}"
             for *_, j1, j2 in edits]
    _, i1, _, j1, _ = edits[0]
    first = " / ".join([*(f"- {line.strip()[:60]}" for line in old_lines[i1:i1 + 1]),
                        *(f"+ {line.strip()[:60]}" for line in new_lines[j1:j1 + 1])])
    return f"{', '.join(spans)} changed (first: {first})"


def _params_change(old: dict[str, str], new: dict[str, str]) -> str:
    """Only the params that changed: ``block_K=64 -> block_K=32``."""
    names = sorted(old.keys() | new.keys())
    changed = [n for n in names if old.get(n) != new.get(n)]
    left = " ".join(f"{n}={old[n]}" if n in old else f"({n} unset)" for n in changed)
    right = " ".join(f"{n}={new[n]}" if n in new else f"({n} unset)" for n in changed)
    return f"{left} -> {right}"


def _reasons(before: dict[str, Any] | None, parts: dict[str, str], params: dict[str, str],
             sources: tuple[str | None, str], where: tuple[str, int]) -> list[str]:
    """Why a variant with these key ``parts`` (and ``params``) was lowered, given its
    previous record."""
    if before is None:
        return ["no earlier build of this variant is recorded in this cache"]
    old = before.get("parts", {})
    changed = []
    for name, value in parts.items():
        if old.get(name) == value:
            continue
        # The params as recorded, not re-parsed from their display (``tile=(64, 64)``).
        if name == "params" and isinstance(before.get("params"), dict):
            changed.append(f"params: {_params_change(before['params'], params)}")
            continue
        changed.append(f"{name}: {old.get(name, '(unset)')} -> {value}")
        if name == "kernel source" and sources[0] is not None:
            changed.append(f"  {where[0]} {_source_change(sources[0], sources[1], where[1])}")
    if changed:
        return changed
    if before.get("outcome") in ("timeout", "crash"):
        return [f"its last result ({before['outcome']}) depends on the machine and is "
                "never cached"]
    return ["its key is unchanged but the cache had no readable entry for it (the cache "
            "was cleared, or this build used another cache folder)"]


def record(doctreedir: Path, specs: Iterable[DirectiveSpec], stamp: str,
           results: dict[str, Result], lowered: set[str]) -> None:
    """Write each directive's record after a build's batch."""
    for spec in specs:
        path = record_path(doctreedir, spec.name)
        old = _load(path)
        previous = old.get("variants", {})
        source = spec.variants[0].source
        where = (f"{spec.docname} line", spec.kernel_line) if spec.kernel_line \
            else (f"{spec.variants[0].source_name} line", 1)
        variants: dict[str, Any] = {}
        for variant in spec.variants:
            key = variant.key(stamp)
            parts = variant.key_parts(stamp)
            before = previous.get(variant.id)
            result = results.get(key)
            outcome = "?" if result is None else failure_kind(result) or "ok"
            params = dict(variant.params)
            entry: dict[str, Any] = {"heading": variant.heading, "key": key, "parts": parts,
                                     "params": params, "outcome": outcome}
            if key in lowered:
                entry["last_build"] = "lowered"
                entry["lowered_because"] = _reasons(before, parts, params,
                                                    (old.get("source"), variant.source), where)
            else:
                entry["last_build"] = "cached" if result else "not lowered"
                if before and before.get("key") == key and "lowered_because" in before:
                    entry["lowered_because"] = before["lowered_because"]
            variants[variant.id] = entry
        data = {"directive": spec.name, "document": spec.docname, "line": spec.lineno,
                "source": source, "variants": variants}
        write_if_changed(path, json.dumps(data, indent=1, sort_keys=True) + "\n",
                         durable=False)


def find_records(name: str, places: Iterable[Path]) -> list[Path]:
    """Records of directive ``name`` under ``places`` (doctree folders, or build folders
    that hold them), newest first."""
    found: set[Path] = set()
    for place in places:
        direct = record_path(place, name)
        if direct.is_file():
            found.add(direct.resolve())
        if place.is_dir():
            for depth in ("*", "*/*", "*/*/*"):
                for path in place.glob(f"{depth}/{FOLDER}/{name}.json"):
                    found.add(path.resolve())
    return sorted(found, key=lambda p: p.stat().st_mtime, reverse=True)


def report(path: Path) -> str:
    """A record in words; variants with the same story are told once."""
    data = _load(path)
    shown = path.relative_to(Path.cwd()) if path.is_relative_to(Path.cwd()) else path
    lines = [f"{data.get('directive')} ({data.get('document')}, line {data.get('line')}), "
             f"as of the last build that changed it; record {shown}"]
    told: dict[tuple[str, tuple[str, ...]], list[str]] = {}
    for entry in data.get("variants", {}).values():
        story = (str(entry.get("last_build")), tuple(entry.get("lowered_because", [])))
        told.setdefault(story, []).append(str(entry.get("heading")))
    for (what, reasons), headings in told.items():
        if all(h.startswith("num_stages=") and "," not in h for h in headings):
            head = "  num_stages=" + ", ".join(h.split("=", 1)[1] for h in headings) + ": "
        else:
            head = f"  {'; '.join(headings)}: "
        if what == "lowered":
            lines.append(head + "lowered, because")
        elif reasons:
            lines.append(head + "taken from the cache; last lowered because")
        elif what == "cached":
            lines.append(head + "taken from the cache: an earlier build had lowered these "
                                "same inputs")
        else:
            lines.append(head + what)
        lines.extend(f"      {reason}" for reason in reasons)
    return "\n".join(lines)
