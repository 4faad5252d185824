"""The terminal command and the book's generated reference pages."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from sphinx_tlstages.core.errors import SUBTYPES
from sphinx_tlstages.core.results.stamps import tilelang_version
from sphinx_tlstages.ext.config import CONFIG_VALUES, ENVIRONMENT_VARIABLES
from sphinx_tlstages.ext.directive import OPTIONS

from .kernels import GEMM

ROOT = Path(__file__).resolve().parent.parent
SEED_PARAMS = ["M=1024", "N=1024", "K=1024", "block_M=128", "block_N=128", "block_K=64",
               "threads=128"]


def tlstages(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "sphinx_tlstages", *args],
                          capture_output=True, text=True, timeout=300)


def test_lower_prints_every_variant_and_dumps_the_cuda(tmp_path: Path) -> None:
    kernel = tmp_path / "gemm.py"
    kernel.write_text(GEMM)
    done = tlstages("lower", str(kernel), "--params", *SEED_PARAMS, "--num-stages", "1", "2",
                    "3", "4", "--target", "sm_80", "--dump-dir", str(tmp_path / "cu"))
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert f"gemm.py — kernel matmul, target sm_80, TileLang {tilelang_version()}" in out
    for stages in (1, 2, 3, 4):
        assert f"\n{stages}           pipelined, depth {stages}" in out
    assert "(3, 128, 64) float16, 49,152 B" in out
    assert "<3> <2> <1> <0>" in out
    assert "stage 3, order 2" in out
    dumped = sorted(p.name for p in (tmp_path / "cu").iterdir())
    assert dumped == ["gemm-ns1.cu", "gemm-ns2.cu", "gemm-ns3.cu", "gemm-ns4.cu"]
    assert '#line 18 "gemm.py"' in (tmp_path / "cu" / "gemm-ns3.cu").read_text()
    assert "diff -u" in done.stderr


def test_lower_json_and_a_failing_variant(tmp_path: Path) -> None:
    kernel = tmp_path / "gemm.py"
    kernel.write_text(GEMM.replace('    dtype = "float16"\n', '    dtype = "float16"\n'
                                   '    assert num_stages != 2, "two stages refused"\n'))
    done = tlstages("lower", str(kernel), "--params", *SEED_PARAMS, "--num-stages", "1", "2",
                    "--json")
    assert done.returncode == 1
    results = json.loads(done.stdout)
    assert results["1"]["ok"] is True and results["1"]["shared"][0]["shape"] == [128, 64]
    # The JSON is the whole result: the lines each pass run changed included.
    planning = [r for r in results["1"]["passes"] if r["name"] == "tl.PipelinePlanning"]
    assert planning[0]["added"] + planning[0]["removed"] > 0
    assert results["2"]["error"]["message"] == "AssertionError: two stages refused"
    assert f"{kernel}:4: num_stages=2: AssertionError: two stages refused" in done.stderr


def test_lower_a_kernel_that_sets_its_depth(tmp_path: Path) -> None:
    kernel = tmp_path / "fixed.py"
    kernel.write_text(GEMM.replace(", num_stages, threads", ", threads").replace(
        "num_stages=num_stages", "num_stages=2"))
    params = ["--params", *SEED_PARAMS]
    done = tlstages("lower", str(kernel), *params)  # no --num-stages: as written
    assert done.returncode == 0, done.stderr
    assert "num_stages=2 (as written): lowered in" in done.stderr
    assert "The kernel fixes its pipeline depth (num_stages=2, line 17)" in done.stdout
    assert "(2, 128, 64) float16, 32,768 B" in done.stdout
    asked = tlstages("lower", str(kernel), *params, "--num-stages", "1", "2")
    assert asked.returncode == 0, asked.stderr
    assert asked.stderr.splitlines()[0] == (
        "tlstages lower: warning: --num-stages: matmul fixes its pipeline depth "
        "(num_stages=2, line 17 of the kernel), so it lowers as written, with num_stages=2 "
        "only, not 1 2: drop --num-stages, or, to compare depths, give matmul a num_stages "
        "parameter and pass it to that loop")
    assert "(2, 128, 64) float16, 32,768 B" in asked.stdout


def test_lower_rejects_bad_input_without_a_traceback(tmp_path: Path) -> None:
    kernel = tmp_path / "broken.py"
    kernel.write_text("def f(:\n")
    done = tlstages("lower", str(kernel))
    assert done.returncode == 2
    assert done.stderr.strip() == f"tlstages lower: {kernel}:1: syntax error in kernel: " \
                                  "invalid syntax"
    # Messages name this command's flags, not the directive's options.
    kernel.write_text(GEMM)
    done = tlstages("lower", str(kernel), "--params", "M=64")
    assert done.returncode == 2
    assert done.stderr.strip().endswith("factory 'matmul' needs --params for N, K, block_M, "
                                        "block_N, block_K, threads")


def test_reference_pages_list_everything_the_code_declares(build) -> None:
    conf = (f"import sys\nsys.path.insert(0, {str(ROOT / 'book' / '_ext')!r})\n"
            'extensions = ["sphinx_tlstages", "tlstages_reference"]\n')
    page = "Reference\n=========\n\n" + "\n".join(
        f".. tlstages-reference:: {what}\n" for what in
        ("options", "config", "environment", "warnings", "cli"))
    result = build({"index.rst": page}, conf=conf)
    assert result.warnings == ""
    text = result.part("body").astext()
    for name in OPTIONS:
        assert f":{name}:" in text, name
    for value in CONFIG_VALUES:
        assert value.name in text, value.name
    for variable in ENVIRONMENT_VARIABLES:
        assert variable in text, variable
    for subtype in SUBTYPES:
        assert f"tlstages.{subtype}" in text, subtype
    for command in ("snapshots accept", "snapshots status", "bench", "lower"):
        assert f"tlstages {command}" in text, command
