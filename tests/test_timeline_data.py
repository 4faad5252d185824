"""Timeline files without TileLang: the probes' buffer, the plan a recording is held to,
and the recording read as what each warp did (quick)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

from sphinx_tlstages.core.records.timeline_data import order_problems, plan_of, site_token
from sphinx_tlstages.core.records.timeline_read import (
    clock_mhz,
    read_warp,
    summary,
    timeline_input,
)
from sphinx_tlstages.core.results.probes import HEADER, MAGIC, decode

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "timeline-h100.json"


def _recording(stages: str = "1") -> dict:  # type: ignore[type-arg]
    data = json.loads(FIXTURE.read_text())
    return data["directives"]["timed"]["variants"][stages]  # type: ignore[no-any-return]


def test_the_buffer_is_read_back_per_warp() -> None:
    blocks, warps, capacity = 2, 2, 4
    words = [0] * (blocks * warps * capacity * 2)
    base = 2 * capacity * (1 * warps + 0)  # block 1, warp 0
    words[base:base + 4] = [3, 100, 900, MAGIC]  # three events, the last one lost
    words[base + 2 * HEADER:base + 2 * HEADER + 4] = [50, (7 << 32) | 0xFFFFFFFF,
                                                      60, (8 << 32) | 2]
    (record,) = decode(words, blocks, warps, capacity)
    assert (record.block, record.warp, record.nanoseconds, record.lost) == (1, 0, 800, 1)
    assert record.events == [(7, -1, 50), (8, 2, 60)]


def test_the_plan_of_a_cp_async_and_a_warp_specialised_schedule() -> None:
    fig = {"kind": "cp_async", "statements": [{"text": "T.copy(A, A_s)"},
                                              {"text": "T.gemm(A_s, B_s, C)"}],
           "loop": {"min": 0, "extent": 14},
           "prologue": [[{"stmt": 0}, {"sync": "commit"}], [{"stmt": 0}, {"sync": "commit"}]],
           "body": [{"stmt": 0}, {"sync": "commit"}, {"sync": "wait", "n": 2}, {"stmt": 1}],
           "epilogue": [[{"sync": "wait", "n": 1}, {"stmt": 1}]]}
    assert plan_of([fig]) == [{"role": None, "before": ["C", "C"], "body": ["C", "W2", "M"],
                               "extent": 14, "after": ["W1", "M"]}]
    ws = {"kind": "warp_specialized",
          "producer": {"loop": {"extent": 16}, "before": [], "after": [],
                       "body": [{"barrier_op": "wait"}, {"op": "tma_copy"},
                                {"op": "tma_copy"}]},
          "consumer": {"loop": {"extent": 16}, "before": [{"op": "fill"}], "after": [],
                       "body": [{"barrier_op": "wait"}, {"op": "gemm"},
                                {"barrier_op": "arrive"}]}}
    assert [(p["role"], p["body"]) for p in plan_of([ws]) or []] == [
        ("producer", ["B", "T", "T"]), ("consumer", ["B", "M", "A"])]
    assert plan_of([fig, fig]) is None  # two loops: not compared
    assert site_token({"kind": "wait", "at": "after", "n": 3}) == "W3"
    assert site_token({"kind": "wait", "at": "before", "n": 3}) is None


def test_a_recording_as_planned_and_one_that_is_not() -> None:
    recording = _recording("3")
    assert order_problems(recording) == []
    # A warp that waited on wait<1> where the plan has wait<2>: the sites say otherwise.
    other = copy.deepcopy(recording)
    for site in other["sites"]:
        if site.get("n") == 2:
            site["n"] = 1
    (problem, *_) = order_problems(other)
    assert problem.startswith("warp 0 of block 0 ran C C W1 M C at its step 4 where the "
                              "schedule plans C C W2 M C")
    # A clock read out of turn: the compiler moved a probe.
    moved = copy.deepcopy(recording)
    events = moved["warps"][0]["events"]
    events[5][2], events[6][2] = events[6][2], events[5][2]
    assert "warp 0 of block 0 read the clock out of order at its event 6: the compiler " \
           "moved a probe" in order_problems(moved)
    moved["same_code"] = False
    assert order_problems(moved)[0] == "the code probed is not the code the page lists"


def test_a_warp_read_as_what_it_did() -> None:
    recording = _recording("1")
    line = read_warp(recording, recording["warps"][0])
    kinds = [segment[0] for segment in line.segments[:6]]
    # copies closed by the prologue's commit, then in the loop: wait<0>, the barrier,
    # the T.gemm, the barrier, the next copies
    assert kinds == ["issue", "wait", "barrier", "mma", "barrier", "issue"]
    assert line.segments[1][3:] == ["W0", 0]
    assert sorted(line.starts) == list(range(15)) and line.parts["loop"][0] > 0
    (role,) = summary(recording)
    assert role["role"] is None and role["warps"] == 2
    assert 0.3 < role["wait"] < 0.45 and 0.3 < role["mma"] < 0.4
    assert 1700 < (clock_mhz(recording) or 0) < 1760
    three = summary(_recording("3"))[0]
    assert three["wait"] < 0.1 and three["iteration"] < role["iteration"]


def test_the_figure_input_hides_or_marks_stale_recordings() -> None:
    data = json.loads(FIXTURE.read_text())
    entry = data["directives"]["timed"]
    variants = [{"id": "1", "heading": "num_stages=1"}, {"id": "3", "heading": "num_stages=3"}]
    marked = timeline_input(data, entry, ("1",), "mark", variants, "timed")
    assert marked is not None and [p["stale"] for p in marked["panels"]] == [True, False]
    assert marked["panels"][0]["rows"][0]["label"] == "warp 0"
    hidden = timeline_input(data, entry, ("1",), "hide", variants, "timed")
    assert hidden is not None and [p["id"] for p in hidden["panels"]] == ["3"]
    assert timeline_input(data, entry, ("1", "3"), "hide", variants, "timed") is None


def test_the_option_names_the_variants_to_record() -> None:
    import pytest

    from sphinx_tlstages.core.errors import OptionError
    from sphinx_tlstages.core.plan.options import Expected, parse_timeline
    from sphinx_tlstages.core.plan.targets import parse_target
    from sphinx_tlstages.core.planner import Defaults, Kernel, plan

    assert parse_timeline("1 3") == (Expected(1), Expected(3))
    assert parse_timeline("sm_90a:3") == (Expected(3, "sm_90a"),)
    assert parse_timeline(" ") == ()
    with pytest.raises(OptionError, match="give num_stages values"):
        parse_timeline("2: anything")
    gemm = (Path(__file__).resolve().parent.parent / "book" / "kernels" / "gemm.py").read_text()
    params = "M=1024 N=1024 K=1024 block_M=128 block_N=128 block_K=64 threads=128"

    def planned(value: str):  # type: ignore[no-untyped-def]
        return plan({"timeline": value, "num-stages": "1 2", "params": params},
                    Kernel(gemm, "gemm.py"), Defaults(targets=(parse_target("sm_80"),)),
                    name="x", docname="d", lineno=1)

    every = planned("")
    assert every.timeline == (Expected(1), Expected(2))
    assert [every.wants_timeline(v) for v in every.variants] == [True, True]
    one = planned("2")
    assert [one.wants_timeline(v) for v in one.variants] == [False, True]
    with pytest.raises(OptionError, match=":timeline: 5 is not in :num-stages:"):
        planned("5")


def test_a_recording_without_a_plan_is_not_said_to_follow_one() -> None:
    data = json.loads(FIXTURE.read_text())
    entry = data["directives"]["timed"]
    entry["variants"]["3"]["plan"] = None  # several pipelined loops: nothing to compare
    variants = [{"id": "1", "heading": "num_stages=1"}, {"id": "3", "heading": "num_stages=3"}]
    figure = timeline_input(data, entry, (), "mark", variants, "timed")
    assert figure is not None
    assert [p["compared"] for p in figure["panels"]] == [True, False]
    assert figure["panels"][1]["problems"] == []
