"""Starting lowering processes: the worker's environment, a fork server for the coming
batch, a spawned or forked worker, and how to tell why one ended. The event loop that
feeds them is :mod:`.pool`."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from ..core.protocol.messages import Task
from ..core.results.stamps import lowering_stamp, tilelang_stamp
from . import kept
from .forkserver import Forked, ForkServer, forking_supported

_PER_WORKER_MB = 600  # measured: 400-500 MB after importing TileLang, plus lowering

@dataclass
class Job:
    """One variant to lower: its key, the worker's task and its time limit."""

    id: str
    task: Task
    timeout: float
    attempts: int = 0  # lowered again after a fork server went away under it

    @property
    def stages(self) -> int:
        """Its num_stages: deeper pipelines unroll more IR, so it stands in for the cost."""
        return self.task.num_stages


@dataclass(eq=False)
class Worker:
    """One lowering process, spawned or forked, and what the pool knows of it."""

    read_fd: int
    stderr: IO[bytes]
    proc: subprocess.Popen[bytes] | None = None  # a spawned worker
    forked: Forked | None = None  # a forked one: our end of its channel
    pid: int | None = None
    job: Job | None = None
    started: float | None = None
    ready: bool = False
    buffer: bytes = b""
    peak_rss_mb: float = 0.0
    lowered: int = 0
    closed_at: float | None = None  # when its channel closed (a forked worker's status
    code: int | None = None  # comes from the server, later)
    kill_when_known: bool = False

    def write(self, data: bytes) -> None:
        if self.forked is not None:
            self.forked.channel.sendall(data)
        else:
            assert self.proc is not None and self.proc.stdin is not None
            self.proc.stdin.write(data)
            self.proc.stdin.flush()

    def close(self) -> None:
        """Our side of it, ended: a spawned worker is waited for; a forked one reads the
        end of its tasks and exits."""
        if self.proc is not None:
            assert self.proc.stdout is not None and self.proc.stdin is not None
            with contextlib.suppress(BrokenPipeError):
                self.proc.stdin.close()
            self.proc.wait()
            self.proc.stdout.close()
        elif self.forked is not None:
            self.forked.channel.close()
        self.stderr.close()

    def kill(self) -> None:
        if self.proc is not None:
            self.proc.kill()
        elif self.pid is not None and self.closed_at is None:
            # Its channel is open, so it is alive and the pid is still its own.
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
        else:
            self.kill_when_known = True


def spawn_worker(workdir: str, env: dict[str, str], python: str | None = None) -> Worker:
    """A fresh interpreter running ``python -m sphinx_tlstages.worker``: this one, or
    ``python`` (another environment's, with another TileLang: ``tlstages upgrade-check``;
    the environment's PYTHONPATH makes this package importable there)."""
    stderr = tempfile.TemporaryFile()  # noqa: SIM115 - closed when the worker retires
    proc = subprocess.Popen(
        [python or sys.executable, "-m", "sphinx_tlstages.worker"], stdin=subprocess.PIPE,
        stdout=subprocess.PIPE, stderr=stderr, cwd=workdir, env=env,
    )
    assert proc.stdout is not None
    return Worker(proc.stdout.fileno(), stderr, proc=proc)


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


def worker_environment() -> dict[str, str]:
    """The environment every worker (and fork server) runs in."""
    env = dict(os.environ)
    package_root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
    env["PYTHONHASHSEED"] = "0"  # the compiler's own set/dict order must not vary by run
    # A kernel's helper modules are imported from the book's folders: leave no
    # __pycache__ behind in the sources.
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def _stamps() -> dict[str, str]:
    return {"lowering": lowering_stamp(), "tilelang": tilelang_stamp() or "missing"}


def start_server(keep: float = 0.0, python_path: Sequence[str] = ()
                 ) -> tuple[ForkServer | None, str]:
    """A fork server for the coming batch, started now so that its TileLang import runs
    while Sphinx reads: a kept one (reached, or started to outlive this build) when
    ``keep`` seconds are asked for, else one of this build's own. Returns it (``None``
    where forking is not supported or no server could start) and a line for the log."""
    if not forking_supported():
        return None, "forked workers need Linux; spawning workers"
    env = worker_environment()
    stamps = _stamps()
    if keep > 0:
        parts = kept.key_parts(env, stamps, python_path)
        try:
            server = kept.reach(parts, stamps, env, keep)
        except (OSError, kept.KeptUnavailable) as exc:
            note = f"no kept workers ({exc}); starting this build's own"
        else:
            if server.reused:
                return server, f"reaching kept TileLang workers ({server.key})"
            return server, (f"kept TileLang workers started ({server.key}), kept for "
                            f"{keep:g} s after their last use")
    else:
        note = "TileLang workers started"
    try:
        server = ForkServer.private("private", stamps, env,
                                    tempfile.mkdtemp(prefix="tlstages-"))
    except OSError as exc:
        return None, f"{note}; no fork server ({exc}), spawning workers"
    return server, note


def stderr_tail(handle: IO[bytes], limit: int = 2000) -> str:
    with contextlib.suppress(OSError, ValueError):
        handle.seek(0)
        return handle.read().decode("utf-8", "replace").strip()[-limit:]
    return ""


def exit_reason(code: int | None) -> str:
    if code is None:
        return "an unknown cause"
    if code < 0:
        with contextlib.suppress(ValueError):
            return f"signal {signal.Signals(-code).name}"
        return f"signal {-code}"
    return f"exit status {code}"
