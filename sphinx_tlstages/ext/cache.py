"""The content-addressed store of lowering results: one JSON file per variant key.

Entries are written atomically, so several builds (and ``-j`` workers) may share one
folder; an entry that cannot be read or is not a valid result is a miss and is
rewritten; so is one whose kernel imported a helper module that has changed since.
Timeouts and crashes are never stored: they depend on the machine, not on
the inputs.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from pathlib import Path

from ..core.files import write_atomic
from ..core.result import Result, depends_on_machine, validate

MAX_ENTRY_BYTES = 32 << 20


def _imports_unchanged(result: Result) -> bool:
    """Whether every helper the kernel imported from its folders is as it was: the key
    cannot know them before lowering, so they are checked on every lookup."""
    for entry in result.get("imports", []):
        try:
            if hashlib.sha256(Path(entry["path"]).read_bytes()).hexdigest() != entry["sha256"]:
                return False
        except OSError:
            return False
    return True


class Cache:
    """Lowering results by variant key."""

    def __init__(self, root: Path) -> None:
        self.root = root
        # SHA-256 of each entry's bytes as read or written this build: what the rendered
        # HTML depends on, for the price of hashing bytes rather than re-serialising.
        self.digests: dict[str, str] = {}

    def path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> Result | None:
        path = self.path(key)
        try:
            if path.stat().st_size > MAX_ENTRY_BYTES:
                return None
            raw = path.read_bytes()
            result = validate(json.loads(raw.decode("utf-8")))
        except (OSError, ValueError, UnicodeDecodeError):
            return None
        if result is None or not _imports_unchanged(result):
            return None
        self.digests[key] = hashlib.sha256(raw).hexdigest()
        return result

    def fragment(self, key: str) -> str | None:
        """A rendered fragment (highlighted HTML) stored under ``key``, if any."""
        try:
            return self.path(key).with_suffix(".html").read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None

    def put_fragment(self, key: str, html: str) -> None:
        with contextlib.suppress(OSError):
            write_atomic(self.path(key).with_suffix(".html"), html)

    def put(self, key: str, result: Result) -> bool:
        """Store ``result`` unless it depends on the machine; True when stored."""
        if depends_on_machine(result):
            return False
        text = json.dumps(result, sort_keys=True, indent=1)
        try:
            write_atomic(self.path(key), text)
        except OSError:
            return False
        self.digests[key] = hashlib.sha256(text.encode("utf-8")).hexdigest()
        return True
