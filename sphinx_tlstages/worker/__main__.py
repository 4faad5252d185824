"""A lowering worker: ``python -m sphinx_tlstages.worker``.

Reads one JSON task per line on stdin and answers JSON lines on a private copy of stdout;
whatever TileLang prints goes to stderr. It imports TileLang once, then lowers many
variants. Sphinx starts it as a fresh process (never a fork of itself).

``python -m sphinx_tlstages.worker --serve ...`` is the fork server instead
(:mod:`.server`): TileLang imported once, and every worker a fork of it.
"""

from __future__ import annotations

import os
import sys
from typing import TextIO

from ..core.protocol import messages as protocol
from ..core.protocol.messages import Message, Ready, Unavailable
from .tasks import import_tilelang, peak_rss_mb, serve_tasks


def _send(channel: TextIO, message: Message) -> None:
    channel.write(protocol.line(message).decode())
    channel.flush()


def main() -> int:
    if sys.argv[1:2] == ["--serve"]:
        from .server import main as serve

        return serve(sys.argv[2:])
    channel = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # keep TileLang's own prints out of the protocol
    seconds, unavailable = import_tilelang()
    if unavailable is not None:
        _send(channel, Unavailable(unavailable))
        return 3
    _send(channel, Ready(seconds=round(seconds, 3), peak_rss_mb=peak_rss_mb()))
    code = serve_tasks(sys.stdin, lambda message: _send(channel, message))
    channel.close()
    sys.stdout.flush()
    sys.stderr.flush()
    # Tearing down an interpreter that imported TileLang and torch takes about a second,
    # which the pool, waiting for this worker to end, would wait for too.
    os._exit(code)


if __name__ == "__main__":
    sys.exit(main())
