"""Kept fork servers: TileLang imported once and kept between builds on this machine.

With ``tlstages_keep_workers = SECONDS`` a build leaves its fork server running, and the
next build with the same key reaches it through a Unix socket instead of importing
TileLang again (an edit in a live-preview session re-lowers only what changed, at once).
The key covers everything a worker's results depend on: the interpreter and its
environment, the TileLang build, the worker code's digest
(:func:`~sphinx_tlstages.core.results.stamps.lowering_stamp`), the workers' import path, the
kernels' extra import path and the environment variables that reach TileLang; anything
else gets a server of its own, so an upgrade, another virtual environment or an edited
extension never talks to an old server. A server exits after ``SECONDS`` without use.

Sockets live in a folder only their user may enter (``$XDG_RUNTIME_DIR/sphinx-tlstages``,
else ``<tmp>/sphinx-tlstages-<uid>``; ``TLSTAGES_WORKERS_DIR`` chooses another), named by
the key: short enough for the 108-byte limit on socket paths.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import socket
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ..core.protocol import wire
from ..core.protocol.messages import Message, ServerStatus, StatusQuery, Stop, Stopping
from .forkserver import ForkServer

SOCKET_PATH_MAX = 104  # sun_path holds 108 bytes with its NUL; leave a margin
KEY_LENGTH = 20
# What reaches TileLang from the environment besides the interpreter: a server started
# under other values of these must not answer for this build.
_ENV_PREFIXES = ("TL_", "TVM", "TILELANG", "CUDA", "NVCC", "NVIDIA", "PYTHON", "LD_",
                 "TORCH", "OMP_", "MKL_", "VIRTUAL_ENV", "CONDA")
_ENV_NAMES = ("PATH", "HOME", "TMPDIR")


class KeptUnavailable(Exception):
    """No kept server can be used here (no private folder for its socket, say)."""


def key_parts(env: dict[str, str], stamps: dict[str, str],
              python_path: Sequence[str]) -> dict[str, Any]:
    """Everything a worker's results depend on, readable (``tlstages workers status``)."""
    return {
        "python": sys.executable,
        "prefix": sys.prefix,
        "python version": sys.version.split()[0],
        "TileLang build": stamps["tilelang"],
        "lowering code": stamps["lowering"],
        "workers' import path": env.get("PYTHONPATH", ""),
        "kernels' import path": list(python_path),
        "environment": {name: value for name, value in sorted(env.items())
                        if name.startswith(_ENV_PREFIXES) or name in _ENV_NAMES},
    }


def pool_key(parts: dict[str, Any]) -> str:
    blob = json.dumps(parts, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:KEY_LENGTH]


def _private_folder(folder: Path) -> bool:
    """Create ``folder`` for this user alone, or check that it is one (not a link,
    ours, nobody else's way in)."""
    with contextlib.suppress(FileExistsError):
        folder.mkdir(mode=0o700, parents=False)
    info = os.lstat(folder)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
        return False
    if info.st_mode & 0o077:
        os.chmod(folder, 0o700)
    return True


def socket_folder() -> Path:
    """The folder of this user's kept servers' sockets."""
    chosen = os.environ.get("TLSTAGES_WORKERS_DIR")
    if chosen:
        candidates = [Path(chosen)]
    else:
        candidates = []
        runtime = os.environ.get("XDG_RUNTIME_DIR")
        if runtime:
            candidates.append(Path(runtime) / "sphinx-tlstages")
        candidates.append(Path(tempfile.gettempdir()) / f"sphinx-tlstages-{os.getuid()}")
    for folder in candidates:
        sock = folder / f"{'0' * KEY_LENGTH}.sock"
        if len(os.fsencode(sock)) > SOCKET_PATH_MAX:
            continue
        try:
            if _private_folder(folder):
                return folder
        except OSError:
            continue
    raise KeptUnavailable("no private folder with a path short enough for a Unix socket "
                          f"(tried {', '.join(map(str, candidates))})")


def socket_path(key: str) -> Path:
    return socket_folder() / f"{key}.sock"


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """One build at a time decides whether to start a server for a key."""
    with open(path.with_suffix(".lock"), "a", encoding="ascii") as handle:
        os.chmod(handle.name, 0o600)
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _connect(path: Path) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        sock.connect(str(path))
    except OSError:
        sock.close()
        raise
    return sock


def reach(parts: dict[str, Any], stamps: dict[str, str], env: dict[str, str],
          idle: float) -> ForkServer:
    """The kept server for ``parts``, started if none answers (``reused`` says whether
    one was running). Its hello is sent; its answer comes as the ``ready`` event."""
    key = pool_key(parts)
    path = socket_path(key)
    with _locked(path):
        try:
            server = ForkServer(_connect(path), key, kept=True, reused=True)
        except OSError:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()  # a server that died without cleaning up
            _start(path, key, stamps, env, idle, parts)
            server = ForkServer(_connect(path), key, kept=True)
    server.hello(idle)
    return server


def _start(path: Path, key: str, stamps: dict[str, str], env: dict[str, str],
           idle: float, parts: dict[str, Any]) -> None:
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    old = os.umask(0o177)  # the socket file: this user only
    try:
        listener.bind(str(path))
    finally:
        os.umask(old)
    try:
        listener.listen(16)
        log = open(path.with_suffix(".log"), "ab")  # noqa: SIM115 - the server's from now
        try:
            os.chmod(log.name, 0o600)
            subprocess.Popen(
                [sys.executable, "-m", "sphinx_tlstages.worker", "--serve",
                 "--listen-fd", str(listener.fileno()), "--path", str(path), "--key", key,
                 "--idle", str(idle), "--lowering", stamps["lowering"],
                 "--tilelang", stamps["tilelang"], "--describe", json.dumps(parts)],
                pass_fds=[listener.fileno()], stdin=subprocess.DEVNULL, stdout=log,
                stderr=log, env=env, cwd=str(path.parent),
                start_new_session=True)  # outlives this build and its terminal
        finally:
            log.close()
    finally:
        listener.close()


def _ask(path: Path, request: Message, timeout: float = 5.0) -> Message | None:
    try:
        sock = _connect(path)
    except OSError:
        return None
    with sock:
        sock.settimeout(timeout)
        try:
            wire.send_packet(sock, request)
            answer, _ = wire.recv_packet(sock)
        except OSError:
            return None
    return answer


def servers() -> list[tuple[Path, ServerStatus | None]]:
    """Every kept server's socket in this user's folder, with its status (``None``:
    it does not answer, a leftover of one that died)."""
    try:
        folder = socket_folder()
    except KeptUnavailable:
        return []
    found = [(path, _ask(path, StatusQuery())) for path in sorted(folder.glob("*.sock"))]
    return [(path, a if isinstance(a, ServerStatus) else None) for path, a in found]


def stop(path: Path) -> bool:
    """Stop the server at ``path`` (its workers too); True when it said it would."""
    answer = _ask(path, Stop())
    if answer is None:
        with contextlib.suppress(OSError):
            path.unlink()
        return False
    return isinstance(answer, Stopping)
