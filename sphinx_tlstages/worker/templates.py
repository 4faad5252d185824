"""A digest of the TileLang template headers a variant's generated code includes.

``tl::mma_sync``, ``tl::wgmma_ss`` and the copy helpers are defined in headers shipped
with TileLang (``tl_templates/...``): a TileLang release can change what runs while the
generated ``.cu`` text stays the same, so benchmark numbers are tied to these too.
"""

from __future__ import annotations

import functools
import hashlib
import re
from pathlib import Path

import tilelang

_INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.MULTILINE)


@functools.cache
def _roots() -> tuple[Path, ...]:
    package = Path(tilelang.__file__).resolve().parent
    # TileLang's own templates; the CUTLASS headers they pull in are left out (reading them
    # costs half a second per worker, and they change only with a TileLang release).
    return tuple(p for p in (package / "src",) if p.is_dir())


def _find(name: str, beside: Path | None) -> Path | None:
    for folder in ((beside,) if beside else ()) + _roots():
        candidate = folder / name
        if candidate.is_file():
            return candidate
    return None


@functools.cache
def _header(path: Path) -> tuple[str, tuple[Path, ...]]:
    text = path.read_text(encoding="utf-8", errors="replace")
    found = (_find(name, path.parent) for name in _INCLUDE.findall(text))
    return hashlib.sha256(text.encode()).hexdigest(), tuple(p for p in found if p)


def template_digest(code: str) -> str:
    """SHA-256 (16 hex digits) of every TileLang template header ``code`` includes,
    transitively (``<cuda.h>`` and CUTLASS are not TileLang's own and are skipped)."""
    todo = [p for p in (_find(name, None) for name in _INCLUDE.findall(code)) if p]
    seen: dict[Path, str] = {}
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen[path], included = _header(path)
        todo.extend(included)
    digest = hashlib.sha256()
    for path in sorted(seen):
        relative = next((path.relative_to(root) for root in _roots()
                         if path.is_relative_to(root)), path.name)
        digest.update(f"{relative}:{seen[path]}\n".encode())
    return digest.hexdigest()[:16]
