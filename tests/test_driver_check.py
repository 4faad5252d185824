"""The resources part against a GPU's driver, on data recorded on an H200.

``verification/resources_on_gpu/resources-on-gpu-h200.json`` is what
``verification/resources_on_gpu/resources_on_gpu.py check`` wrote on an NVIDIA H200
(driver 580, compute capability 9.0) for the book's ``sm_90a`` variants, compiled on a
CPU machine with nvcc 13.5.37 and TileLang 0.1.15.
The comparison is run again here on what the driver reported, and shown to catch a
figure that differs; the book's directives are found as ``prepare`` finds them.
"""

from __future__ import annotations

import copy
import dataclasses
import importlib.util
import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from sphinx_tlstages.core.hardware import driver_check
from sphinx_tlstages.core.hardware.occupancy import LIMITS

ROOT = Path(__file__).resolve().parent.parent
CHECK = ROOT / "verification" / "resources_on_gpu"
RECORDED = json.loads((CHECK / "resources-on-gpu-h200.json").read_text(encoding="utf-8"))


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "resources_on_gpu", CHECK / "resources_on_gpu.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _h200() -> Any:
    return driver_check.device_limits(RECORDED["capability"], RECORDED["device"])


def test_the_recording_covers_the_book_on_hopper() -> None:
    assert RECORDED["device"]["name"] == "NVIDIA H200" and RECORDED["capability"] == "9.0"
    shown = {(row["directive"], row["variant"]) for row in RECORDED["variants"]}
    assert {("gemm-sm90a", f"num_stages={n}") for n in (1, 2, 3, 4)} <= shown
    # Occupancy limited by something other than Hopper's flat 240 registers too.
    assert {row["stated"]["blocks_per_sm"] for row in RECORDED["variants"]} >= {1, 2, 4}
    assert {row["arch"] for row in RECORDED["skipped"]} >= {"sm_80", "sm_100a"}


@pytest.mark.parametrize("row", RECORDED["variants"],
                         ids=lambda row: f"{row['directive']}-{row['variant']}")
def test_the_page_agrees_with_the_driver(row: dict[str, Any]) -> None:
    assert driver_check.compare_function(row["stated"], row["driver"]) == []
    assert driver_check.compare_sweep(_h200(), row["stated"]["registers"],
                                      row["stated"]["static_shared"], row["sweep"]) == []
    assert RECORDED["agree"] is True


def test_a_figure_that_differs_is_named() -> None:
    row = RECORDED["variants"][0]
    said = {**row["stated"], "blocks_per_sm": row["stated"]["blocks_per_sm"] + 1,
            "stack": 16}
    wrong = driver_check.compare_function(said, row["driver"])
    assert len(wrong) == 2
    assert wrong[0].startswith("stack: the page states 16, the driver reports "
                               "LOCAL_SIZE_BYTES = 0")
    assert "occupancy_blocks_per_sm" in wrong[1]


def test_an_occupancy_rule_that_differs_is_caught_in_the_sweep() -> None:
    row = next(r for r in RECORDED["variants"] if r["stated"]["registers"] == 114)
    sweep = copy.deepcopy(row["sweep"])
    assert sum(len(blocks) for blocks in sweep["blocks"].values()) > 100
    # Limits without the 1 KiB each block reserves: more blocks fit than the driver lets.
    limits = _h200()
    loose = dataclasses.replace(limits, reserved_shared_per_block=0)
    assert driver_check.compare_sweep(loose, 114, 0, sweep)
    sweep["blocks"]["128"][0] += 1
    wrong = driver_check.compare_sweep(limits, 114, 0, sweep)
    assert wrong == ["128 threads, 114 registers, 0 + 0 B shared: occupancy() says 4 "
                     "blocks, the driver 5"]


def test_the_limits_table_against_the_device() -> None:
    assert driver_check.compare_device("9.0", RECORDED["device"]) == []
    wrong = driver_check.compare_device("8.0", RECORDED["device"])
    assert any(line.startswith("shared_per_sm: LIMITS['8.0'] says 167936") for line in wrong)
    assert driver_check.compare_device("7.5", RECORDED["device"]) == [
        "compute capability 7.5 is not in the occupancy table's limits"]
    assert _h200() == LIMITS["9.0"]


def test_sweep_points() -> None:
    sizes, dynamic = driver_check.sweep_points(232448, 1024, 128, step=65536)
    assert sizes == [32, 64, 96, 128]
    assert dynamic == [0, 65536, 131072, 196608, 231424]
    assert driver_check.sweep_points(1024, 2048, 64) == ([32, 64], [])


def test_prepare_finds_the_books_directives() -> None:
    found = {d["name"]: d for d in _script().directives(ROOT / "book")}
    hopper = found["gemm-sm90a"]
    assert hopper["options"]["target"] == "sm_90a"
    assert hopper["options"]["file"] == "/kernels/gemm.py"
    ampere = found["gemm-sm80"]
    assert ampere["kernel"].startswith("@tilelang.jit\ndef matmul(")
    assert "stage == [0, 0" in ampere["options"]["assert"]
    # A directive written as an example inside a code block is not one.
    assert all(d["docname"] != "guide/resources" for d in found.values())


def test_prepare_reads_rest_and_myst_directives(tmp_path: Path) -> None:
    (tmp_path / "page.rst").write_text(
        "Title\n=====\n\n.. tl-pipeline:: Copy\n   :target: sm_90a\n   :show: shared\n"
        "      resources\n\n   def copy(N):\n       pass\n\nAfter.\n", encoding="utf-8")
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "more.md").write_text(
        "# More\n\n```{tl-pipeline} Two\n:name: two\n:num-stages: 2 3\n\n"
        "def two(N):\n    pass\n```\n\n```rst\n.. tl-pipeline:: not one\n```\n",
        encoding="utf-8")
    found = _script().directives(tmp_path)
    assert [(d["name"], d["options"], d["kernel"]) for d in found] == [
        ("two", {"name": "two", "num-stages": "2 3"}, "def two(N):\n    pass"),
        ("page-1", {"target": "sm_90a", "show": "shared\nresources"},
         "def copy(N):\n    pass"),
    ]
