"""The house rules: which code a lowering or a rendered fragment depends on, and what
importing a side costs. Checked on real copies of the package, edited as a developer
would edit them."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import sphinx_tlstages
from sphinx_tlstages.core.results.stamps import LOWERING_ROOTS, code_digest
from sphinx_tlstages.ext.builders.html import RENDER_ROOTS

PACKAGE = Path(sphinx_tlstages.__file__).parent


@pytest.fixture
def package_copy(tmp_path: Path) -> Path:
    copy = tmp_path / "sphinx_tlstages"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    return copy


def _edit(path: Path) -> None:
    path.write_text(path.read_text(encoding="utf-8") + "\n# edited\n", encoding="utf-8")


@pytest.mark.parametrize("edited, lowering_changes, render_changes", [
    ("ext/messages.py", False, False),        # a warning's wording
    ("ext/render/summary.py", False, True),   # a renderer
    ("ext/checks/run.py", False, False),
    ("cli/bench.py", False, False),
    ("worker/gpu.py", False, False),          # the GPU compile of tlstages bench
    ("worker/ir/facts.py", True, False),      # a fact reader
    ("core/results/facts.py", True, False),           # result assembly, run in the worker
    ("core/results/cuda.py", True, True),             # normalising (worker) and mapping (page)
    ("core/results/result.py", True, True),
    ("core/results/pass_compare.py", False, True),
    ("worker/ir/schedule.py", True, False),      # the schedule reader
    ("core/figures/cp_async.py", False, True),  # a figure's drawing
    ("ext/builders/figure_visitors.py", False, True),          # the visitors of figures
    ("core/figures/tikz.py", False, True),    # imported by the visitors
])
def test_stamps_cover_exactly_what_they_depend_on(package_copy: Path, edited: str,
                                                   lowering_changes: bool,
                                                   render_changes: bool) -> None:
    lowering = code_digest(LOWERING_ROOTS, package_copy)
    rendering = code_digest(RENDER_ROOTS, package_copy)
    _edit(package_copy / edited)
    assert (code_digest(LOWERING_ROOTS, package_copy) != lowering) is lowering_changes
    assert (code_digest(RENDER_ROOTS, package_copy) != rendering) is render_changes


def _modules_after(statement: str) -> set[str]:
    code = f"import sys; {statement}; print('\\n'.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                         text=True).stdout
    return {line.split(".")[0] for line in out.split()}


def test_importing_the_package_loads_no_sphinx() -> None:
    loaded = _modules_after("import sphinx_tlstages")
    assert not loaded & {"sphinx", "docutils", "pygments", "tilelang", "tvm", "torch"}


def test_the_worker_side_loads_no_sphinx_docutils_or_pygments() -> None:
    loaded = _modules_after("import sphinx_tlstages.worker.lowering")
    assert "tilelang" in loaded
    assert not loaded & {"sphinx", "docutils", "pygments"}


def test_the_extension_loads_no_tilelang() -> None:
    loaded = _modules_after("import sphinx_tlstages.ext, sphinx_tlstages.cli.lower")
    assert "sphinx" in loaded
    assert not loaded & {"tilelang", "tvm", "torch"}


def test_the_closure_reads_every_spelling_of_an_import(tmp_path: Path) -> None:
    """Only import statements are parsed (for speed): a parenthesised one over several
    lines with comments, one inside a function, a backslash continuation; prose in a
    docstring that reads like an import adds nothing that does not exist."""
    from sphinx_tlstages.core.results.stamps import module_closure

    package = tmp_path / "sphinx_tlstages"
    (package / "core").mkdir(parents=True)
    for name in ("__init__", "core/__init__", "core/a", "core/b", "core/c", "core/d",
                 "core/e", "core/unused"):
        (package / f"{name}.py").write_text("")
    (package / "root.py").write_text(
        '"""Docs: from nowhere import anything, and import this."""\n'
        "from .core import (  # the first two\n    a,\n    b,  # and b\n)\n\n\n"
        "def later() -> None:\n    from .core import c\n")
    (package / "core" / "c.py").write_text(
        "from . import \\\n    d\nimport sphinx_tlstages.core.e\n")
    found = [p.relative_to(package).as_posix()
             for p in module_closure(["sphinx_tlstages.root"], package)]
    assert found == ["core/__init__.py", "core/a.py", "core/b.py", "core/c.py", "core/d.py",
                     "core/e.py", "root.py"]
