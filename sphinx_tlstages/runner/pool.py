"""A pool of lowering workers that survives hangs and crashes.

Workers are separate processes, each taking many variants. On Linux they are forks of a
fork server (:mod:`.forkserver`) that imported TileLang once: the build's own, started
while Sphinx still reads (:func:`.launch.start_server`), or a kept one that outlives builds
(:mod:`.kept`). Elsewhere, or when no fork server can serve, each worker is a fresh
interpreter (``python -m sphinx_tlstages.worker``) paying the TileLang import itself, and
only as many are started as the work is worth.

A variant whose page shows the resources part comes back lowered, with its compile asked
for: it is held until the other variants of its directive (on its target) are lowered, and
then the group is compiled by one ``python -m sphinx_tlstages.worker.resources`` running
beside the workers (:mod:`..worker.resources`), so that the compiler's front end parses
TileLang's headers once for the group while the workers lower on.

A variant's time limit counts from the worker's "start" message for it, not from the
worker's start-up. A worker that hangs is killed and replaced; one that dies is reported
as a crash and replaced; a worker grown past its memory mark retires after its variant
and is replaced. A build never fails because a fork server went away: what its workers
had in hand is lowered again by spawned workers.
"""

from __future__ import annotations

import contextlib
import json
import math
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
from typing import IO, Any

from ..core.protocol import messages as protocol
from ..core.results.result import Result, failure
from .forkserver import ForkServer
from .launch import (
    Job,
    Worker,
    exit_reason,
    spawn_worker,
    start_server,
    stderr_tail,
    worker_environment,
)

# How long to wait for a forked worker's exit status after its channel closed.
_STATUS_WAIT = 5.0
# A spawned worker pays a TileLang import (about 1.8 s on the reference machine); one
# lowering of the seed GEMM takes about 0.7 s. Another spawned worker is started only
# for every this many variants, so that the import it costs is worth it.
_VARIANTS_PER_SPAWN = 2


def _group(job: Job) -> str:
    """What the variants of one directive on one target share: all of the task but its
    depth. Their resources part is compiled together once the last of them is lowered."""
    task = job.task.canonical()
    task.pop("num_stages", None)
    return json.dumps(task, sort_keys=True)


@dataclass(eq=False)
class _Compile:
    """A running ``python -m sphinx_tlstages.worker.resources``: the resources part of a
    group of lowered variants, compiled apart from the workers so that they lower on."""

    proc: subprocess.Popen[bytes]
    members: list[tuple[Job, Result]]
    stderr: IO[bytes]
    buffer: bytes = b""


@dataclass
class PoolStats:
    """What a batch cost: workers started, imports paid, peak memory, who served it."""

    workers: int = 0
    forked: int = 0
    import_seconds: list[float] = field(default_factory=list)
    peak_rss_mb: float = 0.0
    recycled: int = 0
    unavailable: str | None = None
    server: protocol.ServerStatus | None = None  # the fork server's answer to the hello
    fallback: str | None = None  # why workers were spawned instead of forked


class _Batch:
    """One call of :func:`run_jobs`: the event loop over workers and a fork server."""

    def __init__(self, jobs: list[Job], workers: int, on_done: Callable[[Job, Result], None],
                 server: ForkServer | None, python: str | None = None) -> None:
        # Longest first, so that no worker is left with a long variant at the end while
        # the others idle; deeper pipelines unroll more IR, so num_stages stands in for
        # the cost (stable: otherwise in the order given).
        ordered = sorted(jobs, key=lambda job: -job.stages)
        # Each job's group, worked out once (the task holds the kernel's source): asked
        # again each time a variant comes back while compiles are held.
        self.groups: dict[int, str] = {}
        if any(job.task.toolkit for job in jobs):
            # A directive's variants one after the other: its compile starts while the
            # next directive lowers, rather than every compile at the end.
            rank: dict[str, int] = {}
            for job in ordered:
                rank.setdefault(self.group(job), len(rank))
            ordered.sort(key=lambda job: rank[self.group(job)])
        self.pending = deque(ordered)
        self.limit = max(1, workers)
        self.on_done = on_done
        self.server = server
        self.python = python  # the interpreter spawned workers run; None: this one
        self.stats = PoolStats()
        self.selector = selectors.DefaultSelector()
        self.live: list[Worker] = []
        self.workdir = tempfile.mkdtemp(prefix="tlstages-")
        self.env = worker_environment()
        self.fork_failures = 0
        self.unnamed: list[Worker] = []  # forked workers whose pid is not known yet
        # Lowered variants whose resources part waits for the rest of their group.
        self.held: dict[str, list[tuple[Job, Result]]] = {}
        self.compiles: list[_Compile] = []
        if server is not None:
            self.selector.register(server.sock, selectors.EVENT_READ, server)

    # -- starting and ending workers ------------------------------------------------------

    def _forking(self) -> bool:
        return self.server is not None and self.server.usable

    def _wanted(self) -> int:
        """How many workers the rest of the work is worth."""
        if self._forking():
            return self.limit  # a fork costs no import
        return min(self.limit, max(1, math.ceil(
            (len(self.pending) + sum(w.job is not None for w in self.live))
            / _VARIANTS_PER_SPAWN)))

    def fill(self) -> None:
        while self.pending and len(self.live) < self._wanted():
            self.start_worker()

    def start_worker(self) -> None:
        if self._forking():
            assert self.server is not None
            try:
                forked = self.server.fork()
            except OSError as exc:
                self.give_up_forking(f"the fork server did not answer ({exc})")
            else:
                worker = Worker(forked.channel.fileno(), forked.stderr, forked=forked)
                self.unnamed.append(worker)
                self._add(worker)
                self.stats.forked += 1
                return
        self.spawn()

    def spawn(self) -> None:
        self._add(spawn_worker(self.workdir, self.env, self.python))

    def _add(self, worker: Worker) -> None:
        self.selector.register(worker.read_fd, selectors.EVENT_READ, worker)
        self.live.append(worker)
        self.stats.workers += 1
        self.assign(worker)

    def assign(self, worker: Worker) -> None:
        worker.job, worker.started = (self.pending.popleft() if self.pending else None), None
        if worker.job is None:
            self.retire(worker)
            return
        with contextlib.suppress(OSError):  # it died; the selector reports the closed channel
            worker.write(protocol.line(protocol.TaskLine(worker.job.id, worker.job.task)))

    def retire(self, worker: Worker, kill: bool = False) -> None:
        if worker not in self.live:
            return
        with contextlib.suppress(KeyError, ValueError):
            self.selector.unregister(worker.read_fd)
        self.live.remove(worker)
        if kill:
            worker.kill()
        worker.close()
        self.stats.peak_rss_mb = max(self.stats.peak_rss_mb, worker.peak_rss_mb)

    def finish(self, worker: Worker, result: Result) -> None:
        job = worker.job
        assert job is not None
        worker.job = None
        if "resources_request" in result:
            self.held.setdefault(self.group(job), []).append((job, result))
        else:
            self.on_done(job, result)
        self.compile_ready()

    # -- the resources part, compiled a group at a time -----------------------------------

    def group(self, job: Job) -> str:
        """``job``'s group (:func:`_group`), once per job."""
        found = self.groups.get(id(job))
        if found is None:
            found = self.groups[id(job)] = _group(job)
        return found

    def compile_ready(self) -> None:
        """Start the compile of every held group none of whose variants is still to lower."""
        if not self.held:
            return
        waiting = {self.group(job) for job in self.pending}
        waiting |= {self.group(w.job) for w in self.live if w.job is not None}
        for group in [g for g in self.held if g not in waiting]:
            self.start_compile(self.held.pop(group))

    def start_compile(self, members: list[tuple[Job, Result]]) -> None:
        requests = [result.pop("resources_request")  # type: ignore[typeddict-item]
                    for _, result in members]
        with tempfile.NamedTemporaryFile("w", dir=self.workdir, suffix=".json",
                                         delete=False) as handle:
            json.dump(requests, handle)
        stderr = tempfile.TemporaryFile(dir=self.workdir)  # noqa: SIM115 - the process outlives this call
        try:
            with open(handle.name, "rb") as stdin:
                proc = subprocess.Popen(
                    [self.python or sys.executable, "-m", "sphinx_tlstages.worker.resources"],
                    stdin=stdin, stdout=subprocess.PIPE, stderr=stderr, env=self.env)
        except OSError as exc:
            stderr.close()
            self.compiled(members, None, f"{type(exc).__name__}: {exc}")
            return
        assert proc.stdout is not None
        running = _Compile(proc, members, stderr)
        self.compiles.append(running)
        self.selector.register(proc.stdout, selectors.EVENT_READ, running)

    def compile_event(self, running: _Compile) -> None:
        assert running.proc.stdout is not None
        chunk = os.read(running.proc.stdout.fileno(), 1 << 20)
        if chunk:
            running.buffer += chunk
            return
        self.selector.unregister(running.proc.stdout)
        running.proc.stdout.close()
        code = running.proc.wait()
        self.compiles.remove(running)
        found: list[dict[str, Any]] | None = None
        with contextlib.suppress(ValueError):
            found = json.loads(running.buffer) if code == 0 else None
        running.stderr.seek(0)
        detail = running.stderr.read().decode(errors="replace").strip()[-500:]
        running.stderr.close()
        self.compiled(running.members, found, f"{exit_reason(code)}: {detail}")

    def compiled(self, members: list[tuple[Job, Result]], found: list[dict[str, Any]] | None,
                 why: str) -> None:
        """Hand each member its part (or the reason there is none) and its result on."""
        if found is None or len(found) != len(members):
            found = [{"resources_error": f"the compile of its group failed ({why})"}
                     for _ in members]
        for (job, result), part in zip(members, found, strict=True):
            result.update(part)  # type: ignore[typeddict-item]
            self.on_done(job, result)

    def fail_remaining(self, message: str) -> None:
        self.stats.unavailable = message
        for worker in list(self.live):
            if worker.job is not None:
                self.finish(worker, failure("unavailable", message, None))
            self.retire(worker, kill=True)
        while self.pending:
            self.on_done(self.pending.popleft(), failure("unavailable", message, None))

    def give_up_forking(self, why: str) -> None:
        """The fork server cannot serve: spawn workers from now on."""
        if self.server is not None and self.stats.fallback is None:
            self.stats.fallback = why
            with contextlib.suppress(KeyError, ValueError):
                self.selector.unregister(self.server.sock)
            if self.server.usable:
                self.server.state = "gone"

    # -- events ---------------------------------------------------------------------------

    def server_event(self) -> None:
        server = self.server
        assert server is not None
        message = server.read()
        if message is None:
            detail = server.last_words()
            self.give_up_forking("the fork server went away"
                                 + (f": {detail[-300:]}" if detail else ""))
            for worker in list(self.live):
                if worker.closed_at is not None:
                    self.died(worker)
            return
        if isinstance(message, protocol.ServerStatus):
            self.stats.server = message
        elif isinstance(message, protocol.Unavailable):
            self.fail_remaining(message.message)
        elif isinstance(message, protocol.Refused):
            self.give_up_forking(f"the kept server refused this build ({server.message})")
        elif isinstance(message, protocol.Forked) and server.waiting:
            forked = server.waiting.popleft()
            for worker in list(self.unnamed):  # retired ones too: a hung one is killed
                if worker.forked is forked:
                    self.unnamed.remove(worker)
                    worker.pid = message.pid
                    if worker.kill_when_known:
                        worker.kill_when_known = False
                        with contextlib.suppress(ProcessLookupError):
                            os.kill(worker.pid, signal.SIGKILL)
        elif isinstance(message, protocol.Exited):
            for worker in list(self.live):
                if worker.pid == message.pid:
                    worker.code = message.code
                    if worker.closed_at is not None:
                        self.died(worker)

    def channel_closed(self, worker: Worker) -> None:
        worker.closed_at = time.monotonic()
        with contextlib.suppress(KeyError, ValueError):
            self.selector.unregister(worker.read_fd)
        # A forked worker's exit status comes from the server; wait for it, a little.
        if worker.forked is None or worker.job is None or not self._forking() \
                or worker.code is not None:
            self.died(worker)

    def died(self, worker: Worker) -> None:
        if worker not in self.live:
            return
        if worker.proc is not None:
            worker.code = worker.proc.wait()
        detail = stderr_tail(worker.stderr)
        job = worker.job
        if job is not None and worker.forked is not None and (
                not worker.ready or (self.server is not None and self.server.state == "gone"
                                     and worker.code is None and job.attempts == 0)):
            # Not the kernel's doing: the server could not fork it or went away (stopped,
            # killed) while it lowered. Lower the variant again elsewhere.
            job.attempts += 1
            worker.job = None
            self.pending.appendleft(job)
            if not worker.ready:
                self.fork_failures += 1
                if self.fork_failures >= 2:
                    self.give_up_forking("the fork server could not start workers")
        elif job is not None and worker.ready:
            message = f"the worker died while lowering ({exit_reason(worker.code)})"
            self.finish(worker, failure("crash", message + (f": {detail}" if detail else ""),
                                        None))
        elif job is not None:
            # It died before it could import TileLang: nothing else will do better.
            self.pending.appendleft(job)
            worker.job = None
            self.retire(worker)
            self.fail_remaining(f"a lowering worker could not start ({exit_reason(worker.code)}): "
                                f"{detail[-500:]}")
            return
        self.retire(worker)
        self.fill()

    def handle(self, worker: Worker, message: protocol.Message) -> None:
        if isinstance(message, protocol.Ready):
            worker.ready = True
            if not message.forked:
                self.stats.import_seconds.append(message.seconds)
            worker.peak_rss_mb = message.peak_rss_mb
        elif isinstance(message, protocol.Unavailable):
            self.fail_remaining(message.message)
        elif isinstance(message, protocol.Start):
            worker.started = time.monotonic()
        elif isinstance(message, protocol.Done) and worker.job is not None:
            worker.peak_rss_mb = message.peak_rss_mb or worker.peak_rss_mb
            worker.lowered += 1
            self.finish(worker, message.result)  # type: ignore[arg-type]
            if message.retiring:
                self.stats.recycled += 1
                self.retire(worker)
                self.fill()
            else:
                self.assign(worker)

    # -- the loop -------------------------------------------------------------------------

    def run(self) -> PoolStats:
        try:
            self.fill()
            while self.live or self.compiles or self.held:
                if not self.live:  # nothing left to lower: what is held is complete
                    for group in list(self.held):
                        self.start_compile(self.held.pop(group))
                    if not self.compiles:
                        break
                self.step()
        finally:
            for worker in list(self.live):
                self.retire(worker, kill=True)
            for running in list(self.compiles):
                running.proc.kill()
                running.proc.wait()
                running.stderr.close()
            self.selector.close()
            shutil.rmtree(self.workdir, ignore_errors=True)
        return self.stats

    def step(self) -> None:
        now = time.monotonic()
        deadlines = [w.started + w.job.timeout for w in self.live
                     if w.job is not None and w.started is not None and w.closed_at is None]
        deadlines += [w.closed_at + _STATUS_WAIT for w in self.live if w.closed_at is not None]
        wait = max(0.0, min(deadlines) - now) if deadlines else None
        for key, _ in self.selector.select(timeout=wait):
            if isinstance(key.data, ForkServer):
                if key.data is self.server and self._forking():
                    self.server_event()
                continue
            if isinstance(key.data, _Compile):
                self.compile_event(key.data)
                continue
            worker = key.data
            if worker not in self.live or worker.closed_at is not None:
                continue
            try:
                chunk = os.read(key.fd, 1 << 20)
            except OSError:
                chunk = b""
            if not chunk:
                self.channel_closed(worker)
                continue
            worker.buffer += chunk
            while b"\n" in worker.buffer and worker in self.live:
                line, worker.buffer = worker.buffer.split(b"\n", 1)
                self.handle(worker, protocol.read_line(line))
        now = time.monotonic()
        for worker in list(self.live):
            job = worker.job
            if worker.closed_at is not None:
                if now - worker.closed_at >= _STATUS_WAIT:
                    self.died(worker)
            elif job is not None and worker.started is not None \
                    and now - worker.started >= job.timeout:
                self.finish(worker, failure(
                    "timeout", f"lowering took longer than {job.timeout:g} s and was stopped",
                    None, seconds=now - worker.started))
                self.retire(worker, kill=True)
                self.fill()


def run_jobs(jobs: list[Job], workers: int, on_done: Callable[[Job, Result], None],
             server: ForkServer | None = None, fork: bool = True,
             python: str | None = None) -> PoolStats:
    """Lower every job on up to ``workers`` processes, calling ``on_done`` as each ends.

    ``server`` is a fork server started ahead (:func:`start_server`); the caller closes
    it. Without one, a server of the batch's own is started (and closed) where forking
    is supported, unless ``fork`` is false. ``python``: the interpreter the workers run
    (spawned, never forked from this one's server), for another environment's TileLang.
    """
    own = None
    if server is None and fork and jobs and python is None:
        own, _ = start_server()
        server = own
    try:
        return _Batch(jobs, workers, on_done, None if python else server, python).run()
    finally:
        if own is not None:
            own.close()


