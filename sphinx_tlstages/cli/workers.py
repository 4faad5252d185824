"""``tlstages workers status|stop``: this user's kept lowering workers on this machine."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from ..runner import kept


def _describe(path: Path, answer: dict[str, Any] | None, out: TextIO) -> None:
    if answer is None or answer.get("event") != "status":
        print(f"{path.stem}: not answering (still importing TileLang, or left over by a "
              "server that died)", file=out)
        return
    up = time.time() - float(answer.get("started", time.time()))
    idle_for, idle = float(answer.get("idle_for", 0)), float(answer.get("idle_seconds", 0))
    print(f"{answer.get('key')}: pid {answer.get('pid')}, up {up:.0f} s, "
          f"{answer.get('served')} builds served, {answer.get('workers')} workers now "
          f"({answer.get('forked')} forked in all), {answer.get('rss_mb', 0):.0f} MB, "
          f"idle {idle_for:.0f} s of {idle:g} s", file=out)
    try:
        parts = json.loads(str(answer.get("describe") or "{}"))
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
