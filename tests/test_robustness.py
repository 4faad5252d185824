"""Faults a build must survive: hangs, crashing workers, a missing TileLang, limits,
huge output and hostile text. Each fails if the behaviour regresses."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import CONF, write_project
from .kernels import GEMM, GEMM_PARAMS, rst

HEAD = "Robustness\n==========\n\n"


def misbehaving(stages: int, code: str) -> str:
    """The GEMM, running ``code`` while its factory builds num_stages=``stages``."""
    return GEMM.replace('    dtype = "float16"\n',
                        f'    dtype = "float16"\n    if num_stages == {stages}:\n'
                        f'        {code}\n')


def test_a_hanging_variant_is_killed_and_the_rest_goes_on(build) -> None:
    kernel = misbehaving(2, "import time; time.sleep(600)")
    page = HEAD + rst(kernel, num_stages="1 2 3", params=GEMM_PARAMS, name="hang",
                      timeout="4")
    result = build({"index.rst": page}, confoverrides={"tlstages_jobs": 1})
    assert "hang: num_stages=2 failed to lower (timeout): lowering took longer than 4 s " \
           "and was stopped" in result.warnings
    rows = {row[0]: row for row in result.table("tl-summary")[1:]}
    assert rows["2"][1].startswith("failed (timeout)")
    # One worker: ns3 ran on the worker started to replace the killed one.
    assert rows["1"][1] == "pipelined, depth 1" and rows["3"][1] == "pipelined, depth 3"


@pytest.mark.parametrize("code", ["import os; os.abort()",
                                  "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"])
def test_a_dying_worker_is_a_crash_and_the_rest_goes_on(build, code: str) -> None:
    page = HEAD + rst(misbehaving(2, code), num_stages="2 3", params=GEMM_PARAMS, name="dies")
    result = build({"index.rst": page}, confoverrides={"tlstages_jobs": 1})
    assert "dies: num_stages=2 failed to lower (crash): the worker died while lowering " \
           "(signal SIG" in result.warnings
    rows = {row[0]: row for row in result.table("tl-summary")[1:]}
    assert rows["3"][1] == "pipelined, depth 3"
    # A crash depends on the machine, not the inputs: it is never cached.
    again = build({"index.rst": page}, confoverrides={"tlstages_jobs": 1}, freshenv=True)
    assert "2 variants, 0 lowered, 1 cached, 1 failed," in again.status  # lowered again


@pytest.fixture
def broken_tilelang(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Workers find a TileLang that cannot be imported (as a wheel without CUDA would),
    and the cache is cold (a warm one needs no TileLang at all)."""
    monkeypatch.setenv("TLSTAGES_CACHE_DIR", str(tmp_path / "cold-cache"))
    fake = tmp_path / "fake-site" / "tilelang"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('no CUDA code generator here')\n")
    monkeypatch.setenv("PYTHONPATH", str(fake.parent))


def test_tilelang_unavailable_renders_from_snapshots_once_warned(build, tmp_path,
                                                                 broken_tilelang) -> None:
    src = tmp_path / "src"
    # Its claims: one the snapshot keeps (checked), one about pass changes, which no
    # snapshot keeps (skipped there, not failed).
    stored = rst(GEMM, num_stages="2 3", params=GEMM_PARAMS, name="stored",
                 assert_='threads == 128\n      passes["tl.PipelinePlanning#1"] == 2')
    page = HEAD + stored + "\n" + \
        rst(GEMM, num_stages="4", params=GEMM_PARAMS, name="never-recorded")
    snapshots = src / "_tlstages" / "snapshots"
    # Record the first directive's snapshot with a working TileLang, in a clean process.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["TLSTAGES_CACHE_DIR"] = str(tmp_path / "recording-cache")
    write_project(src, {"index.rst": HEAD + stored}, CONF)
    subprocess.run([sys.executable, "-m", "sphinx", "-q", "-b", "html", str(src),
                    str(tmp_path / "first")], env=env, check=True)
    assert (snapshots / "stored.json").exists()

    result = build({"index.rst": page}, srcdir=src)
    assert result.warnings.count("[tlstages.tilelang]") == 1
    assert "no CUDA code generator here" in result.warnings
    assert "Traceback" not in result.warnings
    stored, missing = (result.part("tl-pipeline", index=i) for i in range(2))
    assert "shown from the committed snapshot, unverified" in stored.astext()
    shared = {row[0]: row[1:] for row in result.table("tl-shared")}
    assert shared["A_shared"] == ["(2, 128, 64) float16, 32,768 B",
                                  "(3, 128, 64) float16, 49,152 B"]
    assert "failed (unavailable)" in missing.astext()
    assert result.app.statuscode == 0
    assert "assertion" not in result.warnings
    assert not (snapshots / "never-recorded.json").exists()  # nothing verified, nothing written


def test_tilelang_unavailable_under_ci_is_an_error(build, tmp_path, broken_tilelang,
                                                   monkeypatch) -> None:
    monkeypatch.setenv("CI", "1")
    page = HEAD + rst(GEMM, num_stages="2", params=GEMM_PARAMS, name="ci")
    result = build({"index.rst": page})
    assert result.app.statuscode == 1
    assert "nothing in this build was verified" in result.warnings


def test_shared_memory_over_the_limit_and_expect_error(build) -> None:
    # 128x128x64 fp16 tiles: 32 KiB per stage; six stages need 192 KiB, over sm_80's 163 KiB.
    page = HEAD + rst(GEMM, num_stages="5 6", params=GEMM_PARAMS, name="limit") + "\n" + rst(
        GEMM, num_stages="5 6", params=GEMM_PARAMS, name="taught",
        expect_error="6: shared memory")
    result = build({"index.rst": page})
    assert result.warnings.count("[tlstages.limit]") == 1
    assert "limit: num_stages=6 needs 196,608 B of shared memory per block; sm_80 allows " \
           "166,912 B" in result.warnings
    row = result.table("tl-summary", index=0)[2]
    assert row[3] == "196,608 B (118 %): over the limit"
    # Each distinct variant counted once: the two directives' ns6 are one, and failed.
    assert re.search(r"2 variants, \d lowered, \d cached, 1 failed", result.status)


def test_expect_error_that_does_not_fail_is_an_error(build) -> None:
    page = HEAD + rst(GEMM, num_stages="2 3", params=GEMM_PARAMS, name="wrong",
                      expect_error="3")
    result = build({"index.rst": page})
    assert "wrong: num_stages=3 lowered, but :expect-error: says it must fail" \
        in result.warnings
    mismatch = HEAD + rst(GEMM, num_stages="6", params=GEMM_PARAMS, name="regex",
                          expect_error="6: timeout")
    result = build({"index.rst": mismatch})
    assert "failed as expected, but its message does not match 'timeout'" in result.warnings


def test_huge_output_is_capped(build) -> None:
    page = HEAD + rst(GEMM, num_stages="2 3", params=GEMM_PARAMS, name="capped")
    result = build({"index.rst": page}, confoverrides={"tlstages_max_lines": 20})
    html = result.html()
    assert "more lines of this diff are not shown" in html
    assert "more lines of this listing are not shown" in html
    assert "downloadable CUDA files have everything" in html
    assert len(html) < 120_000


def test_hostile_text_is_inert(build) -> None:
    hostile = "</details><script>alert(1)</script>"
    kernel = GEMM.replace('    dtype = "float16"\n', f'    dtype = "float16"  # {hostile}\n')
    kernel = kernel.replace("def matmul(M,", "def matmul(note, M,")
    page = HEAD + rst(kernel, f"Title {hostile}", num_stages="2",
                      params=f'note="{hostile}" ' + GEMM_PARAMS, name="hostile")
    result = build({"index.rst": page})
    html = result.html()
    assert "<script>alert(1)</script>" not in html
    assert "&lt;/details&gt;&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert html.count("<details") == html.count("</details>")


def test_w_turns_a_kernel_error_into_a_failed_build(tmp_path: Path) -> None:
    src = tmp_path / "src"
    write_project(src, {"index.rst": HEAD + rst(misbehaving(2, "raise RuntimeError('x')"),
                                                num_stages="2", params=GEMM_PARAMS)}, CONF)
    done = subprocess.run([sys.executable, "-m", "sphinx", "-q", "-W", "-b", "html", str(src),
                           str(tmp_path / "out")], capture_output=True, text=True)
    assert done.returncode != 0
    assert "RuntimeError: x" in done.stderr


def test_editing_a_kernel_file_rebuilds_its_pages(build, tmp_path) -> None:
    src = tmp_path / "src"
    page = HEAD + f".. tl-pipeline::\n   :file: kernel.py\n   :num-stages: 2\n" \
                  f"   :params: {GEMM_PARAMS}\n"
    first = build({"index.rst": page, "kernel.py": GEMM}, srcdir=src)
    assert first.table("tl-annotations")[1][1] == "kernel.py:18"
    edited = build({"index.rst": page, "kernel.py": "# Edited.\n" + GEMM}, srcdir=src)
    assert "0 added, 1 changed" in edited.status
    assert "1 lowered, 0 cached" in edited.status
    assert edited.table("tl-annotations")[1][1] == "kernel.py:19"


def test_hash_seed_does_not_change_the_output(tmp_path: Path) -> None:
    outputs = []
    for seed in ("1", "2"):
        src = tmp_path / f"seed{seed}"
        write_project(src, {"index.rst": HEAD + rst(GEMM, num_stages="2 3",
                                                    params=GEMM_PARAMS, name="seeded")}, CONF)
        env = {**os.environ, "PYTHONHASHSEED": seed, "TLSTAGES_CACHE_DIR": str(src / "cache")}
        subprocess.run([sys.executable, "-m", "sphinx", "-q", "-b", "html", str(src),
                        str(src / "out")], env=env, check=True)
        html = (src / "out" / "index.html").read_text()
        outputs.append((html[html.index('<div class="tl-pipeline'):html.rindex("footer")],
                        (src / "_tlstages/snapshots/seeded.json").read_bytes()))
    assert outputs[0] == outputs[1]
