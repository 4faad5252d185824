"""Hardware records on the page and in the log, and ``tlstages hardware`` end to end with
compute-sanitizer's output as recorded on an H100 (CI has no GPU: the tool is replaced by
a script that prints what it printed there).
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import sys
from pathlib import Path
from typing import Any

import pytest

from sphinx_tlstages.core.records.bench_data import cuda_fingerprint, fingerprint
from sphinx_tlstages.core.records.hardware_data import load_records
from sphinx_tlstages.ext.collector import all_directives
from sphinx_tlstages.ext.state import build_state

from .html_tree import Element
from .kernels import GEMM, rst

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).parent / "fixtures" / "hardware"
PARAMS = "M=512 N=512 K=512 block_M=128 block_N=128 block_K=64 threads=128"
PAGE = "Checked\n=======\n\n" + rst(GEMM, num_stages="2 3", params=PARAMS, name="checked",
                                    target="sm_80", hardware="")


def record_file(app: Any, hazards: dict[str, int], stale: bool = False) -> dict[str, Any]:
    """A hardware record of the page's variants, ``hazards`` racecheck reports each."""
    (spec,) = all_directives(app.env)
    state = build_state(app)
    assert state is not None
    variants = {}
    for variant in spec.variants:
        found = hazards[variant.id]
        variants[variant.id] = {
            "fingerprint": "an older kernel" if stale else fingerprint(variant),
            "cuda": cuda_fingerprint(state.result(variant)), "code": "x", "target": "sm_80",
            "built": "ptx", "same_code": True,
            "inputs": {"launches": 2, "blocks": [0, -1],
                       "blocks_words": "the first and the last block", "sizes": {}},
            "racecheck": {"ran": True, "hazards": found, "errors": found, "warnings": 0,
                          "aggregated": 1024 * found, "seconds": 9.0},
            "synccheck": {"ran": True, "errors": 0, "seconds": 8.0}}
    return {"schema": 1, "kind": "hardware", "date": "2026-12-07",
            "command": "tlstages hardware src", "method": "compute-sanitizer",
            "gpu": {"name": "Test GPU", "sm": "sm_90a", "driver": "580", "toolkit": "13.0",
                    "sanitizer": "2025.3.1.0", "tilelang": "0.1.15"},
            "directives": {"checked": {"variants": variants}}}


def hazards_rows(result: Any) -> list[list[str]]:
    """The *Hazards* table's rows (its header first), as cell texts."""
    table = result.part("tl-hazards")
    return [[cell.astext() for cell in row.children
             if isinstance(cell, Element) and cell.tag in ("td", "th")]
            for row in table.iter("tr")]


def write(src: Path, data: dict[str, Any]) -> None:
    folder = src / "_tlstages" / "hardware"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "test-gpu.json").write_text(json.dumps(data))


def test_what_the_gpu_observed_stands_beside_the_static_verdict(build, tmp_path) -> None:
    src = tmp_path / "src"
    first = build({"index.rst": PAGE}, srcdir=src)
    assert "tl-hardware-caption" not in first.html()
    write(src, record_file(first.app, {"2": 0, "3": 0}))
    result = build({"index.rst": PAGE}, srcdir=src)
    assert result.warnings == ""
    rows = hazards_rows(result)
    assert rows[0] == ["Hazards", "what the hazard check found in the final code",
                       "on Test GPU (compute-sanitizer)"]
    assert [row[0] for row in rows[1:]] == ["2", "3"]  # their static verdicts differ
    assert rows[1][2] == rows[2][2] == (
        "none observed in 2 launches of the first and the last block (racecheck: 0 race "
        "reports (0 errors, 0 warnings); synccheck: 0 errors)")
    assert result.part("tl-hardware-caption").astext().startswith(
        "Observed on Test GPU (sm_90a), driver 580, CUDA toolkit 13.0, compute-sanitizer "
        "2025.3.1.0, TileLang 0.1.15, on 2026-12-07 with tlstages hardware src")


def test_a_race_the_check_did_not_report_is_a_warning_at_the_directive(build, tmp_path
                                                                       ) -> None:
    src = tmp_path / "src"
    first = build({"index.rst": PAGE}, srcdir=src)
    write(src, record_file(first.app, {"2": 32, "3": 0}))
    result = build({"index.rst": PAGE}, srcdir=src)
    assert result.warnings.count("[tlstages.hardware]") == 1
    assert "index.rst:4: WARNING: checked: num_stages=2: on Test GPU, observed on hardware " \
           "in 2 launches of the first and the last block: racecheck: 32 race reports of " \
           "32,768 hazards (32 errors, 0 warnings); synccheck: 0 errors; the hazard check " \
           "said 'none found" in result.warnings
    observed = result.part("tl-observed")
    assert observed.astext().startswith("observed on hardware in 2 launches")


def test_a_record_of_other_code_is_marked_stale_and_never_fails(build, tmp_path) -> None:
    src = tmp_path / "src"
    first = build({"index.rst": PAGE}, srcdir=src)
    write(src, record_file(first.app, {"2": 32, "3": 32}, stale=True))
    result = build({"index.rst": PAGE}, srcdir=src)
    assert result.warnings == ""  # neither the stale record nor what it observed warns
    assert "checked: the hardware record from Test GPU for num_stages=2, num_stages=3 is " \
           "for other code (shown as stale); run tlstages hardware again" in result.status
    cell = hazards_rows(result)[1][2]
    assert cell.startswith("stale (recorded for other code): observed on hardware")


@pytest.mark.parametrize("buildername", ["latex", "text"])
def test_every_builder_writes_the_column(build, tmp_path, buildername: str) -> None:
    src = tmp_path / "src"
    first = build({"index.rst": PAGE}, srcdir=src)
    write(src, record_file(first.app, {"2": 0, "3": 0}))
    result = build({"index.rst": PAGE}, buildername, srcdir=src)
    written = next(p for p in result.outdir.iterdir() if p.suffix in (".tex", ".txt"))
    text = " ".join(written.read_text(encoding="utf-8").split())
    assert "none observed in 2 launches" in text  # the text builder wraps table cells
    assert "Observed on Test GPU (sm\\_90a)" in text or "Observed on Test GPU (sm_90a)" in text


def test_a_malformed_record_is_one_warning_naming_it(build, tmp_path) -> None:
    src = tmp_path / "src"
    folder = src / "_tlstages" / "hardware"
    folder.mkdir(parents=True)
    (folder / "broken.json").write_text(json.dumps({"schema": 1, "kind": "hardware"}))
    result = build({"index.rst": PAGE}, srcdir=src)
    assert "hardware record ignored: broken.json: 'gpu' must name the GPU " \
           "[tlstages.hardware]" in result.warnings


def test_the_books_records_are_valid() -> None:
    records = load_records(ROOT / "book" / "_tlstages" / "hardware", None)
    assert records.errors == [] and records.files
    (data,) = records.files
    assert data["gpu"]["sm"] == "sm_90a"
    fetch = data["directives"]["consume-then-fetch"]["variants"]
    assert all(v["racecheck"]["hazards"] > 0 for v in fetch.values())
    assert data["directives"]["gemm-generations"]["variants"][
        "target=sm_100a,num_stages=3"]["not_run"].startswith("sm_100a code does not run")


# --------------------------------------------------------- the command, end to end

FAKE = """#!{python}
import os, sys
tool = sys.argv[sys.argv.index("--tool") + 1]
sys.stdout.write(open(os.environ["TLSTAGES_TEST_" + tool.upper()]).read())
"""


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="TileLang compiles with nvcc")
def test_the_command_records_what_the_tools_printed(tmp_path, monkeypatch) -> None:
    """Each variant prepared for real (lowered, compiled), then the tools' output as an
    H100 printed it for the seed GEMM with its epilogue wait deleted: counted, and
    recorded beside the static verdict of the unedited code."""
    from sphinx_tlstages.cli import hardware

    fake = tmp_path / "bin" / "compute-sanitizer"
    fake.parent.mkdir()
    fake.write_text(FAKE.format(python=sys.executable))
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("TLSTAGES_TEST_RACECHECK",
                       str(FIXTURES / "racecheck-gemm-sm80-epilogue-wait-deleted.txt"))
    monkeypatch.setenv("TLSTAGES_TEST_SYNCCHECK",
                       str(FIXTURES / "synccheck-gemm-sm80-epilogue-wait-deleted.txt"))
    book = ROOT / "verification" / "hazards_on_gpu" / "book"
    specs = hardware.chosen(book, ["gemm-sm80"])
    directives = hardware.check(specs, {"name": "H100", "sm": "sm_90a"}, parallel=1,
                                timeout=300, edits=["delete-wait:2"])
    record = directives["gemm-sm80"]["variants"]["2"]
    assert record["built"] == "ptx" and record["same_code"] is True
    assert record["edits"] == ["delete-wait:2"]
    assert record["static"]["verdict"] == "none"
    assert record["racecheck"]["hazards"] == 32 and record["racecheck"]["aggregated"] == 131072
    assert record["synccheck"]["errors"] == 0
    assert record["inputs"]["tensors"][0] == {"name": "A", "dtype": "float16",
                                              "shape": [512, 512]}


@pytest.mark.skipif(shutil.which("compute-sanitizer") is None
                    or shutil.which("nvidia-smi") is None, reason="needs an NVIDIA GPU")
def test_the_deliberate_races_are_observed_on_this_gpu(tmp_path) -> None:
    """On a GPU machine: the seed GEMM is clean under both tools, and with either of its
    waits deleted racecheck reports the race (verification/hazards_on_gpu)."""
    import subprocess

    script = ROOT / "verification" / "hazards_on_gpu" / "hazards_on_gpu.py"
    subprocess.run([sys.executable, str(script), "run", str(tmp_path)], check=True)
