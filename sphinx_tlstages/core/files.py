"""Writing files so that no reader ever sees half of one.

Every file the extension writes goes through :func:`write_atomic`: a temporary file in
the same folder, flushed, then renamed over the target (atomic on POSIX and Windows).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


# Read once: os.umask can only be read by setting it, which is not thread-safe.
_MODE = 0o666 & ~_umask()


def write_atomic(path: Path, data: str | bytes, durable: bool = True) -> None:
    """Replace ``path`` with ``data`` in one rename, with the mode a plain write gives
    (mkstemp's 0600 would keep a web server from serving the downloads). ``durable``:
    on disk before the rename (an fsync); a build's own output, which the next build
    compares and rewrites, needs only the rename, as Sphinx's pages do."""
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(raw)
            handle.flush()
            if durable:
                os.fsync(handle.fileno())
        os.chmod(tmp, _MODE)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_if_changed(path: Path, data: str | bytes, durable: bool = True) -> bool:
    """Write only when the content differs, so timestamps and watchers stay quiet."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    try:
        if path.read_bytes() == raw:
            return False
    except OSError:
        pass
    write_atomic(path, raw, durable)
    return True
