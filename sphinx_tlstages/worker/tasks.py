"""What every worker does, however it was started: import TileLang, then lower tasks.

A worker spawned as ``python -m sphinx_tlstages.worker`` reads tasks on stdin; one forked
by the fork server (:mod:`.server`) reads them on a socket. Both run :func:`serve_tasks`.
"""

from __future__ import annotations

import gc
import os
import resource
import time
from collections.abc import Callable, Iterable

from ..core.protocol import messages as protocol
from ..core.protocol.messages import Done, Message, Start, TaskLine

# A worker whose memory has grown this much since it was ready finishes the variant in
# hand and retires; the pool starts a fresh one for the rest (see "Speed" in book/guide/builds.md).
RECYCLE_GROWTH_MB = 512


def peak_rss_mb() -> float:
    """This process's peak resident memory (``ru_maxrss`` is in KiB on Linux)."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def rss_mb() -> float:
    """Resident memory now (Linux), else the peak."""
    try:
        with open("/proc/self/statm", encoding="ascii") as handle:
            pages = int(handle.read().split()[1])
        return round(pages * os.sysconf("SC_PAGE_SIZE") / (1 << 20), 1)
    except (OSError, ValueError, IndexError):
        return peak_rss_mb()


def import_tilelang() -> tuple[float, str | None]:
    """Import TileLang and the lowering code: (seconds taken, why it cannot lower here)."""
    started = time.perf_counter()
    # The import makes some 350,000 objects that live as long as the process, and the
    # collector, run every 700 new objects, walks the young ones again and again: with it
    # off, the import took 1.11 s instead of 1.35 s (medians, 2 CPUs), on the cold page's
    # critical path. The garbage the import leaves (about 7,000 objects, 0.07 s to
    # collect) is frozen with the rest.
    collecting = gc.isenabled()
    gc.disable()
    try:
        from tilelang.tools.compile_only import cuda_codegen_available

        from . import lowering  # noqa: F401 - imported now, timed as the start-up
    except Exception as exc:
        return time.perf_counter() - started, f"{type(exc).__name__}: {exc}"
    finally:
        # What the import made lives as long as the process: out of the garbage
        # collector's sight, a full collection no longer walks it (and a forked worker
        # does not copy every page of it just to mark it).
        gc.freeze()
        if collecting:
            gc.enable()
    if not cuda_codegen_available():
        return time.perf_counter() - started, "this TileLang build has no CUDA code generator"
    return time.perf_counter() - started, None


def serve_tasks(tasks: Iterable[bytes | str], send: Callable[[Message], None]) -> int:
    """Lower each task until the input ends or memory has grown past the recycling mark
    (then the last answer says ``retiring`` and the worker exits)."""
    from . import lowering

    limit = rss_mb() + RECYCLE_GROWTH_MB
    for raw in tasks:
        task = protocol.read_line(raw)
        if not isinstance(task, TaskLine):
            continue  # nothing a build sends; the build times out whatever it waits for
        send(Start(task.id))
        # The pool compiles the resources part of a directive's variants together.
        result = lowering.lower_variant(task.task, compile_now=False)
        now = rss_mb()
        retiring = now > limit
        send(Done(task.id, dict(result), peak_rss_mb(), now, retiring))
        if retiring:
            break
    return 0
