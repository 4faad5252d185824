"""Shared fixtures: small Sphinx projects built for real, with real TileLang lowering."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from docutils import nodes
from sphinx.testing.util import SphinxTestApp

from sphinx_tlstages.runner import kept

from .html_tree import Element, parse, table_rows

pytest_plugins = ("sphinx.testing.fixtures",)

# Run at the far ends of the supported TileLang, Sphinx and Python ranges (nox): the seed
# GEMM through the directive, kernels in every style, snapshots, the layout, every builder.
SMOKE_MODULES = ("test_seed_gemm", "test_real_kernels", "test_snapshots", "test_layout",
                 "test_options", "test_builders", "test_upgrade_check", "test_version")
# The quick tier (``nox -s quick``, ``pytest -m quick``): modules that import neither
# TileLang nor torch and build no project that lowers; they run where neither is installed.
QUICK_MODULES = ("test_config", "test_core_units", "test_driver_check", "test_fact_table",
                 "test_figure_drawing", "test_first_pass", "test_fit_table",
                 "test_hardware_records", "test_kernel_source",
                 "test_occupancy_figure", "test_options", "test_protocol", "test_shards",
                 "test_snapshot_policy",
                 "test_sync_counts", "test_sync_needed", "test_table_fit", "test_tikz",
                 "test_timeline_data",
                 "test_upgrade_report", "test_version", "test_warning_subtypes")


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Under ``-m quick`` the other modules are not even imported: some import TileLang
    at the top, which the quick tier's environment does not have."""
    if config.getoption("markexpr", "") == "quick" and collection_path.suffix == ".py" \
            and collection_path.name.startswith("test_") \
            and collection_path.stem not in QUICK_MODULES:
        return True
    return None


# Modules that import TileLang into the test process itself (to mutate its IR): they run
# after every other test, which may prove that Sphinx's own process never imports it.
TILELANG_IN_PROCESS = ("test_hazards",)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=lambda item: getattr(getattr(item, "module", None), "__name__", "")
               .rsplit(".", 1)[-1] in TILELANG_IN_PROCESS)
    for item in items:
        module = getattr(item, "module", None)
        name = module.__name__.rsplit(".", 1)[-1] if module is not None else ""
        if name in SMOKE_MODULES:
            item.add_marker(pytest.mark.smoke)
        if name in QUICK_MODULES:
            item.add_marker(pytest.mark.quick)

# html_theme is set because the test app swaps an unset one after loading, which makes
# every incremental build look like a configuration change.
CONF = """\
extensions = ["myst_parser", "sphinx_tlstages"]
project = "tests"
html_theme = "basic"
"""


@pytest.fixture(scope="session", autouse=True)
def shared_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One lowering cache for the session, and an environment free of CI settings.

    Entries are content-addressed, so sharing is safe and keeps the suite fast; tests
    about the cache itself use their own. Session-scoped so that module-scoped builds
    see it too; CI and READTHEDOCS are unset because the suite runs under CI, and tests
    about strict mode set them themselves. Kept workers (``tlstages_keep_workers``) get
    a socket folder of the session's own, never the user's, and are stopped at its end.
    """
    cache = tmp_path_factory.mktemp("tlstages-cache")
    sockets = tmp_path_factory.mktemp("kept")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TLSTAGES_CACHE_DIR", str(cache))
        patch.setenv("TLSTAGES_WORKERS_DIR", str(sockets))
        for name in ("CI", "READTHEDOCS", "TLSTAGES_JOBS", "TLSTAGES_SNAPSHOTS",
                     "TLSTAGES_KEEP_WORKERS", "TLSTAGES_CACHE_URL", "TLSTAGES_CACHE_WRITE",
                     "TLSTAGES_CACHE_TIMEOUT", "READTHEDOCS_VERSION_TYPE",
                     "GITHUB_EVENT_NAME", "CI_MERGE_REQUEST_IID"):
            patch.delenv(name, raising=False)
        try:
            yield cache
        finally:
            for path, _ in kept.servers():
                kept.stop(path)


@pytest.fixture(scope="module")
def s3() -> Iterator[str]:
    """moto's S3 server with a ``books`` bucket, credentials and endpoint in the
    environment (one per test module)."""
    pytest.importorskip("moto")
    from .remote_servers import s3_server

    with s3_server() as endpoint, pytest.MonkeyPatch.context() as patch:
        for name, value in {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
                            "AWS_DEFAULT_REGION": "us-east-1",
                            "AWS_ENDPOINT_URL": endpoint}.items():
            patch.setenv(name, value)
        import boto3

        boto3.client("s3").create_bucket(Bucket="books")
        yield endpoint


@pytest.fixture
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A lowering cache of this test's own (for tests about the cache itself)."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("TLSTAGES_CACHE_DIR", str(cache))
    return cache


def strip_colours(text: str) -> str:
    return re.sub(r"\x1b\[[0-9;]*m", "", text)


@dataclass
class Built:
    app: SphinxTestApp

    @property
    def warnings(self) -> str:
        return strip_colours(str(self.app.warning.getvalue()))

    @property
    def status(self) -> str:
        return strip_colours(str(self.app.status.getvalue()))

    @property
    def outdir(self) -> Path:
        return Path(self.app.outdir)

    def html(self, docname: str = "index") -> str:
        return (self.outdir / f"{docname}.html").read_text(encoding="utf-8")

    def doctree(self, docname: str = "index") -> nodes.document:
        env, builder = self.app.env, self.app.builder
        if "tags" in inspect.signature(env.get_and_resolve_doctree).parameters:
            return env.get_and_resolve_doctree(docname, builder, tags=builder.tags)
        return env.get_and_resolve_doctree(docname, builder)

    def part(self, cls: str, docname: str = "index", index: int = 0) -> Element:
        """The ``index``-th element of class ``cls`` on the built HTML page."""
        found = parse(self.html(docname)).iter(cls=cls)
        assert len(found) > index, f"no element of class {cls} in {docname}"
        return found[index]

    def table(self, cls: str, docname: str = "index", index: int = 0) -> list[list[str]]:
        """The first table of a part, as rows of cell texts (header row first)."""
        return table_rows(self.part(cls, docname, index))


def write_project(srcdir: Path, files: dict[str, str], conf: str = CONF) -> None:
    """Write a project; files whose text is unchanged keep their mtime (Sphinx's signal)."""
    for name, text in {"conf.py": conf, **files}.items():
        path = srcdir / name
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")


def build_once(srcdir: Path, files: dict[str, str], buildername: str = "html",
               conf: str = CONF, **kwargs: Any) -> Built:
    """Build outside the function-scoped fixtures (for module-scoped results).

    The app is cleaned up at once (docutils' registries are global), so later apps in the
    session start clean; its environment stays readable.
    """
    write_project(srcdir, files, conf)
    app = SphinxTestApp(buildername, srcdir=srcdir, **kwargs)
    try:
        app.build()
    finally:
        app.cleanup()
    return Built(app)


@pytest.fixture
def build(make_app: Callable[..., SphinxTestApp], tmp_path: Path) -> Iterator[Callable[..., Built]]:
    """Build a project from ``{filename: text}``; returns a :class:`Built`."""

    def _build(files: dict[str, str], buildername: str = "html", conf: str = CONF,
               srcdir: Path | None = None, **kwargs: Any) -> Built:
        src = srcdir or tmp_path / "src"
        write_project(src, files, conf)
        app = make_app(buildername, srcdir=src, **kwargs)
        try:
            app.build()
        finally:
            app.cleanup()  # docutils' registries are global: free them for the next build
        return Built(app)

    yield _build
