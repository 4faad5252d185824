"""``tlstages lower --show resources`` without NVIDIA's compiler: the real command in a
subprocess, lowering for real, with the compiler turned off or pointed where there is
none (the guide's "Without a compiler" rule: a sentence and every variant lowered, but an
error under ``CI``, where the part must be built)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from .kernels import GEMM, GEMM_PARAMS

NO_NUMBERS = "built without NVIDIA's compiler, so registers, spills and occupancy are not shown"


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("lower") / "gemm.py"
    path.write_text(GEMM, encoding="utf-8")
    return path


def lower(kernel: Path, toolkit: str, ci: bool) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "READTHEDOCS")}
    if ci:
        env["CI"] = "true"
    return subprocess.run(
        [sys.executable, "-m", "sphinx_tlstages", "lower", str(kernel), "--params",
         *GEMM_PARAMS.split(), "--num-stages", "1", "2", "--target", "sm_80",
         "--show", "shared", "resources", "--toolkit", toolkit],
        capture_output=True, text=True, timeout=600, env=env, check=False)


def lowered_every_variant(done: subprocess.CompletedProcess[str]) -> None:
    assert "num_stages=1: lowered in" in done.stderr, done.stderr
    assert "num_stages=2: lowered in" in done.stderr, done.stderr
    assert "(2, 128, 64) float16, 32,768 B" in done.stdout  # the shared table stands
    assert NO_NUMBERS in done.stdout
    assert "registers per thread" not in done.stdout


@pytest.mark.slow
def test_a_compiler_turned_off_says_so_and_exits_0_even_under_ci(kernel: Path) -> None:
    done = lower(kernel, "none", ci=True)
    assert done.returncode == 0, done.stderr
    lowered_every_variant(done)
    assert "no NVIDIA compiler found" not in done.stderr


@pytest.mark.slow
def test_a_compiler_not_found_says_so_and_exits_0(kernel: Path, tmp_path: Path) -> None:
    done = lower(kernel, str(tmp_path / "no" / "nvcc"), ci=False)
    assert done.returncode == 0, done.stderr
    lowered_every_variant(done)
    assert "tlstages lower: no NVIDIA compiler found: resources are not shown" in done.stderr


@pytest.mark.slow
def test_a_compiler_not_found_under_ci_is_an_error(kernel: Path, tmp_path: Path) -> None:
    done = lower(kernel, str(tmp_path / "no" / "nvcc"), ci=True)
    assert done.returncode == 1, done.stderr
    lowered_every_variant(done)
    assert "tlstages lower: error: no NVIDIA compiler found" in done.stderr
