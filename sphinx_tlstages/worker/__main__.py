"""A lowering worker: ``python -m sphinx_tlstages.worker``.

Reads one JSON task per line on stdin and answers JSON lines on a private copy of stdout;
whatever TileLang prints goes to stderr. It imports TileLang once, then lowers many
variants. Sphinx starts it as a fresh process (never a fork of itself).
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
from typing import Any, TextIO


def _peak_rss_mb() -> float:
    # ru_maxrss is in KiB on Linux.
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def _send(channel: TextIO, message: dict[str, Any]) -> None:
    channel.write(json.dumps(message, sort_keys=True) + "\n")
    channel.flush()


def main() -> int:
    channel = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # keep TileLang's own prints out of the protocol
    started = time.perf_counter()
    try:
        from tilelang.tools.compile_only import cuda_codegen_available

        from . import lowering
    except Exception as exc:
        _send(channel, {"event": "unavailable", "message": f"{type(exc).__name__}: {exc}"})
        return 3
    if not cuda_codegen_available():
        _send(channel, {"event": "unavailable",
                        "message": "this TileLang build has no CUDA code generator"})
        return 3
    _send(channel, {"event": "ready", "seconds": round(time.perf_counter() - started, 3),
                    "peak_rss_mb": _peak_rss_mb()})
    for line in sys.stdin:
        task = json.loads(line)
        _send(channel, {"event": "start", "id": task["id"]})
        result = lowering.lower_variant(task["payload"])
        _send(channel, {"event": "done", "id": task["id"], "result": result,
                        "peak_rss_mb": _peak_rss_mb()})
    return 0


if __name__ == "__main__":
    sys.exit(main())
