"""When the lowering workers start: a build that will lower starts them as soon as its
configuration is read, so that their TileLang import (most of a cold page's time) runs
while Sphinx sets up and reads; a build the cache answers starts none.

Built with ``sphinx-build`` itself, as its command line lays the folders out: the
doctrees inside the output folder, the records beside it (``OUT.tlstages``), so that
removing the output folder keeps them. Every build here lowers for real."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from .conftest import CONF, write_project
from .kernels import GEMM, GEMM_PARAMS, rst

EARLY = "as the configuration was read"


def sphinx_build(src: Path, out: Path, cache: Path, *extra: str) -> str:
    """The verbose log of one build (``-v``: the workers' start is said there)."""
    env = {**os.environ, "TLSTAGES_CACHE_DIR": str(cache)}
    env.pop("TLSTAGES_KEEP_WORKERS", None)
    done = subprocess.run([sys.executable, "-m", "sphinx", "-v", "-b", "html", str(src),
                           str(out), *extra], capture_output=True, text=True, env=env,
                          check=True)
    return done.stdout + done.stderr


def started(log: str) -> list[str]:
    return [line for line in log.splitlines() if "TileLang workers started" in line]


def test_the_workers_start_as_the_configuration_is_read_whenever_the_build_will_lower(
        tmp_path: Path) -> None:
    src, out, cache = tmp_path / "src", tmp_path / "out", tmp_path / "cache"
    write_project(src, {"index.rst": "Prestart\n========\n\n"
                        + rst(GEMM, num_stages="1 2", params=GEMM_PARAMS, name="gemm")}, CONF)
    # A first build: nothing recorded, the cache empty.
    first = sphinx_build(src, out, cache)
    assert any(EARLY in line for line in started(first)), first
    records = Path(f"{out}.tlstages")
    assert records.is_dir()
    # The output folder and the cache removed, the records beside it kept: every
    # document is read and the cache lacks what the last build recorded.
    shutil.rmtree(out)
    shutil.rmtree(cache)
    again = sphinx_build(src, out, cache)
    assert any(EARLY in line for line in started(again)), again
    # A fresh environment (-E) the cache answers in full: no workers at all.
    warm = sphinx_build(src, out, cache, "-E")
    assert started(warm) == [], warm
    # The output folder removed, the cache kept: it answers, nothing starts.
    shutil.rmtree(out)
    kept_cache = sphinx_build(src, out, cache)
    assert started(kept_cache) == [], kept_cache
