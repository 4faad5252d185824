"""Drawing figures from data, without Sphinx or TileLang: one figure per distinct schedule
(a 48-variant matrix included), folding, the chart, themes, byte-for-byte determinism."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from sphinx_tlstages.core.figures import chart_svg, schedule_sentence, schedule_svg
from sphinx_tlstages.core.figures.chart import chart_input, sentence
from sphinx_tlstages.core.figures.lanes import drawn_schedule
from sphinx_tlstages.core.figures.model import group_variants, schedule_figures
from sphinx_tlstages.core.results.result import failure

ROOT = Path(__file__).resolve().parent.parent
BENCH = json.loads((ROOT / "book/_tlstages/bench/nvidia-h200.json").read_text())
NS = "{http://www.w3.org/2000/svg}"


def gemm(stages: int, trip: int) -> dict[str, Any]:
    """The seed GEMM's cp.async schedule as the worker reads it (num_stages >= 2): the
    copies of tile k+S-1 and the gemm of tile k, S-1 steps before and after the loop."""
    depth = stages - 1

    def copy(stmt: int, at: int, key: str) -> dict[str, Any]:
        buffer = "AB"[stmt] + "_shared"
        return {"stmt": stmt, key: at, "iter_from": "loop_var",
                "versions": [{"buffer": buffer, "access": "write", "version": at % stages}]}

    def mma(at: int, key: str, version: int) -> dict[str, Any]:
        return {"stmt": 2, key: at, "iter_from": "version", "versions": [
            {"buffer": b, "access": "read", "version": version} for b in ("A_shared", "B_shared")]}

    return {"kind": "cp_async", "loop_index": 0, "loop_var": "ko", "num_stages": stages,
            "stage": [0, 0, depth], "order": [0, 1, 2], "async_producers": [1, 1, 0],
            "statements": [{"text": "T.copy(A[by * block_M, ko * block_K], A_shared)",
                            "line": 18},
                           {"text": "T.copy(B[bx * block_N, ko * block_K], B_shared)",
                            "line": 19},
                           {"text": "T.gemm(A_shared, B_shared, C_local, transpose_B=True)",
                            "line": 20}],
            "version_dims": {"A_shared": stages, "B_shared": stages}, "trip_count": trip,
            "loop": {"min": 0, "extent": trip - depth},
            "prologue": [[copy(0, i, "iter"), copy(1, i, "iter"), {"sync": "commit"}]
                         for i in range(depth)],
            "body": [copy(0, depth, "offset"), copy(1, depth, "offset"), {"sync": "commit"},
                     {"sync": "wait", "n": depth}, mma(0, "offset", 0)],
            "epilogue": [[{"sync": "wait", "n": depth - 1 - j},
                          mma(trip - depth + j, "iter", (trip - depth + j) % stages)]
                         for j in range(depth)]}


def test_a_48_variant_matrix_draws_each_distinct_schedule_once() -> None:
    """num_stages 2-5 x block_K (16, 32 or 64 tiles) x block_M x threads: the schedule
    depends on num_stages, and through the versions the epilogue drains, on the number of
    tiles modulo num_stages; nothing else."""
    variants = [(f"block_K={4096 // trip}, block_M={bm}, threads={th}, num_stages={ns}",
                 gemm(ns, trip))
                for ns in (2, 3, 4, 5) for trip in (64, 32, 16) for bm in (64, 128)
                for th in (128, 256)]
    assert len(variants) == 48
    groups = group_variants(variants)
    assert [len(labels) for labels, _ in groups] == [12, 8, 4, 12, 4, 4, 4]
    assert [fig["num_stages"] for _, fig in groups] == [2, 3, 3, 4, 5, 5, 5]
    covered = [label.split(" (n = ")[0] for labels, _ in groups for label in labels]
    assert sorted(covered) == sorted(label for label, _ in variants)
    labels, fig = groups[0]  # one schedule for every n: said symbolically
    assert labels[0] == "block_K=64, block_M=64, threads=128, num_stages=2 (n = 64)"
    svg = schedule_svg(fig, labels)
    assert "steady state ×(n−1)" in svg and ">n−1</text>" in svg
    assert len({schedule_svg(f, c) for c, f in groups}) == 7


def test_many_statements_fold_alike_ones_and_say_so() -> None:
    fig = gemm(2, 16)
    middle = [{"text": f"for i in T.Parallel(block_M): x{n}[i] = 0", "line": 21 + n}
              for n in range(5)]
    fig["statements"] = fig["statements"][:2] + middle + fig["statements"][2:]
    fig["stage"] = [0, 0, 1, 1, 1, 1, 1, 1]
    fig["async_producers"] = [1, 1, 0, 0, 0, 0, 0, 0]

    def renumber(items: list[dict[str, Any]], key: str) -> list[dict[str, Any]]:
        out = []
        for item in items:
            if item.get("stmt") == 2:
                out += [{"stmt": 2 + n, key: item[key], "iter_from": "stage"}
                        for n in range(5)]
                out.append({**item, "stmt": 7})
            else:
                out.append(item)
        return out

    fig["body"] = renumber(fig["body"], "offset")
    fig["epilogue"] = [renumber(step, "iter") for step in fig["epilogue"]]
    drawn = drawn_schedule(fig)
    assert drawn["lanes"][2] == "L21–25: 5 folded"
    assert drawn["lane_statements"][2] == [2, 3, 4, 5, 6]
    said = ET.fromstring(schedule_svg(fig, ["ns2"])).itertext()
    assert "folded into one lane (hover for the list)" in " ".join(said)
    assert "(hover" not in schedule_svg(fig, ["ns2"], "print")


@pytest.mark.parametrize("theme", ["html", "print"])
def test_schedule_svg_is_well_formed_accessible_and_themed(theme: str) -> None:
    svg = schedule_svg(gemm(3, 16), ["num_stages=3"], theme, "here")
    root = ET.fromstring(svg)
    assert root.get("role") == "img"
    title, desc = root.find(f"{NS}title"), root.find(f"{NS}desc")
    assert title is not None and desc is not None
    assert root.get("aria-labelledby") == f"{title.get('id')} {desc.get('id')}"
    assert title.text == ("Pipeline schedule, num_stages = 3: 2 prologue step(s), steady state "
                          "×14, 2 epilogue step(s)")
    assert desc.text is not None and desc.text.startswith(
        "Software pipeline of a 3-statement loop over n = 16 tiles, num_stages = 3")
    if theme == "html":
        assert "var(--tl-fig-fg, currentColor)" in svg and 'class="paper"' not in svg
    else:
        assert "var(" not in svg and "currentColor" not in svg and 'class="paper"' in svg


def test_a_sentence_for_builders_without_pictures() -> None:
    assert schedule_sentence(gemm(3, 16), ["num_stages=3"]) == (
        "Schedule figure for num_stages=3: 2 prologue step(s), then the steady state ×14 "
        "(commit, wait<2>), then 2 epilogue step(s) (wait<1>, wait<0>); shared buffers "
        "A_shared (3 versions), B_shared (3 versions).")


def test_nothing_to_draw_is_said_in_words() -> None:
    assert schedule_figures(failure("exception", "boom", 3))[1] == \
        "failed to lower, so there is no schedule to draw"
    ok: dict[str, Any] = {"schema": 2, "ok": True, "pipeline": []}
    assert "nothing is pipelined" in str(schedule_figures(ok)[1])  # type: ignore[arg-type]
    stored = {**ok, "from_snapshot": True}
    assert "snapshot, which does not record the schedule" in str(
        schedule_figures(stored)[1])  # type: ignore[arg-type]
    wrong = {**ok, "schedule": {"loops": [gemm(2, 16)], "problems": ["loop 0: extent"]}}
    assert "disagrees with the generated code (loop 0: extent)" in str(
        schedule_figures(wrong)[1])  # type: ignore[arg-type]


def _chart(stale: tuple[str, ...] = (), mode: str = "mark") -> dict[str, Any]:
    variants = [{"id": str(n), "heading": f"num_stages={n}", "num_stages": n, "sweep": {}}
                for n in range(5)]
    data = chart_input(BENCH, BENCH["directives"]["gemm-sm90a"], stale, mode, variants,
                       "gemm-sm90a")
    assert data is not None
    return data


def test_chart_marks_the_best_the_reference_and_stale_numbers() -> None:
    data = _chart(stale=("1",))
    svg = chart_svg(data)
    root = ET.fromstring(svg)
    assert root.get("role") == "img"
    desc = root.find(f"{NS}desc")
    assert desc is not None and desc.text is not None
    variants = BENCH["directives"]["gemm-sm90a"]["variants"]
    assert f"num_stages 1: {variants['1']['tflops']:.0f} (stale)" in desc.text
    assert desc.text.endswith("Best: num_stages=4.")
    assert ">best</text>" in svg and ">stale</text>" in svg and "reference A @ B.T" in svg
    reference = BENCH["directives"]["gemm-sm90a"]["reference"]["tflops"]
    assert sentence(data) == ("Chart of TFLOP/s per variant on NVIDIA H200; best num_stages=4 "
                              f"at {variants['4']['tflops']:.0f} TFLOP/s; reference A @ B.T "
                              f"{reference:.0f} TFLOP/s; 1 variant(s) stale.")
    hidden = _chart(stale=("1",), mode="hide")
    assert [v["id"] for v in hidden["variants"]] == ["0", "2", "3", "4"]
    assert "var(" not in chart_svg(data, "print")


def test_chart_of_a_sweep_uses_small_multiples_past_four_series() -> None:
    entry: dict[str, Any] = {"variants": {}}
    variants = []
    for bk in (32, 64):
        for bn in (64, 128, 256):
            for ns in (2, 3):
                vid = f"block_K={bk},block_N={bn},num_stages={ns}"
                entry["variants"][vid] = {"median_ms": 0.3 / ns, "p20_ms": 0.29 / ns,
                                          "p80_ms": 0.31 / ns, "fingerprint": "x"}
                variants.append({"id": vid, "heading": vid, "num_stages": ns,
                                 "sweep": {"block_K": str(bk), "block_N": str(bn)}})
    data = chart_input({"gpu": {"name": "Some GPU"}}, entry, (), "mark", variants, "sweep")
    assert data is not None
    svg = chart_svg(data)
    assert "latency (ms) per variant" in svg  # no :flops:, so latency
    assert svg.count(">block_K=32, block_N=64</text>") == 1  # a panel's title, no legend
    assert svg.count(">num_stages</text>") == 6  # one axis per panel


def test_figures_are_the_same_bytes_in_another_process() -> None:
    """No ordering, address or hash seed leaks into a figure."""
    script = ("import json, sys; from tests.test_figure_drawing import gemm, _chart; "
              "from sphinx_tlstages.core.figures import schedule_svg; "
              "from sphinx_tlstages.core.figures import chart_svg; "
              "sys.stdout.write(schedule_svg(gemm(4, 16), ['a', 'b'])"
              " + chart_svg(_chart(('2',))))")
    runs = [subprocess.run([sys.executable, "-c", script], cwd=ROOT, check=True,
                           capture_output=True, text=True,
                           env={**os.environ, "PYTHONHASHSEED": seed}).stdout
            for seed in ("1", "2")]
    assert runs[0] == runs[1] == schedule_svg(gemm(4, 16), ["a", "b"]) + chart_svg(
        _chart(("2",)))


def test_drawing_imports_nothing_heavy() -> None:
    code = ("import sys, sphinx_tlstages.core.figures.chart, sphinx_tlstages.core.figures; "
            "print(sorted(m for m in ('sphinx', 'docutils', 'tilelang', 'tvm', 'torch', "
            "'numpy', 'matplotlib', 'cairosvg') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, check=True)
    assert out.stdout.strip() == "[]"
