"""The distributions carry everything the package reads at run time.

Built from a copy of the tracked files only: a working tree's leftovers (an old
``*.egg-info`` listing a file that package-data no longer names) can put a file in a
wheel that a clean clone's wheel lacks. The wheel is then installed, not editable, into a
fresh virtual environment that borrows this one's dependencies (no second torch), and
builds a small book there: every ``_static`` file its pages reference must exist, and
the LaTeX output must find its package.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import venv
import zipfile
from pathlib import Path

import pytest

from .kernels import GEMM, GEMM_PARAMS, rst

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "sphinx_tlstages"


def tracked_files() -> list[str]:
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: the tracked files are unknown")
    out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, check=True,
                         capture_output=True, text=True).stdout
    return [name for name in out.split("\0") if name and (ROOT / name).is_file()]


def _has_setuptools() -> bool:
    try:
        import setuptools
    except ImportError:
        return False
    # bdist_wheel is part of setuptools from 70.1 on: no other build dependency.
    return tuple(int(p) for p in setuptools.__version__.split(".")[:2]) >= (70, 1)


@pytest.fixture(scope="module")
def dists(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path | None]:
    """(the wheel, the sdist or None) built from the tracked files as they are now."""
    files = tracked_files()
    source = tmp_path_factory.mktemp("clean") / "src"
    for name in files:
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, source / name)
    out = source.parent / "dist"
    # Without a recent setuptools here, pip fetches one into an isolated build env.
    isolation = ["--no-build-isolation"] if _has_setuptools() else []
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", *isolation,
                    "-w", str(out), str(source)], check=True, cwd=source.parent)
    sdist = None
    if _has_setuptools():
        code = f"from setuptools import build_meta as b; print(b.build_sdist({str(out)!r}))"
        subprocess.run([sys.executable, "-c", code], check=True, cwd=source,
                       capture_output=True)
        sdist = next(out.glob("*.tar.gz"))
    return next(out.glob("*.whl")), sdist


def _data_files() -> list[str]:
    """Every tracked file of the package that is not Python source."""
    return [name for name in tracked_files()
            if name.startswith(f"{PACKAGE}/") and not name.endswith(".py")]


def test_the_wheel_holds_every_data_file(dists: tuple[Path, Path | None]) -> None:
    wheel, _ = dists
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = _data_files()
    assert f"{PACKAGE}/py.typed" in expected
    assert f"{PACKAGE}/ext/texinputs/sphinxtlstages.sty" in expected
    missing = [name for name in expected if name not in names]
    assert not missing, f"left out of the wheel: {missing}"


def test_the_sdist_holds_every_data_file(dists: tuple[Path, Path | None]) -> None:
    _, sdist = dists
    if sdist is None:
        pytest.skip("setuptools is not installed here")
    with tarfile.open(sdist) as archive:
        names = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    missing = [name for name in _data_files() if name not in names]
    assert not missing, f"left out of the sdist: {missing}"


BOOK = "Book\n====\n\n" + rst(GEMM, "Seed GEMM", num_stages="2 3", params=GEMM_PARAMS,
                               name="wheel")


def test_an_installed_wheel_builds_a_book(dists: tuple[Path, Path | None],
                                          tmp_path: Path) -> None:
    wheel, _ = dists
    env = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env)
    python = env / "bin" / "python"
    # This environment's packages after the new one's own: Sphinx, TileLang and torch
    # come from here, the extension only from the wheel (editable-install hooks in
    # this site-packages are .pth files, which a plain path entry does not run).
    own = subprocess.run([str(python), "-c", "import sysconfig; "
                          "print(sysconfig.get_paths()['purelib'])"],
                         check=True, capture_output=True, text=True).stdout.strip()
    Path(own, "borrowed.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    clean = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index",
                    str(wheel)], check=True, env=clean)
    where = subprocess.run([str(python), "-c", f"import {PACKAGE}; print({PACKAGE}.__file__)"],
                           check=True, capture_output=True, text=True, env=clean,
                           cwd=tmp_path).stdout
    assert where.startswith(own), where
    src = tmp_path / "book"
    src.mkdir()
    (src / "conf.py").write_text('extensions = ["sphinx_tlstages"]\nproject = "w"\n'
                                 'html_theme = "alabaster"\n')
    (src / "index.rst").write_text(BOOK)
    for builder in ("html", "latex"):
        subprocess.run([str(python), "-m", "sphinx", "-W", "-q", "-b", builder,
                        "-d", str(tmp_path / "doctrees"), str(src), str(tmp_path / builder)],
                       check=True, env=clean, cwd=tmp_path)
    page = (tmp_path / "html" / "index.html").read_text(encoding="utf-8")
    static = set(re.findall(r'(?:href|src)="(_static/[^"?#]+)', page))
    assert {"_static/tlstages.css", "_static/tlstages.js"} <= static
    missing = [name for name in static if not (tmp_path / "html" / name).is_file()]
    assert not missing, f"referenced but not in the output: {missing}"
    assert (tmp_path / "latex" / "sphinxtlstages.sty").is_file()
