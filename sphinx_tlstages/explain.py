"""Why a variant was lowered again: the record behind ``tlstages explain NAME``.

After each build's batch, every directive gets ``<cache>/explain/<name>.json``: per
variant its key, the readable parts of that key, what the build did (lowered or taken
from the cache) and, from the last build that lowered it, why: which parts of its key
had changed since the build before. Kept across cached builds, so the reason survives
the no-op rebuilds that follow. Written only when its content changes.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .files import write_if_changed
from .spec import DirectiveSpec

FOLDER = "explain"
CACHE_FOLDER = "tlstages-cache"


def record_path(cache_root: Path, name: str) -> Path:
    return cache_root / FOLDER / f"{name}.json"


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


def _reasons(before: dict[str, Any] | None, parts: dict[str, str],
             sources: tuple[str | None, str], where: tuple[str, int]) -> list[str]:
    """Why a variant with these key ``parts`` was lowered, given its previous record."""
    if before is None:
        return ["no earlier build of this variant is recorded in this cache"]
    old = before.get("parts", {})
    changed = [f"{name}: {old.get(name, '(unset)')} -> {value}"
               for name, value in parts.items() if old.get(name) != value]
    if "kernel source" in {name for name in parts if old.get(name) != parts[name]} \
            and sources[0] is not None:
        changed.append(f"  {where[0]} {_source_change(sources[0], sources[1], where[1])}")
    if changed:
        return changed
    if before.get("outcome") in ("timeout", "crash"):
        return [f"its last result ({before['outcome']}) depends on the machine and is "
                "never cached"]
    return ["its key is unchanged but the cache had no readable entry for it (the cache "
            "was cleared, or this build used another cache folder)"]


def record(cache_root: Path, specs: Iterable[DirectiveSpec], stamp: str,
           results: dict[str, dict[str, Any]], lowered: set[str]) -> None:
    """Write each directive's record after a build's batch."""
    for spec in specs:
        path = record_path(cache_root, spec.name)
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
            result = results.get(key, {})
            outcome = "ok" if result.get("ok") else result.get("error", {}).get("kind", "?")
            entry: dict[str, Any] = {"heading": variant.heading, "key": key, "parts": parts,
                                     "outcome": outcome}
            if key in lowered:
                entry["last_build"] = "lowered"
                entry["lowered_because"] = _reasons(before, parts,
                                                    (old.get("source"), variant.source), where)
            else:
                entry["last_build"] = "cached" if result else "not lowered"
                if before and before.get("key") == key and "lowered_because" in before:
                    entry["lowered_because"] = before["lowered_because"]
            variants[variant.id] = entry
        data = {"directive": spec.name, "document": spec.docname, "line": spec.lineno,
                "source": source, "variants": variants}
        write_if_changed(path, json.dumps(data, indent=1, sort_keys=True) + "\n")


def find_records(name: str, places: Iterable[Path]) -> list[Path]:
    """Records of directive ``name`` under ``places`` (cache folders, or build folders
    whose doctrees hold one), newest first."""
    found: set[Path] = set()
    for place in places:
        direct = record_path(place, name)
        if direct.is_file():
            found.add(direct.resolve())
        if place.is_dir():
            for depth in ("*", "*/*", "*/*/*"):
                for path in place.glob(f"{depth}/{CACHE_FOLDER}/{FOLDER}/{name}.json"):
                    found.add(path.resolve())
    return sorted(found, key=lambda p: p.stat().st_mtime, reverse=True)


def report(path: Path) -> str:
    """A record in words."""
    data = _load(path)
    lines = [f"{data.get('directive')} ({data.get('document')}, line {data.get('line')}); "
             f"record {path}"]
    for entry in data.get("variants", {}).values():
        what = entry.get("last_build")
        head = f"  {entry.get('heading')}: "
        if what == "lowered":
            lines.append(head + "lowered in the last build, because")
        elif "lowered_because" in entry:
            lines.append(head + f"{what} in the last build; it was last lowered because")
        else:
            lines.append(head + f"{what} in the last build: an earlier build had lowered "
                                "these same inputs")
        lines.extend(f"      {reason}" for reason in entry.get("lowered_because", []))
    return "\n".join(lines)
