"""The fork server: TileLang imported once, every lowering worker a fork of it.

``python -m sphinx_tlstages.worker --serve --fd N ...`` serves the one build that started
it, on the control socket it inherited as descriptor N, and exits when that build closes
it. ``--serve --listen-fd N --path PATH --idle SECONDS ...`` is a kept server: it accepts
builds on the Unix socket PATH (bound by the build that started it, in a folder only its
user can enter), serves any number of them, one after another or at once, and exits when
nothing has used it for ``--idle`` seconds (or on ``tlstages workers stop``).

A build asks for a worker by sending :class:`..core.protocol.messages.Fork` with two descriptors:
the worker's channel (a stream socket) and the file its stderr goes to. The forked worker
owns nothing of the server's: it closes the server's sockets, answers only on its channel
and lowers with :func:`.tasks.serve_tasks` until its channel closes. Each build gets
workers of its own, so builds never see each other's answers; the server reports each worker's exit
status to the build that owns it and kills a build's workers when the build goes away.
The server itself never lowers anything, so it holds no kernel's modules and does not
grow.

Forking a process that has imported TileLang (and torch) is safe here because the server
does nothing but wait on its sockets: no lowering, no thread of its own.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import selectors
import shutil
import signal
import socket
import struct
import sys
import tempfile
import time
import traceback
import warnings
from dataclasses import dataclass, field

from ..core.protocol import messages as protocol
from ..core.protocol import wire
from ..core.protocol.messages import (
    Exited,
    Fork,
    Forked,
    Hello,
    Message,
    Ready,
    Refused,
    ServerStatus,
    StatusQuery,
    Stop,
    Stopping,
    Unavailable,
)
from ..core.results.stamps import lowering_stamp, tilelang_stamp
from .tasks import import_tilelang, rss_mb, serve_tasks


@dataclass(eq=False)
class _Build:
    """One connected build and the workers forked for it."""

    sock: socket.socket
    workers: set[int] = field(default_factory=set)


class Server:
    """The state and the event loop of one fork server."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.key: str = args.key
        self.idle: float = args.idle
        self.path: str | None = args.path
        self.describe: str = args.describe
        self.expected = {"lowering": args.lowering, "tilelang": args.tilelang}
        self.kept = args.listen_fd is not None
        self.started = time.time()
        self.last_active = time.monotonic()
        self.selector = selectors.DefaultSelector()
        self.builds: list[_Build] = []
        self.owner: dict[int, _Build | None] = {}  # forked pid -> its build (None: gone)
        self.unavailable: str | None = None
        self.import_seconds = 0.0
        self.forked = 0
        self.served = 0
        self.stopping = False
        self.listener: socket.socket | None = None
        self.inode: int | None = None
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_r, False)
        os.set_blocking(self.wake_w, False)

    # -- start-up -------------------------------------------------------------------------

    def start(self, args: argparse.Namespace) -> None:
        if self.kept:
            self.listener = socket.socket(fileno=args.listen_fd)
            self.listener.setblocking(False)
            with contextlib.suppress(OSError):
                self.inode = os.stat(str(self.path)).st_ino
            self.selector.register(self.listener, selectors.EVENT_READ, "listen")
        else:
            self._add(socket.socket(fileno=args.fd))
        # SIGCHLD only wakes the loop up; the loop reaps.
        signal.set_wakeup_fd(self.wake_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        signal.signal(signal.SIGTERM, lambda *_: self._stop())
        self.selector.register(self.wake_r, selectors.EVENT_READ, "wake")
        # Builds may connect and ask while TileLang imports; they are answered after it.
        seconds, self.unavailable = import_tilelang()
        self.import_seconds = round(seconds, 3)
        if self.unavailable is None:
            found = {"lowering": lowering_stamp(), "tilelang": tilelang_stamp()}
            stale = [name for name, value in self.expected.items() if found[name] != value]
            if stale:  # the files changed under us: never answer with other code
                self.unavailable = f"stale: the {' and '.join(stale)} code changed on disk"

    # -- the loop -------------------------------------------------------------------------

    def run(self) -> int:
        while not self.stopping:
            timeout = None
            if self.kept and not self.builds and not self.owner:
                timeout = self.idle - (time.monotonic() - self.last_active)
                if timeout <= 0:
                    break
            for key, _ in self.selector.select(timeout):
                if key.data == "listen":
                    self._accept()
                elif key.data == "wake":
                    with contextlib.suppress(OSError):
                        os.read(self.wake_r, 4096)
                    self._reap()
                else:
                    self._serve(key.data)
            self._reap()
            if not self.kept and not self.builds:
                break  # the build that started this server has gone
            if self.kept and self.unavailable and not self.builds:
                break  # told whoever asked; a later build starts a fresh server
        return self._shut_down()

    def _add(self, sock: socket.socket) -> None:
        build = _Build(sock)
        self.builds.append(build)
        self.selector.register(sock, selectors.EVENT_READ, build)

    def _accept(self) -> None:
        assert self.listener is not None
        try:
            sock, _ = self.listener.accept()
        except OSError:
            return
        sock.setblocking(True)
        if hasattr(socket, "SO_PEERCRED"):  # the folder is private; this says so twice
            creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                    struct.calcsize("3i"))
            if struct.unpack("3i", creds)[1] != os.getuid():
                sock.close()
                return
        self._add(sock)

    def _send(self, build: _Build, message: Message) -> None:
        try:
            wire.send_packet(build.sock, message)
        except OSError:
            self._drop(build)

    def _drop(self, build: _Build) -> None:
        """A build has gone: its workers are of no use to anyone."""
        if build not in self.builds:
            return
        self.builds.remove(build)
        with contextlib.suppress(KeyError, ValueError):
            self.selector.unregister(build.sock)
        build.sock.close()
        for pid in build.workers:
            self.owner[pid] = None
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if build.workers:
            self.last_active = time.monotonic()
        build.workers.clear()

    def _serve(self, build: _Build) -> None:
        try:
            message, fds = wire.recv_packet(build.sock)
        except OSError:
            message, fds = None, []
        if message is None:
            self._drop(build)
            return
        if isinstance(message, (Hello, Fork)):  # a status query is not a use
            self.last_active = time.monotonic()
        if isinstance(message, Fork) and len(fds) >= 2 and self.unavailable is None:
            self._fork(build, fds[0], fds[1])
            fds = fds[2:]
        elif isinstance(message, Hello):
            self._hello(build, message)
        elif isinstance(message, StatusQuery):
            self._send(build, self.status())
        elif isinstance(message, Stop):
            self._send(build, Stopping(os.getpid()))
            self._stop()
        for fd in fds:
            with contextlib.suppress(OSError):
                os.close(fd)

    def _hello(self, build: _Build, message: Hello) -> None:
        if message.key != self.key:
            self._send(build, Refused("keyed differently"))
            self._drop(build)
        elif self.unavailable is not None:
            self._send(build, Unavailable(self.unavailable))
        else:
            if isinstance(message.idle, (int, float)) and message.idle > 0:
                self.idle = float(message.idle)
            self.served += 1
            self._send(build, self.status(ready=True))

    def status(self, ready: bool = False) -> ServerStatus:
        """What ``tlstages workers status`` shows of this server (``ready``: as the
        answer to a hello)."""
        return ServerStatus(
            pid=os.getpid(), key=self.key, kept=self.kept, path=self.path,
            started=self.started, idle_seconds=self.idle,
            idle_for=round(time.monotonic() - self.last_active, 1),
            import_seconds=self.import_seconds, connections=len(self.builds),
            served=self.served, workers=len(self.owner), forked=self.forked,
            rss_mb=rss_mb(), describe=self.describe, ready=ready)

    def _stop(self) -> None:
        self.stopping = True
        for pid in list(self.owner):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

    def _reap(self) -> None:
        while self.owner:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                self.owner.clear()
                return
            if pid == 0:
                return
            build = self.owner.pop(pid, None)
            self.last_active = time.monotonic()
            if build is not None:
                build.workers.discard(pid)
                self._send(build, Exited(pid, os.waitstatus_to_exitcode(status)))

    def _shut_down(self) -> int:
        self._stop()
        for build in list(self.builds):
            self._drop(build)
        if self.kept and self.path and self.inode is not None:
            with contextlib.suppress(OSError):  # only our own socket, never a successor's
                if os.stat(self.path).st_ino == self.inode:
                    os.unlink(self.path)
        return 0

    # -- a worker -------------------------------------------------------------------------

    def _fork(self, build: _Build, channel: int, stderr: int) -> None:
        with warnings.catch_warnings():  # Python 3.12+ warns about forking with threads
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
        if pid == 0:
            code = 70
            try:
                code = self._worker(channel, stderr)
            except BaseException:
                with contextlib.suppress(Exception):
                    traceback.print_exc()
            finally:
                os._exit(code)
        os.close(channel)
        os.close(stderr)
        build.workers.add(pid)
        self.owner[pid] = build
        self.forked += 1
        self._send(build, Forked(pid))

    def _worker(self, channel: int, stderr: int) -> int:
        """In the forked child: drop everything of the server's, then lower tasks."""
        signal.set_wakeup_fd(-1)
        for signum in (signal.SIGCHLD, signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, signal.SIG_DFL)
        self.selector.close()
        for fd in (self.wake_r, self.wake_w):
            os.close(fd)
        if self.listener is not None:
            self.listener.close()
        for build in self.builds:
            build.sock.close()
        os.dup2(stderr, 2)
        os.dup2(2, 1)  # TileLang's own prints stay out of the protocol
        os.close(stderr)
        sock = socket.socket(fileno=channel)

        def send(message: Message) -> None:
            sock.sendall(protocol.line(message))

        send(Ready(forked=True, rss_mb=rss_mb()))
        with sock.makefile("rb") as tasks:
            return serve_tasks(tasks, send)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m sphinx_tlstages.worker --serve")
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--fd", type=int, help="the control socket of the one build served")
    where.add_argument("--listen-fd", type=int, help="a kept server's listening socket")
    parser.add_argument("--path", help="where the listening socket is bound")
    parser.add_argument("--key", required=True)
    parser.add_argument("--idle", type=float, default=0.0)
    parser.add_argument("--lowering", required=True, help="the expected lowering stamp")
    parser.add_argument("--tilelang", required=True, help="the expected TileLang stamp")
    parser.add_argument("--describe", default="{}", help="the key's parts, as JSON")
    return parser


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    workdir = None
    if args.listen_fd is not None:  # a kept server: a folder of its own, no terminal
        workdir = tempfile.mkdtemp(prefix="tlstages-kept-")
        os.chdir(workdir)
    server = Server(args)
    code = 1
    try:
        server.start(args)
        code = server.run()
    finally:
        if workdir is not None:
            shutil.rmtree(workdir, ignore_errors=True)
        sys.stdout.flush()
        sys.stderr.flush()
        # Tearing down an interpreter that imported TileLang and torch takes about a
        # second, which a build waiting for its server to end would wait for too.
        os._exit(code)
