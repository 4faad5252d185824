"""conf.py's defaults for the directives are parsed once: a bad value is one warning naming
conf.py (not one per directive), and the directives fall back to the documented default.
Read with ``tlstages_collect_only``: nothing is lowered."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from sphinx_tlstages.ext.collector import all_directives
from sphinx_tlstages.ext.config import (
    CONFIG_VALUES,
    ENVIRONMENT_VARIABLES,
    Settings,
    read_settings,
)

from .conftest import CONF, build_once
from .kernels import GEMM, GEMM_PARAMS, rst

PAGE = ("Config\n======\n\n" + rst(GEMM, "One", params=GEMM_PARAMS, name="one") + "\n"
        + rst(GEMM, "Two", params=GEMM_PARAMS, name="two", num_stages="2"))


@pytest.mark.parametrize("name, bad, default", [
    ("tlstages_num_stages", "'1 x'", (1, 2, 3, 4)),
    ("tlstages_show", "'source everything'", None),
    ("tlstages_target", "'sm_12'", None),
    ("tlstages_diff", "'sideways'", "consecutive"),
])
def test_a_bad_default_is_one_warning_naming_conf_py(tmp_path: Path, name: str, bad: str,
                                                     default: object) -> None:
    conf = CONF + f"tlstages_collect_only = True\n{name} = {bad}\n"
    built = build_once(tmp_path / "src", {"index.rst": PAGE}, "dummy", conf=conf)
    # (collect-only: the directives also say they were not lowered, as tlstages.lowering)
    said = [line for line in built.warnings.splitlines() if "[tlstages.option]" in line]
    assert len(said) == 1, said
    assert f"conf.py {name}: " in said[0]
    one, two = all_directives(built.app.env)
    if name == "tlstages_num_stages":
        assert [v.num_stages for v in one.variants] == list(default)  # type: ignore[call-overload]
        assert [v.num_stages for v in two.variants] == [2]  # its own option still wins
    if name == "tlstages_target":
        assert one.target.arch == "sm_80"
    if name == "tlstages_diff":
        assert one.diff == default


def test_good_defaults_reach_every_directive_that_gives_none(tmp_path: Path) -> None:
    conf = CONF + ("tlstages_collect_only = True\ntlstages_num_stages = [2, 3]\n"
                   "tlstages_target = 'sm_90a'\ntlstages_show = 'sync'\n")
    built = build_once(tmp_path / "src", {"index.rst": PAGE}, "dummy", conf=conf)
    assert "[tlstages.option]" not in built.warnings
    one, two = all_directives(built.app.env)
    assert [v.num_stages for v in one.variants] == [2, 3]
    assert [v.num_stages for v in two.variants] == [2]
    assert one.target.arch == two.target.arch == "sm_90a"
    assert one.show == two.show == ("sync",)


def test_each_value_is_declared_once_and_read_as_declared(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One declaration gives Sphinx its value, Settings its attribute and the reference
    its rows: a value that names an environment variable is overridden by it there."""
    names = [value.name for value in CONFIG_VALUES]
    assert len(names) == len(set(names))
    for value in CONFIG_VALUES:
        assert getattr(Settings, value.attr) is value
        if value.env:
            assert f"wins over ``{value.name}``" in ENVIRONMENT_VARIABLES[value.env]
    app = SimpleNamespace(confdir=tmp_path, srcdir=tmp_path / "src",
                          doctreedir=tmp_path / "doctrees", outdir=tmp_path / "html")
    config = SimpleNamespace(**{value.name: value.default for value in CONFIG_VALUES})
    config.tlstages_jobs = 2
    monkeypatch.setenv("TLSTAGES_JOBS", "3")
    monkeypatch.delenv("TLSTAGES_CACHE_DIR", raising=False)
    settings = read_settings(app, config)  # type: ignore[arg-type]
    assert settings.jobs == 3
    assert settings.num_stages == (1, 2, 3, 4)
    assert settings.cache_dir == (tmp_path / "doctrees" / "tlstages-cache").resolve()
    assert settings.snapshot_dir == tmp_path / "src" / "_tlstages" / "snapshots"
