"""The shared second level of the lowering cache, on object storage or HTTP.

The local cache stays the first level: what it lacks is asked here (a first request
alone, then the rest in parallel), what comes back is checked
(:mod:`...core.records.cache_entry`) and kept locally, and only what neither level holds
is lowered. A build writes what it
lowered only when asked to and not for a pull request.

The network never fails a build: every request has a short timeout and no retry, the
build waits for the remote for a bounded time in all, and the first failed request (a
refused connection, a timeout, a status other than "not found") switches the remote off
for the rest of the build, as do three bad entries; what was not had is lowered here.
Storage goes through obstore (the ``cache`` extra): one compiled wheel for S3, Google
Cloud Storage, Azure, HTTP and local folders, with credentials from each store's usual
environment variables.

The batch asks the remote only for local misses; the recording twin of a non-recording
miss is asked in a second round that counts no miss. Writes run in the background during
lowering and are joined, within the budget, after it. A bad entry is an error too, and the
third switches the remote off; counting a fault's requests is deterministic because the
first request goes alone. Tests: ``tests/test_remote_cache.py`` against
``tests/remote_servers.py`` (moto's S3 server and a fault-injecting HTTP server, both on
127.0.0.1 with a bounded lifetime), with one kept fork server, so each faulty build forks
instead of importing TileLang; ``benchmarks/remote_cache`` times a warm remote (and says
why obstore, measured against s3fs).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from ...core.records.cache_entry import BadEntry, fragment_name, object_name, pack, unpack

PARALLEL = 8
BAD_ENTRY_LIMIT = 3
BUDGET_TIMEOUTS = 6  # the build waits at most this many timeouts for the remote


def shown_url(url: str) -> str:
    """``url`` without user, password or query (where tokens live), for the log."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host += f":{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def _aws_credentials() -> bool:
    return any(os.environ.get(name) for name in (
        "AWS_ACCESS_KEY_ID", "AWS_PROFILE", "AWS_WEB_IDENTITY_TOKEN_FILE",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI"))


_AZURE = ("AZURE_STORAGE_ACCOUNT_KEY", "AZURE_STORAGE_SAS_KEY", "AZURE_STORAGE_TOKEN",
          "AZURE_CLIENT_ID")
# Where each store's users keep credentials; with none, reads are anonymous.
_OTHER_CREDENTIALS = {"gs": ("GOOGLE_APPLICATION_CREDENTIALS", "GOOGLE_SERVICE_ACCOUNT"),
                      "az": _AZURE, "azure": _AZURE, "abfs": _AZURE, "abfss": _AZURE}


def open_store(url: str, timeout: float) -> Any:
    """An obstore store for ``url``; reads are anonymous where no credentials are set."""
    from obstore import store  # the cache extra; imported only when configured

    from_url: Any = store.from_url  # one call for every scheme; its overloads are per store

    scheme = urlsplit(url).scheme
    client: dict[str, Any] = {"timeout": timedelta(seconds=timeout),
                              "connect_timeout": timedelta(seconds=max(1.0, timeout / 5))}
    endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL", "")
    if scheme == "http" or endpoint.startswith("http://"):
        client["allow_http"] = True
    retry: Any = {"max_retries": 0, "retry_timeout": timedelta(seconds=timeout),
             "backoff": {"init_backoff": timedelta(seconds=0.1),
                         "max_backoff": timedelta(seconds=1), "base": 2}}
    kwargs: dict[str, Any] = {}
    if scheme == "s3":
        if os.environ.get("AWS_PROFILE") and not os.environ.get("AWS_ACCESS_KEY_ID"):
            from obstore.auth.boto3 import Boto3CredentialProvider  # profiles need boto3

            kwargs["credential_provider"] = Boto3CredentialProvider()
        elif not _aws_credentials():
            kwargs["skip_signature"] = True
    elif scheme in _OTHER_CREDENTIALS and not any(
            os.environ.get(name) for name in _OTHER_CREDENTIALS[scheme]):
        kwargs["skip_signature"] = True
    if scheme == "file":
        return from_url(url, mkdir=True)
    return from_url(url, client_options=client, retry_config=retry, **kwargs)


@dataclass
class Counts:
    """What the remote did for one build."""

    hit: int = 0
    missed: int = 0
    written: int = 0
    errors: int = 0
    bad: int = 0  # of the errors, entries that failed their checks
    first_error: str = ""
    off: str = ""  # why the remote was switched off, if it was
    # The pages' rendered fragments, asked for while writing (after the results' line).
    fragments_hit: int = 0
    fragments_missed: int = 0
    fragments_written: int = 0


@dataclass
class Remote:
    """The remote level for one build: reads, writes, and the breaker."""

    url: str
    store: Any
    timeout: float
    read_only: str = ""  # why this build does not write ("" when it does)
    counts: Counts = field(default_factory=Counts)
    waited: float = 0.0
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _writes: list[Future[None]] = field(default_factory=list)
    _pool: ThreadPoolExecutor | None = None

    @property
    def on(self) -> bool:
        return not self.counts.off

    @property
    def budget(self) -> float:
        return BUDGET_TIMEOUTS * self.timeout

    def _switch_off(self, why: str) -> None:
        with self._lock:
            if not self.counts.off:
                self.counts.off = why

    def _error(self, message: str, bad: bool = False) -> None:
        with self._lock:
            self.counts.errors += 1
            self.counts.bad += bad
            self.counts.first_error = self.counts.first_error or message
            tripped = not bad or self.counts.bad >= BAD_ENTRY_LIMIT
        if tripped:
            self._switch_off(message)

    def _read(self, key: str, count_miss: bool = True, name: str = "") -> bytes | None:
        """The body of ``key``'s entry (at ``name``, a result's by default), or None (a
        miss, an error, or remote off)."""
        import obstore

        name = name or object_name(key)
        if not self.on:
            return None
        try:
            data = bytes(obstore.get(self.store, name).bytes())
        except FileNotFoundError:
            with self._lock:
                self.counts.missed += count_miss
            return None
        except Exception as exc:
            self._error(_brief(exc))
            return None
        try:
            body = unpack(key, data)
        except BadEntry as exc:
            self._error(f"bad entry {name}: {exc}", bad=True)
            return None
        return body

    def fragment(self, key: str) -> str | None:
        """A page fragment stored under ``key`` (checked as any entry), or None. Asked one
        at a time as pages are written, within the build's budget."""
        if not self.on:
            return None
        started = time.monotonic()
        if self.waited > self.budget:
            self._switch_off(f"spent its budget of {self.budget:.0f} s")
            return None
        errors = self.counts.errors
        body = self._read(key, count_miss=False, name=fragment_name(key))
        self.waited += time.monotonic() - started
        if body is None:
            with self._lock:
                self.counts.fragments_missed += self.counts.errors == errors
            return None
        try:
            html = body.decode("utf-8")
        except UnicodeDecodeError:
            self._error(f"bad entry {fragment_name(key)}: not UTF-8", bad=True)
            return None
        with self._lock:
            self.counts.fragments_hit += 1
        return html

    def write_fragment(self, key: str, html: str) -> None:
        """Store a page fragment, as :meth:`write` a result."""
        self.write(key, html.encode("utf-8"), name=fragment_name(key))

    def fetch(self, keys: Iterable[str], accept: Callable[[str, bytes], bool],
              count_misses: bool = True) -> set[str]:
        """Read ``keys``; ``accept`` keeps each checked body (False: not a valid result
        here, an error). The first request goes alone: a dead remote costs one. A second
        look for the same variants (another key that would serve them) counts no miss."""
        todo = list(keys)
        if not todo or not self.on:
            return set()
        started = time.monotonic()
        found: set[str] = set()

        def one(key: str) -> None:
            if time.monotonic() - started + self.waited > self.budget:
                self._switch_off(f"spent its budget of {self.budget:.0f} s")
            body = self._read(key, count_misses)
            if body is None:
                return
            if accept(key, body):
                with self._lock:
                    self.counts.hit += 1
                found.add(key)
            else:
                self._error(f"bad entry {object_name(key)}: not a valid result", bad=True)

        one(todo[0])
        if len(todo) > 1 and self.on:
            with ThreadPoolExecutor(min(PARALLEL, len(todo) - 1)) as pool:
                list(pool.map(one, todo[1:]))
        self.waited += time.monotonic() - started
        return found

    def write(self, key: str, body: bytes, replace: bool = False, name: str = "") -> None:
        """Store ``body`` under ``key`` in the background, whole or not at all: write-once
        where the store can (a concurrent writer's entry stands), a plain put elsewhere."""
        if self.read_only or not self.on:
            return
        if self._pool is None:
            self._pool = ThreadPoolExecutor(4)
        self._writes.append(self._pool.submit(
            self._put, key, pack(key, body), replace, name or object_name(key)))

    def _put(self, key: str, data: bytes, replace: bool, name: str) -> None:
        import obstore
        from obstore.exceptions import AlreadyExistsError, NotSupportedError

        if not self.on:
            return
        try:
            try:
                obstore.put(self.store, name, data, mode="overwrite" if replace else "create")
            except (NotSupportedError, NotImplementedError):  # HTTP: a PUT is whole or absent
                obstore.put(self.store, name, data)
        except AlreadyExistsError:
            return  # another build wrote it first
        except Exception as exc:
            self._error(_brief(exc))
            return
        with self._lock:
            if name == object_name(key):
                self.counts.written += 1
            else:
                self.counts.fragments_written += 1

    def finish(self) -> None:
        """Wait for the writes, within what is left of the budget; drop the rest."""
        if self._pool is None:
            return
        started = time.monotonic()
        for future in self._writes:
            left = self.budget - self.waited - (time.monotonic() - started)
            try:
                future.result(timeout=max(0.0, left))
            except Exception:
                self._switch_off(f"spent its budget of {self.budget:.0f} s")
                break
        self._pool.shutdown(wait=False, cancel_futures=True)
        self._pool, self._writes = None, []  # the pages' fragments may follow
        self.waited += time.monotonic() - started

    def line(self, lowered: int) -> str:
        """The build log's line."""
        c = self.counts
        mode = f" ({self.read_only})" if self.read_only else ""
        off = f"; switched off: {c.off}" if c.off else ""
        return (f"remote cache {shown_url(self.url)}: {c.hit} hit, {c.missed} missed, "
                f"{lowered} lowered, {c.written} written{mode}, {c.errors} errors{off}")


    def fragments_line(self) -> str:
        """The build log's line about the pages' fragments, once they are written."""
        c = self.counts
        off = f"; switched off: {c.off}" if c.off else ""
        return (f"remote cache {shown_url(self.url)}: page fragments {c.fragments_hit} hit, "
                f"{c.fragments_missed} missed, {c.fragments_written} written, "
                f"{c.errors} errors in all{off}")


def _brief(exc: BaseException) -> str:
    """An exception's first line, as obstore's messages carry a long debug dump."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:300]
