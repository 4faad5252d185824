"""A pool of lowering workers that survives hangs and crashes.

Workers are separate interpreters (``python -m sphinx_tlstages.worker``), each paying
the TileLang import once and taking many variants. A variant's time limit counts from
the worker's "start" message for it, not from the worker's start-up. A worker that hangs
is killed and replaced; one that dies is reported as a crash and replaced.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from ..core.result import Result, failure

_PER_WORKER_MB = 600  # measured: 400-500 MB after importing TileLang, plus lowering


@dataclass
class Job:
    """One variant to lower: its key, the worker payload and its time limit."""

    id: str
    payload: dict[str, Any]
    timeout: float


@dataclass
class _Worker:
    proc: subprocess.Popen[bytes]
    stderr: IO[bytes]
    job: Job | None = None
    started: float | None = None
    ready: bool = False
    buffer: bytes = b""
    peak_rss_mb: float = 0.0
    lowered: int = 0


@dataclass
class PoolStats:
    """What a batch cost: workers started, their import time and peak memory."""

    workers: int = 0
    import_seconds: list[float] = field(default_factory=list)
    peak_rss_mb: float = 0.0
    unavailable: str | None = None


def default_jobs() -> int:
    """CPUs this process may use, capped so that the workers fit in available memory."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    try:
        with open("/proc/meminfo", encoding="ascii") as handle:
            info = dict(line.split(":", 1) for line in handle)
        available_mb = int(info["MemAvailable"].split()[0]) // 1024
        cpus = min(cpus, max(1, available_mb // _PER_WORKER_MB))
    except (OSError, KeyError, ValueError):
        pass
    return max(1, cpus)


def _environment() -> dict[str, str]:
    env = dict(os.environ)
    package_root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
    env["PYTHONHASHSEED"] = "0"  # the compiler's own set/dict order must not vary by run
    # A kernel's helper modules are imported from the book's folders: leave no
    # __pycache__ behind in the sources.
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def _tail(handle: IO[bytes], limit: int = 2000) -> str:
    handle.seek(0)
    text = handle.read().decode("utf-8", "replace").strip()
    return text[-limit:]


def run_jobs(jobs: list[Job], workers: int,
             on_done: Callable[[Job, Result], None]) -> PoolStats:
    """Lower every job on up to ``workers`` processes, calling ``on_done`` as each ends."""
    stats = PoolStats()
    pending = deque(jobs)
    selector = selectors.DefaultSelector()
    live: list[_Worker] = []
    workdir = tempfile.mkdtemp(prefix="tlstages-")
    env = _environment()

    def spawn() -> None:
        stderr = tempfile.TemporaryFile()  # noqa: SIM115 - closed when the worker retires
        proc = subprocess.Popen(
            [sys.executable, "-m", "sphinx_tlstages.worker"], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=stderr, cwd=workdir, env=env,
        )
        worker = _Worker(proc, stderr)
        assert proc.stdout is not None
        selector.register(proc.stdout, selectors.EVENT_READ, worker)
        live.append(worker)
        stats.workers += 1
        assign(worker)

    def assign(worker: _Worker) -> None:
        worker.job, worker.started = (pending.popleft() if pending else None), None
        assert worker.proc.stdin is not None
        if worker.job is None:
            retire(worker)
            return
        line = json.dumps({"id": worker.job.id, "payload": worker.job.payload}) + "\n"
        try:
            worker.proc.stdin.write(line.encode())
            worker.proc.stdin.flush()
        except BrokenPipeError:
            pass  # it died; the selector reports the closed pipe

    def retire(worker: _Worker, kill: bool = False) -> None:
        assert worker.proc.stdout is not None and worker.proc.stdin is not None
        selector.unregister(worker.proc.stdout)
        live.remove(worker)
        if kill:
            worker.proc.kill()
        with contextlib.suppress(BrokenPipeError):
            worker.proc.stdin.close()
        worker.proc.wait()
        worker.proc.stdout.close()
        worker.stderr.close()
        stats.peak_rss_mb = max(stats.peak_rss_mb, worker.peak_rss_mb)

    def finish(worker: _Worker, result: Result) -> None:
        job = worker.job
        assert job is not None
        worker.job = None
        on_done(job, result)

    def fail_remaining(message: str) -> None:
        stats.unavailable = message
        for worker in list(live):
            if worker.job is not None:
                finish(worker, failure("unavailable", message, None))
            retire(worker, kill=True)
        while pending:
            on_done(pending.popleft(), failure("unavailable", message, None))

    def died(worker: _Worker) -> None:
        code = worker.proc.wait()
        reason = (f"signal {signal.Signals(-code).name}" if code < 0 else f"exit status {code}")
        detail = _tail(worker.stderr)
        if worker.job is not None and worker.ready:
            message = f"the worker died while lowering ({reason})"
            finish(worker, failure("crash", message + (f": {detail}" if detail else ""),
                                         None))
        elif worker.job is not None:
            # It died before it could import TileLang: nothing else will do better.
            pending.appendleft(worker.job)
            worker.job = None
            retire(worker)
            fail_remaining(f"a lowering worker could not start ({reason}): {detail[-500:]}")
            return
        retire(worker)
        if pending:
            spawn()

    def handle(worker: _Worker, message: dict[str, Any]) -> None:
        event = message.get("event")
        if event == "ready":
            worker.ready = True
            stats.import_seconds.append(float(message.get("seconds", 0.0)))
            worker.peak_rss_mb = float(message.get("peak_rss_mb", 0.0))
        elif event == "unavailable":
            fail_remaining(str(message.get("message")))
        elif event == "start":
            worker.started = time.monotonic()
        elif event == "done" and worker.job is not None:
            worker.peak_rss_mb = float(message.get("peak_rss_mb", worker.peak_rss_mb))
            worker.lowered += 1
            finish(worker, message["result"])
            assign(worker)

    try:
        for _ in range(min(workers, len(pending))):
            spawn()
        while live:
            now = time.monotonic()
            deadlines = [w.started + w.job.timeout for w in live
                         if w.job is not None and w.started is not None]
            wait = max(0.0, min(deadlines) - now) if deadlines else None
            for key, _ in selector.select(timeout=wait):
                worker = key.data
                if worker not in live:
                    continue
                chunk = os.read(key.fd, 1 << 20)
                if not chunk:
                    died(worker)
                    continue
                worker.buffer += chunk
                while b"\n" in worker.buffer and worker in live:
                    line, worker.buffer = worker.buffer.split(b"\n", 1)
                    handle(worker, json.loads(line))
            now = time.monotonic()
            for worker in list(live):
                job = worker.job
                if job is not None and worker.started is not None \
                        and now - worker.started >= job.timeout:
                    finish(worker, failure(
                        "timeout", f"lowering took longer than {job.timeout:g} s and was stopped",
                        None, seconds=now - worker.started))
                    retire(worker, kill=True)
                    if pending:
                        spawn()
    finally:
        for worker in list(live):
            retire(worker, kill=True)
        selector.close()
        shutil.rmtree(workdir, ignore_errors=True)
    return stats

