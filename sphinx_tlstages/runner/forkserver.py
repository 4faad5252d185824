"""The build's side of a fork server (:mod:`sphinx_tlstages.worker.server`).

A :class:`ForkServer` is a control connection to one: either a server this build started
for itself (:meth:`ForkServer.private`, gone when the build closes the connection) or a
kept one reached through its socket (:mod:`.kept`). The pool asks it for workers and
reads its events; nothing here waits for the server except :meth:`hello`'s answer when a
caller asks for it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO

from ..core.protocol import wire
from ..core.protocol.messages import Fork, Hello, Message, Refused, ServerStatus, Unavailable


def forking_supported() -> bool:
    """Forked workers need Linux: SOCK_SEQPACKET, descriptor passing, and a fork that
    is safe after importing TileLang (macOS frameworks are not)."""
    return sys.platform.startswith("linux") and hasattr(os, "fork") \
        and hasattr(socket, "SOCK_SEQPACKET") and hasattr(socket, "send_fds")


# Our end of a socket pair, their end, and a file for their stderr.
_Ends = tuple[socket.socket, socket.socket, IO[bytes]]


@contextlib.contextmanager
def _handing_over(kind: socket.SocketKind) -> Iterator[_Ends]:
    """A new socket pair of ``kind`` (our end, their end) and a file for the other side's
    stderr, for the block to hand their end and the file to another process. Their end
    is closed after the block either way (the process has its own copy); ours and the
    file are closed too when handing them over fails, and kept by the caller otherwise."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, kind)
    stderr = tempfile.TemporaryFile()  # noqa: SIM115 - the caller's to close
    try:
        yield ours, theirs, stderr
    except OSError:
        ours.close()
        stderr.close()
        raise
    finally:
        theirs.close()


@dataclass(eq=False)
class Forked:
    """A fork asked for and not yet answered: our end of its channel, its stderr."""

    channel: socket.socket
    stderr: IO[bytes]


@dataclass(eq=False)
class ForkServer:
    """One control connection to a fork server."""

    sock: socket.socket
    key: str
    proc: subprocess.Popen[bytes] | None = None  # a private server, to reap
    stderr: IO[bytes] | None = None  # a private server's, for its last words
    kept: bool = False
    reused: bool = False  # a kept server that was already running
    workdir: str | None = None  # a private server's working folder, removed with it
    state: str = "starting"  # ready, unavailable, refused, gone
    info: ServerStatus | None = None  # its answer to our hello
    message: str = ""
    waiting: deque[Forked] = field(default_factory=deque)

    @classmethod
    def private(cls, key: str, stamps: dict[str, str], env: dict[str, str],
                cwd: str) -> ForkServer:
        """Start a server that serves this build alone (it imports TileLang meanwhile)."""
        # The stderr file is closed with the server.
        with _handing_over(socket.SOCK_SEQPACKET) as (ours, theirs, stderr):
            proc = subprocess.Popen(
                [sys.executable, "-m", "sphinx_tlstages.worker", "--serve",
                 "--fd", str(theirs.fileno()), "--key", key,
                 "--lowering", stamps["lowering"], "--tilelang", stamps["tilelang"]],
                pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL, stdout=stderr,
                stderr=stderr, cwd=cwd, env=env)
        server = cls(ours, key, proc=proc, stderr=stderr, workdir=cwd)
        server.hello()
        return server

    def hello(self, idle: float = 0.0) -> None:
        wire.send_packet(self.sock, Hello(self.key, idle))

    def fork(self) -> Forked:
        """Ask for one more worker; its ``forked`` event names its process."""
        # The channel and the stderr file are closed when the worker retires.
        with _handing_over(socket.SOCK_STREAM) as (ours, theirs, stderr):
            wire.send_packet(self.sock, Fork(), [theirs.fileno(), stderr.fileno()])
        forked = Forked(ours, stderr)
        self.waiting.append(forked)
        return forked

    @property
    def usable(self) -> bool:
        return self.state in ("starting", "ready")

    def read(self) -> Message | None:
        """The next event (``None``: the server has gone)."""
        try:
            message, fds = wire.recv_packet(self.sock)
        except OSError:
            message, fds = None, []
        for fd in fds:  # a server never sends any; never keep one open by mistake
            os.close(fd)
        if message is None:
            self.state = "gone"
            return None
        if isinstance(message, ServerStatus):
            self.state, self.info = "ready", message
        elif isinstance(message, Unavailable):
            self.state, self.message = "unavailable", message.message
        elif isinstance(message, Refused):
            self.state, self.message = "refused", message.reason
        return message

    def last_words(self) -> str:
        """The tail of a private server's output, for a report on why it died."""
        if self.stderr is None:
            return ""
        with contextlib.suppress(OSError, ValueError):
            self.stderr.seek(0)
            return self.stderr.read().decode("utf-8", "replace").strip()[-1500:]
        return ""

    def close(self) -> None:
        """Hang up: a private server then stops its workers and exits."""
        with contextlib.suppress(OSError):
            self.sock.close()
        for forked in self.waiting:
            forked.channel.close()
            forked.stderr.close()
        self.waiting.clear()
        if self.proc is not None:
            # A ready server sees the hang-up at once, stops its workers and exits; one
            # still importing TileLang would finish that first, for nothing.
            try:
                self.proc.wait(timeout=5 if self.state == "ready" else 0.2)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.stderr is not None:
            self.stderr.close()
        if self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)
