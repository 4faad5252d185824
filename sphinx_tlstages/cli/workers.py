"""``tlstages workers status|stop``: this user's kept lowering workers on this machine."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from ..core.protocol.messages import ServerStatus
from ..runner import kept


def _describe(path: Path, answer: ServerStatus | None, out: TextIO) -> None:
    if answer is None:
        print(f"{path.stem}: not answering (still importing TileLang, or left over by a "
              "server that died)", file=out)
        return
    up = time.time() - float(answer.started or time.time())
    print(f"{answer.key}: pid {answer.pid}, up {up:.0f} s, "
          f"{answer.served} builds served, {answer.workers} workers now "
          f"({answer.forked} forked in all), {answer.rss_mb:.0f} MB, "
          f"idle {answer.idle_for:.0f} s of {answer.idle_seconds:g} s", file=out)
    try:
        parts = json.loads(answer.describe or "{}")
    except ValueError:
        parts = {}
    for name, value in parts.items():
        if name == "environment":
            value = " ".join(f"{k}={v}" for k, v in value.items())
        elif isinstance(value, list):
            value = " ".join(value) or "(none)"
        print(f"  {name}: {value}", file=out)


def workers(action: str, keys: Sequence[str], out: TextIO = sys.stdout) -> int:
    """Show (``status``) or end (``stop``) kept servers, all or those named by key."""
    found = [(path, answer) for path, answer in kept.servers()
             if not keys or any(path.stem.startswith(k) for k in keys)]
    if not found:
        print("no kept lowering workers" + (f" matching {' '.join(keys)}" if keys else ""),
              file=out)
        return 0
    if action == "status":
        for path, answer in found:
            _describe(path, answer, out)
        return 0
    for path, _ in found:
        stopped = kept.stop(path)
        print(f"{path.stem}: {'stopped' if stopped else 'was not running; socket removed'}",
              file=out)
    return 0
