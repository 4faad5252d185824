"""The content-addressed store of lowering results: one JSON file per variant key.

Entries are written atomically, so several builds (and ``-j`` workers) may share one
folder; an entry that cannot be read or is not a valid result is a miss and is
rewritten; so is one whose kernel imported a helper module that has changed since.
Helper modules are recorded relative to the source directory, so an entry is valid in
any folder or machine that holds the same files (and can be shared: :mod:`.remote`).
Timeouts and crashes are never stored: they depend on the machine, not on
the inputs.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from pathlib import Path

from ...core.files import write_atomic
from ...core.results.result import Result, depends_on_machine, validate

MAX_ENTRY_BYTES = 32 << 20


class Cache:
    """Lowering results by variant key; helper paths relative to ``base``."""

    def __init__(self, root: Path, base: Path | None = None) -> None:
        self.root = root
        self.base = base
        # SHA-256 of each entry's bytes as read or written this build: what the rendered
        # HTML depends on, for the price of hashing bytes rather than re-serialising.
        self.digests: dict[str, str] = {}
        # Entries of this folder that could not be read or written: a disk or permission
        # problem here, said once per build (a miss is rewritten, a failed write lowers
        # again next time); never an entry merely outdated.
        self.problems: list[str] = []

    def path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def _imports_unchanged(self, result: Result) -> bool:
        """Whether every helper the kernel imported from its folders is as it was: the key
        cannot know them before lowering, so they are checked on every lookup."""
        for entry in result.get("imports", []):
            path = Path(entry["path"])
            if not path.is_absolute():
                if self.base is None:
                    return False
                path = self.base / path
            try:
                if hashlib.sha256(path.read_bytes()).hexdigest() != entry["sha256"]:
                    return False
            except OSError:
                return False
        return True

    def decode(self, key: str, raw: bytes, local: bool = False) -> Result | None:
        """The result ``raw`` holds, if valid here (its helpers unchanged); ``local``: the
        bytes are this folder's entry, whose unparsable bytes are a problem to report."""
        try:
            result = validate(json.loads(raw.decode("utf-8")))
        except (ValueError, UnicodeDecodeError):
            if local:
                self.problems.append(f"{self.path(key)}: not JSON (corrupt); lowered again")
            return None
        if result is None or not self._imports_unchanged(result):
            return None
        self.digests[key] = hashlib.sha256(raw).hexdigest()
        return result

    def get(self, key: str) -> Result | None:
        path = self.path(key)
        try:
            if path.stat().st_size > MAX_ENTRY_BYTES:
                return None
            raw = path.read_bytes()
        except (FileNotFoundError, NotADirectoryError):  # a miss (no folder yet, even)
            return None
        except OSError as exc:
            self.problems.append(f"{path}: cannot be read: {exc.strerror or exc}")
            return None
        return self.decode(key, raw, local=True)

    def raw(self, key: str) -> bytes | None:
        """The stored bytes of ``key``'s entry, if any."""
        try:
            return self.path(key).read_bytes()
        except OSError:
            return None

    def fragment(self, key: str) -> str | None:
        """A rendered fragment (highlighted HTML) stored under ``key``, if any."""
        try:
            return self.path(key).with_suffix(".html").read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None

    def put_fragment(self, key: str, html: str) -> None:
        with contextlib.suppress(OSError):
            write_atomic(self.path(key).with_suffix(".html"), html)

    def encode(self, result: Result) -> bytes | None:
        """An entry's bytes: helper paths relative to the source directory (nothing of
        this folder or machine); None for a result that depends on the machine."""
        if depends_on_machine(result):
            return None
        imports = result.get("imports")
        if imports and self.base is not None:
            result = {**result, "imports": [
                {**entry, "path": _relative(entry["path"], self.base)} for entry in imports]}
        return json.dumps(result, sort_keys=True, indent=1).encode("utf-8")

    def put_raw(self, key: str, raw: bytes) -> bool:
        """Store ``raw`` (already checked) under ``key``; True when stored."""
        try:
            write_atomic(self.path(key), raw)
        except OSError as exc:
            self.problems.append(f"{self.path(key)}: cannot be written: {exc.strerror or exc}")
            return False
        self.digests[key] = hashlib.sha256(raw).hexdigest()
        return True

    def put(self, key: str, result: Result) -> bytes | None:
        """Store ``result`` unless it depends on the machine; its bytes when stored."""
        raw = self.encode(result)
        if raw is None or not self.put_raw(key, raw):
            return None
        return raw


def _relative(path: str, base: Path) -> str:
    if not os.path.isabs(path):
        return path
    return Path(os.path.relpath(path, base)).as_posix()
