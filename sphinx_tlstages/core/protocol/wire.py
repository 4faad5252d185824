"""The messages of :mod:`.messages` as bytes on a fork server's control socket.

A worker's channel (a pipe pair or a stream socket) carries one JSON object per line
(:func:`.messages.line`); a fork server's control socket (``SOCK_SEQPACKET``, Linux) one
JSON object per packet, file descriptors riding along with the packet that asks for a new
worker (its channel and the file its stderr goes to). Both sides import this module, the
build's (:mod:`...runner`) and the worker's (:mod:`...worker`).
"""

from __future__ import annotations

import contextlib
import json
import os
import socket

from .messages import Malformed, Message, decode

MAX_PACKET = 1 << 16  # control messages are small; results travel on worker channels
MAX_FDS = 4


def send_packet(sock: socket.socket, message: Message, fds: list[int] | None = None
                ) -> None:
    """One control message, with ``fds`` passed along (``SCM_RIGHTS``)."""
    data = json.dumps(message.encode(), sort_keys=True).encode()
    if len(data) > MAX_PACKET:
        raise ValueError(f"control message of {len(data)} bytes")
    if fds:
        socket.send_fds(sock, [data], fds)
    else:
        sock.send(data)


def recv_packet(sock: socket.socket) -> tuple[Message | None, list[int]]:
    """The next control message and the descriptors that came with it; ``None`` when
    the other side has closed the connection. Descriptors of a malformed message are
    closed here, so the caller never leaks them."""
    data, fds, _flags, _address = socket.recv_fds(sock, MAX_PACKET, MAX_FDS)
    if not data:
        _close(fds)
        return None, []
    try:
        message = decode(json.loads(data))
    except ValueError:
        message = Malformed()
    if isinstance(message, Malformed):
        _close(fds)
        return message, []
    return message, list(fds)


def _close(fds: list[int]) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)
