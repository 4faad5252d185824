"""The messages between a build and its lowering processes, typed, in one place.

Every message name and field is spelled here and nowhere else in the package; both sides
(:mod:`...runner` and :mod:`...worker`) build and read these records, and :mod:`.wire`
frames them as bytes. Two connections carry them:

* a worker's channel: :class:`TaskLine` one way; :class:`Ready`, :class:`Unavailable`,
  :class:`Start` and :class:`Done` the other;
* a fork server's control socket: :class:`Hello`, :class:`Fork`, :class:`StatusQuery`
  and :class:`Stop` one way; :class:`ServerStatus` (as ``ready`` or ``status``),
  :class:`Unavailable`, :class:`Refused`, :class:`Stopping`, :class:`Forked` and
  :class:`Exited` the other.

The task a worker receives is a :class:`Task`: every input of one lowering. Its key is
computed from its own canonical form (:meth:`Task.key`), so a task may carry fields that
never change a result without changing any key.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import KW_ONLY, dataclass, field, fields
from typing import Any, ClassVar

from ..results.result import RESULT_SCHEMA
from ..results.stamps import lowering_stamp

Json = dict[str, Any]


def _fields(record: Any) -> Json:
    """A record's fields, shallow: ``dataclasses.asdict`` would deep-copy a result, and a
    copy of a TVM object (a result's strings may be TVM's) is not one to free twice."""
    return {f.name: getattr(record, f.name) for f in fields(record)}


# -- the task ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Task:
    """The inputs of one lowering, as the worker receives them."""

    source: str
    source_name: str
    factory: str
    params: tuple[tuple[str, str], ...]  # (name, repr of the literal), as written
    num_stages: int
    target: Json  # the canonical TVM target dict
    # The rest by keyword: seven optional inputs in a row are easy to pass in the wrong slot.
    _: KW_ONLY
    ir_passes: tuple[str, ...] = ()
    file: str | None = None  # absolute path of a :file: kernel
    folders: tuple[str, ...] = ()  # absolute, first on the import path
    where: tuple[str, ...] = ()  # the same folders, relative to conf.py
    depth_param: str | None = "num_stages"  # None: the kernel fixes its depth
    record_passes: bool = False
    # The IR's fingerprint after each pass run (provenance a snapshot keeps, to name the
    # pass behind a drift): taken where a snapshot may be written from the result. Not
    # part of the key: a result with them holds all of one without.
    fingerprints: bool = True
    # NVIDIA's compiler for the resources part: {"nvcc": path, "origin": what it is}; in
    # the key by its origin only (a wheel's version), never by where it is installed.
    toolkit: Json | None = None

    def encode(self) -> Json:
        data = _fields(self)
        data["params"] = [list(p) for p in self.params]
        for name in ("ir_passes", "folders", "where"):
            data[name] = list(data[name])
        return data

    @classmethod
    def decode(cls, data: Json) -> Task:
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        values["params"] = tuple(tuple(map(str, p)) for p in values.get("params", ()))
        for name in ("ir_passes", "folders", "where"):
            values[name] = tuple(values.get(name) or ())
        return cls(**values)

    def canonical(self) -> Json:
        """What the key is made of: machine-independent, keyword order ignored, fields
        at their usual value left out (keys stay as they were before such a field
        existed)."""
        found: Json = {
            "source": self.source, "source_name": self.source_name, "factory": self.factory,
            "params": sorted(list(p) for p in self.params), "num_stages": self.num_stages,
            "target": self.target, "ir_passes": list(self.ir_passes),
        }
        if self.where:
            found["where"] = list(self.where)
        if self.depth_param != "num_stages":
            found["depth_param"] = self.depth_param
        if self.record_passes:
            found["record_passes"] = True
        if self.toolkit is not None:
            found["toolkit"] = self.toolkit.get("origin")
        return found

    def key(self, stamp: str) -> str:
        """Content address of the result: the inputs, the TileLang build ``stamp``, this
        extension's lowering code and the result schema."""
        blob = json.dumps({"schema": RESULT_SCHEMA, "tilelang": stamp,
                           "lowering": lowering_stamp(), **self.canonical()},
                          sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()


# -- messages --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Message:
    """A message: its name (the ``event`` or ``op`` field on the wire) and fields."""

    NAME: ClassVar[str] = ""
    KIND: ClassVar[str] = "event"  # "op" for the build's requests to a fork server

    def encode(self) -> Json:
        return {self.KIND: self.NAME, **_fields(self)}


@dataclass(frozen=True)
class TaskLine(Message):
    """Build -> worker: lower ``task``, answer under ``id``."""

    NAME: ClassVar[str] = "task"
    id: str
    task: Task

    def encode(self) -> Json:
        return {"id": self.id, "task": self.task.encode()}


@dataclass(frozen=True)
class Ready(Message):
    """Worker -> build: TileLang imported (``seconds``; 0 for a fork), ready for tasks."""

    NAME: ClassVar[str] = "ready"
    seconds: float = 0.0
    forked: bool = False
    peak_rss_mb: float = 0.0
    rss_mb: float = 0.0


@dataclass(frozen=True)
class Unavailable(Message):
    """Worker or server -> build: TileLang cannot lower here, and why."""

    NAME: ClassVar[str] = "unavailable"
    message: str = ""


@dataclass(frozen=True)
class Start(Message):
    """Worker -> build: lowering task ``id`` begins (its time limit counts from here)."""

    NAME: ClassVar[str] = "start"
    id: str = ""


@dataclass(frozen=True)
class Done(Message):
    """Worker -> build: task ``id``'s result; ``retiring``: the worker exits after it."""

    NAME: ClassVar[str] = "done"
    id: str = ""
    result: Json = field(default_factory=dict)
    peak_rss_mb: float = 0.0
    rss_mb: float = 0.0
    retiring: bool = False


@dataclass(frozen=True)
class Hello(Message):
    """Build -> server: the key it expects, and how long the server may idle after."""

    NAME: ClassVar[str] = "hello"
    KIND: ClassVar[str] = "op"
    key: str = ""
    idle: float = 0.0


@dataclass(frozen=True)
class Fork(Message):
    """Build -> server: one more worker (its channel and stderr ride along)."""

    NAME: ClassVar[str] = "fork"
    KIND: ClassVar[str] = "op"


@dataclass(frozen=True)
class StatusQuery(Message):
    """``tlstages workers status`` -> server: describe yourself."""

    NAME: ClassVar[str] = "status"
    KIND: ClassVar[str] = "op"


@dataclass(frozen=True)
class Stop(Message):
    """``tlstages workers stop`` -> server: end, with your workers."""

    NAME: ClassVar[str] = "stop"
    KIND: ClassVar[str] = "op"


@dataclass(frozen=True)
class ServerStatus(Message):
    """Server -> build: what ``tlstages workers status`` shows; sent as ``ready`` in
    answer to a hello, as ``status`` to a query."""

    NAME: ClassVar[str] = "status"
    pid: int = 0
    key: str = ""
    kept: bool = False
    path: str | None = None
    started: float = 0.0
    idle_seconds: float = 0.0
    idle_for: float = 0.0
    import_seconds: float = 0.0
    connections: int = 0
    served: int = 0
    workers: int = 0
    forked: int = 0
    rss_mb: float = 0.0
    describe: str = ""
    ready: bool = False  # the answer to a hello

    def encode(self) -> Json:
        data = _fields(self)
        del data["ready"]
        return {"event": "ready" if self.ready else "status", **data}


@dataclass(frozen=True)
class Refused(Message):
    """Server -> build: not this build's server (keyed differently)."""

    NAME: ClassVar[str] = "refused"
    reason: str = ""


@dataclass(frozen=True)
class Stopping(Message):
    """Server -> ``tlstages workers stop``: it ends now."""

    NAME: ClassVar[str] = "stopping"
    pid: int = 0


@dataclass(frozen=True)
class Forked(Message):
    """Server -> build: the worker asked for runs as ``pid``."""

    NAME: ClassVar[str] = "forked"
    pid: int = 0


@dataclass(frozen=True)
class Exited(Message):
    """Server -> build: worker ``pid`` ended with exit ``code``."""

    NAME: ClassVar[str] = "exited"
    pid: int = 0
    code: int = 0


@dataclass(frozen=True)
class Malformed(Message):
    """What could not be read as a message."""

    NAME: ClassVar[str] = "malformed"
    KIND: ClassVar[str] = "op"


_EVENTS: dict[str, type[Message]] = {m.NAME: m for m in (
    Ready, Unavailable, Start, Done, Refused, Stopping, Forked, Exited)}
_OPS: dict[str, type[Message]] = {m.NAME: m for m in (Hello, Fork, StatusQuery, Stop)}


def _build(cls: type[Message], data: Json) -> Message:
    known = {f.name for f in fields(cls)}
    try:
        return cls(**{k: v for k, v in data.items() if k in known})
    except TypeError:
        return Malformed()


def decode(data: object) -> Message:
    """A message from its JSON object (:class:`Malformed` when it is none)."""
    if not isinstance(data, dict):
        return Malformed()
    if "task" in data and "id" in data and isinstance(data["task"], dict):
        try:
            return TaskLine(str(data["id"]), Task.decode(data["task"]))
        except (TypeError, ValueError):
            return Malformed()
    event, op = data.get("event"), data.get("op")
    if event in ("ready", "status") and "key" in data:
        return _build(ServerStatus, {**data, "ready": event == "ready"})
    if isinstance(event, str) and event in _EVENTS:
        return _build(_EVENTS[event], data)
    if isinstance(op, str) and op in _OPS:
        return _build(_OPS[op], data)
    return Malformed()


def line(message: Message) -> bytes:
    """One message as a line of a worker's channel."""
    return json.dumps(message.encode(), sort_keys=True).encode() + b"\n"


def read_line(raw: bytes | str) -> Message:
    """A line of a worker's channel, decoded."""
    try:
        return decode(json.loads(raw))
    except ValueError:
        return Malformed()
