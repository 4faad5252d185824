"""The one protocol between a build and its lowering processes: every message survives
its encoding, a task becomes the variant's inputs again, and the key is the task's."""

from __future__ import annotations

import dataclasses
import json

import pytest

from sphinx_tlstages.core.plan.spec import KernelOrigin, VariantSpec
from sphinx_tlstages.core.plan.targets import parse_target
from sphinx_tlstages.core.protocol import messages as protocol
from sphinx_tlstages.core.protocol.messages import (
    Done,
    Exited,
    Fork,
    Forked,
    Hello,
    Malformed,
    Message,
    Ready,
    Refused,
    ServerStatus,
    Start,
    StatusQuery,
    Stop,
    Stopping,
    Task,
    TaskLine,
    Unavailable,
)

VARIANT = VariantSpec("def f(num_stages):\n    pass\n", "kernel.py", "f",
                      (("M", "1024"), ("dtype", "T.float16")), 3, parse_target("sm_90a"),
                      axes=(("num_stages", "3"),), ir_passes=("tl.Simplify#2",),
                      origin=KernelOrigin("/abs/k.py", ("/abs",), ("kernels",)),
                      depth_param="stages")
TASK = VARIANT.task()

MESSAGES: list[Message] = [
    TaskLine("key1", TASK), Ready(1.25, False, 480.0, 470.5), Ready(forked=True, rss_mb=9.0),
    Unavailable("no CUDA code generator"), Start("key1"),
    Done("key1", {"ok": True, "cuda": "x"}, 500.0, 490.0, True),
    Hello("k" * 16, 600.0), Fork(), StatusQuery(), Stop(),
    ServerStatus(pid=7, key="k", kept=True, path="/s.sock", started=1.5, served=2,
                 describe="{}", ready=True),
    ServerStatus(pid=7, key="k"), Refused("keyed differently"), Stopping(7), Forked(8),
    Exited(8, -9),
]


@pytest.mark.parametrize("message", MESSAGES, ids=lambda m: type(m).__name__)
def test_every_message_survives_its_encoding(message: Message) -> None:
    line = protocol.line(message)
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert protocol.read_line(line) == message
    assert protocol.decode(json.loads(line)) == message


def test_the_task_is_the_variants_inputs_and_its_key_the_variants() -> None:
    assert (TASK.source, TASK.factory, TASK.num_stages, TASK.depth_param) == (
        VARIANT.source, VARIANT.factory, 3, "stages")
    assert TASK.target == {"arch": "sm_90a", "kind": "cuda"}
    assert (TASK.file, TASK.folders, TASK.where) == ("/abs/k.py", ("/abs",), ("kernels",))
    assert Task.decode(json.loads(json.dumps(TASK.encode()))) == TASK
    assert TASK.key("tl") == VARIANT.key("tl")
    # What is not an input of the lowering, or is machine-specific, is not in the key.
    elsewhere = dataclasses.replace(TASK, file="/other/k.py", folders=("/other",))
    assert elsewhere.key("tl") == TASK.key("tl")
    assert dataclasses.replace(VARIANT, axes=(), merged=(1, 3)).key("tl") == VARIANT.key("tl")
    assert dataclasses.replace(TASK, where=("lib",)).key("tl") != TASK.key("tl")
    assert dataclasses.replace(TASK, num_stages=4).key("tl") != TASK.key("tl")


def test_fields_at_their_usual_value_stay_out_of_the_canonical_form() -> None:
    plain = Task("s", "kernel.py", "f", (), 2, {"kind": "cuda", "arch": "sm_80"})
    assert set(plain.canonical()) == {"source", "source_name", "factory", "params",
                                      "num_stages", "target", "ir_passes"}
    assert dataclasses.replace(plain, record_passes=True).canonical()["record_passes"]


@pytest.mark.parametrize("raw", [b"not json", b"[1, 2]", b'{"event": "nonsense"}',
                                 b'{"op": "fork", "extra": 1, "nested": {}}x',
                                 b'{"event": "exited", "pid": 1, "code": 0, "surplus": 2}'])
def test_what_is_not_a_message_is_malformed_or_read_leniently(raw: bytes) -> None:
    found = protocol.read_line(raw)
    if raw.startswith(b'{"event": "exited"'):
        assert found == Exited(1, 0)  # a field of a newer sender is ignored
    else:
        assert isinstance(found, Malformed)
