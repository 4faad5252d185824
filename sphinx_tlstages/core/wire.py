"""The messages between a build and its lowering processes, as bytes.

Two kinds of connection carry them:

* a worker's channel (a pipe pair or a stream socket): one JSON object per line, tasks
  one way and events (``ready``, ``start``, ``done``) the other;
* a fork server's control socket (``SOCK_SEQPACKET``, Linux): one JSON object per packet,
  file descriptors riding along with the packet that asks for a new worker (its channel
  and the file its stderr goes to).

Both sides import this module, the build's (:mod:`..runner`) and the worker's
(:mod:`..worker`), so it is plain data and the standard library.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
from typing import Any

MAX_PACKET = 1 << 16  # control messages are small; results travel on worker channels
MAX_FDS = 4


def line(message: dict[str, Any]) -> bytes:
    """One message as a line of a worker's channel."""
    return json.dumps(message, sort_keys=True).encode() + b"\n"


def send_packet(sock: socket.socket, message: dict[str, Any], fds: list[int] | None = None
                ) -> None:
    """One control message, with ``fds`` passed along (``SCM_RIGHTS``)."""
    data = json.dumps(message, sort_keys=True).encode()
    if len(data) > MAX_PACKET:
        raise ValueError(f"control message of {len(data)} bytes")
    if fds:
        socket.send_fds(sock, [data], fds)
    else:
        sock.send(data)


def recv_packet(sock: socket.socket) -> tuple[dict[str, Any] | None, list[int]]:
    """The next control message and the descriptors that came with it; ``None`` when
    the other side has closed the connection. Descriptors of a malformed message are
    closed here, so the caller never leaks them."""
    data, fds, _flags, _address = socket.recv_fds(sock, MAX_PACKET, MAX_FDS)
    if not data:
        _close(fds)
        return None, []
    try:
        message = json.loads(data)
    except ValueError:
        message = None
    if not isinstance(message, dict):
        _close(fds)
        return {"op": "malformed"}, []
    return message, list(fds)


def _close(fds: list[int]) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)
