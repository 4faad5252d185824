"""Real servers on 127.0.0.1 for the remote cache's tests: moto's S3-compatible server,
and a plain HTTP server of our own that serves entries or injects one fault."""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SLOW_SECONDS = 1.5  # three times the tests' 0.5 s timeout
LIFETIME = 300.0  # a server of the tests never outlives this


class FaultServer(ThreadingHTTPServer):
    """GET and PUT of objects in memory, with ``fault`` applied to every GET ("404", "403",
    "429", "500", "truncated", "digest", "slow", "refused" or "dies")."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.objects: dict[str, bytes] = {}
        self.fault = ""
        self.die_after = 1  # "dies": GETs answered before the server goes away
        self.gets = 0
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/cache"


class _Handler(BaseHTTPRequestHandler):
    server: FaultServer

    def log_message(self, *args: object) -> None:
        pass

    def _name(self) -> str:
        return self.path.split("?", 1)[0].removeprefix("/cache/")

    def do_GET(self) -> None:
        server, fault = self.server, self.server.fault
        with server.lock:
            server.gets += 1
            count = server.gets
        if fault == "dies" and count > server.die_after:
            threading.Thread(target=_die, args=(server,), daemon=True).start()
            self.close_connection = True
            return  # no answer at all: the connection just closes
        if fault in ("404", "403", "429", "500"):
            self.send_error(int(fault))
            return
        data = server.objects.get(self._name())
        if data is None:
            self.send_error(404)
            return
        if fault == "slow":
            time.sleep(SLOW_SECONDS)
        if fault == "digest":  # the last byte of the body changed: same size, other digest
            data = data[:-1] + bytes([data[-1] ^ 1])
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if fault == "truncated":
            self.wfile.write(data[:len(data) // 2])
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        self.wfile.write(data)

    do_HEAD = do_GET

    def do_PUT(self) -> None:
        length = int(self.headers.get("Content-Length", 0))
        self.server.objects[self._name()] = self.rfile.read(length)
        self.send_response(201)
        self.send_header("Content-Length", "0")
        self.end_headers()


def _die(server: FaultServer) -> None:
    server.shutdown()
    server.server_close()


@contextlib.contextmanager
def fault_server() -> Iterator[FaultServer]:
    server = FaultServer()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    timer = threading.Timer(LIFETIME, _die, args=(server,))
    timer.daemon = True
    timer.start()
    try:
        yield server
    finally:
        timer.cancel()
        with contextlib.suppress(OSError):
            _die(server)


def refused_url() -> str:
    """A URL on 127.0.0.1 where nothing listens (a port just freed)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/cache"


@contextlib.contextmanager
def s3_server() -> Iterator[str]:
    """moto's S3-compatible server on a free port of 127.0.0.1, stopped at the end (or
    after :data:`LIFETIME`); yields its endpoint URL."""
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one line per request otherwise
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    timer = threading.Timer(LIFETIME, server.stop)
    timer.daemon = True
    timer.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        timer.cancel()
        with contextlib.suppress(Exception):
            server.stop()


def s3_objects(prefix: str) -> dict[str, bytes]:
    """Every object of the ``books`` bucket under ``prefix``, by key."""
    import boto3

    client = boto3.client("s3")
    listed = client.list_objects_v2(Bucket="books", Prefix=prefix).get("Contents", [])
    return {item["Key"]: client.get_object(Bucket="books", Key=item["Key"])["Body"].read()
            for item in listed}
