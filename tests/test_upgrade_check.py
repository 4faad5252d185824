"""``tlstages upgrade-check``: a TileLang upgrade rehearsed on a small book, with a second
environment's TileLang beside this one.

The rehearsal needs a second TileLang: ``TLSTAGES_UPGRADE_PYTHON`` names its interpreter
(the range-end sessions, ``nox -s oldest`` and ``newest``, set it to the other end's
environment where that exists). Without one the rehearsal is skipped, saying why; the
usage errors are checked everywhere."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from sphinx_tlstages import cli
from sphinx_tlstages.core.results.stamps import tilelang_version

from .conftest import CONF, write_project
from .kernels import GEMM, GEMM_PARAMS, rst

OTHER = os.environ.get("TLSTAGES_UPGRADE_PYTHON", "")
PAGE = "Upgrade\n=======\n\n" + rst(GEMM, num_stages="2 3", params=GEMM_PARAMS,
                                    name="up-sm80") + "\n" + rst(
    GEMM, num_stages="2 3", target="sm_90a", params=GEMM_PARAMS, name="up-sm90a")


def _other_version() -> str | None:
    if not OTHER:
        return None
    done = subprocess.run([OTHER, "-c", "import tilelang; print(tilelang.__version__)"],
                          capture_output=True, text=True, check=False)
    return done.stdout.strip().split("+")[0] if done.returncode == 0 else None


def test_usage_errors_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["upgrade-check", str(tmp_path), "--python", "python3"]) == 2
    assert "has no conf.py" in capsys.readouterr().err
    write_project(tmp_path, {"index.rst": PAGE}, CONF)
    assert cli.main(["upgrade-check", str(tmp_path)]) == 2
    assert "--python PATH or --tilelang SPEC" in capsys.readouterr().err
    missing = str(tmp_path / "no-such-python")
    assert cli.main(["upgrade-check", str(tmp_path), "--python", missing]) == 2
    assert "could not be run" in capsys.readouterr().err


def test_the_rehearsal_says_per_directive_what_would_change(tmp_path: Path) -> None:
    other = _other_version()
    if other is None:
        pytest.skip("no second TileLang: set TLSTAGES_UPGRADE_PYTHON to another "
                    "environment's interpreter (nox -s oldest/newest do, where both exist)")
    src = tmp_path / "src"
    write_project(src, {"index.rst": PAGE}, CONF)
    before = sorted(p.relative_to(src).as_posix() for p in src.rglob("*"))
    out_json, out_md = tmp_path / "up.json", tmp_path / "up.md"
    status = cli.main(["upgrade-check", str(src), "--python", OTHER, "--json", str(out_json),
                       "--markdown", str(out_md)])
    report = json.loads(out_json.read_text())
    assert (report["current"], report["candidate"]) == (tilelang_version(), other)
    assert [d["name"] for d in report["directives"]] == ["up-sm80", "up-sm90a"]
    assert status == (1 if report["changes"] else 0)
    for entry in report["directives"]:
        kinds = {f["kind"] for f in entry["findings"]}
        assert entry["status"] == next(
            (s for s in ("fails", "changed", "unverified") if s in kinds), "unchanged")
        changed = {f["variant"] for f in entry["findings"] if f["kind"] == "changed"}
        # Every variant that would change says which pass changed it.
        assert changed <= {f["variant"] for f in entry["findings"] if f["kind"] == "cause"}
    markdown = out_md.read_text()
    assert report["verdict"] in markdown.replace("\\", "")
    # Nothing of the author's was written: no snapshot, no cache, no pending file.
    assert sorted(p.relative_to(src).as_posix() for p in src.rglob("*")) == before
    # No machine path in what CI would publish.
    assert str(tmp_path) not in out_json.read_text() + markdown
