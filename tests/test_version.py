"""One version, said everywhere: the package, the built metadata, ``tlstages --version``,
the book's ``release`` and the changelog's newest release all read
``sphinx_tlstages/version.py``. It is provenance: snapshots and drift reports record it,
no comparison reads it, and no lowering key depends on it (a release keeps every cached
lowering)."""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import runpy
import shutil
import sys
import sysconfig
from pathlib import Path

import pytest

import sphinx_tlstages
from sphinx_tlstages.cli import build_parser
from sphinx_tlstages.core.plan.spec import DirectiveSpec, VariantSpec
from sphinx_tlstages.core.plan.targets import parse_target
from sphinx_tlstages.core.records import drift, snapshot_compare, snapshots
from sphinx_tlstages.core.results.result import RESULT_SCHEMA, Result
from sphinx_tlstages.core.results.stamps import LOWERING_ROOTS, code_digest, module_closure
from sphinx_tlstages.version import __version__

ROOT = Path(__file__).resolve().parent.parent
PACKAGE_DIR = Path(sphinx_tlstages.__file__).resolve().parent


def test_the_package_says_the_version_of_its_module() -> None:
    assert sphinx_tlstages.__version__ == __version__
    assert re.fullmatch(r"\d+\.\d+\.\d+((a|b|rc)\d+)?(\.dev\d+)?", __version__), __version__


def test_the_installed_metadata_says_the_same_version() -> None:
    """The metadata pip wrote (of a wheel, or of an editable install: reinstall it after
    changing the version) is built from version.py, not written beside it."""
    assert importlib.metadata.version("sphinx-tlstages") == __version__


def test_pyproject_reads_the_version_from_the_package() -> None:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11 and later
    pyproject = ROOT / "pyproject.toml"
    if not pyproject.is_file():
        pytest.skip("no checkout here")
    data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    assert "version" not in data["project"], "written twice: pyproject.toml and version.py"
    assert "version" in data["project"]["dynamic"]
    assert data["tool"]["setuptools"]["dynamic"]["version"] == {
        "attr": "sphinx_tlstages.version.__version__"}


def test_tlstages_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        build_parser().parse_args(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out == f"tlstages {__version__}\n"


def test_the_book_is_released_as_the_package() -> None:
    conf = ROOT / "book" / "conf.py"
    if not conf.is_file():
        pytest.skip("no checkout here")
    saved = list(sys.path)
    try:
        found = runpy.run_path(str(conf))
    finally:
        sys.path[:] = saved
    assert found["release"] == found["version"] == __version__


def test_the_changelog_names_this_version_as_its_newest_release() -> None:
    changelog = ROOT / "CHANGELOG.md"
    if not changelog.is_file():
        pytest.skip("no checkout here")
    headings = re.findall(r"^## \[([^\]]+)\]", changelog.read_text(encoding="utf-8"), re.M)
    assert headings[0] == "Unreleased", "an Unreleased section first, for the next entries"
    assert headings[1] == __version__, (
        f"CHANGELOG.md's newest release is {headings[1]}, the package says {__version__}")


def test_no_lowering_key_depends_on_the_version(tmp_path: Path) -> None:
    """The lowering stamp is a digest of the worker's code: a copy of the package with
    another version gives the same stamp, and so the same keys."""
    assert PACKAGE_DIR / "version.py" not in module_closure(LOWERING_ROOTS)
    copy = tmp_path / "sphinx_tlstages"
    shutil.copytree(PACKAGE_DIR, copy, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "version.py").write_text('__version__ = "99.0.0"\n', encoding="utf-8")
    assert code_digest(LOWERING_ROOTS, copy) == code_digest(LOWERING_ROOTS, PACKAGE_DIR)


def _snapshot(version: str) -> dict[str, object]:
    target = parse_target("sm_80")
    variant = VariantSpec(source="", source_name="k.py", factory="f", params=(),
                          num_stages=2, target=target)
    spec = DirectiveSpec(name="d", docname="index", lineno=3, kernel_line=None,
                         kernel_path=None, title="", targets=(target,), variants=(variant,),
                         show=(), diff="consecutive", passes=(), asserts=())
    result: Result = {"schema": RESULT_SCHEMA, "ok": True, "num_stages": 2,
                      "threads": 128, "sync": {"syncthreads": 1}}
    found = snapshots.build(spec, {"2": result}, "0.1.15")
    assert found is not None
    found["sphinx_tlstages"] = version  # as another release would have recorded it
    return found


def test_snapshots_record_the_version_and_never_compare_it() -> None:
    recorded = _snapshot(__version__)
    assert snapshots.dumps(recorded).count(f'"sphinx_tlstages": "{__version__}"') == 1
    assert snapshot_compare.compare(_snapshot("0.0.1"), recorded) == (None, [])
    assert snapshot_compare.changes(_snapshot("0.0.1"), recorded) == []


def test_the_books_snapshots_say_which_release_recorded_them() -> None:
    committed = ROOT / "book" / "_tlstages" / "snapshots"
    if not committed.is_dir():
        pytest.skip("no checkout here")
    said = {json.loads(p.read_text(encoding="utf-8")).get("sphinx_tlstages")
            for p in committed.glob("*.json")}
    assert None not in said, "a snapshot of the book without the release that recorded it"


def test_drift_reports_record_the_version() -> None:
    report = drift.Report(builder="html", accept="tlstages snapshots accept book")
    data = json.loads(report.as_json())
    assert data["sphinx_tlstages"] == __version__
    assert drift.from_json(report.as_json()).sphinx_tlstages == __version__
    # A report another release wrote is read with its own.
    data["sphinx_tlstages"] = "0.0.1"
    assert drift.from_json(json.dumps(data)).sphinx_tlstages == "0.0.1"


def test_the_package_under_test_is_the_installed_one_where_asked() -> None:
    """``nox -s dist`` runs the smoke subset against the installed wheel, from a copy
    of the tests without the package beside them: it sets TLSTAGES_TEST_INSTALLED."""
    if not os.environ.get("TLSTAGES_TEST_INSTALLED"):
        pytest.skip("testing the checkout (TLSTAGES_TEST_INSTALLED unset)")
    purelib = Path(sysconfig.get_paths()["purelib"]).resolve()
    assert PACKAGE_DIR.parent == purelib, f"imported from {PACKAGE_DIR}, not {purelib}"
    dist = importlib.metadata.distribution("sphinx-tlstages")
    direct = json.loads(dist.read_text("direct_url.json") or "{}")
    assert not direct.get("dir_info", {}).get("editable"), "an editable install"
    # A wheel's install lists the package's own files (an editable one, a path hook).
    listed = {file.as_posix() for file in dist.files or []}
    assert {"sphinx_tlstages/version.py", "sphinx_tlstages/ext/static/tlstages.css"} <= listed
