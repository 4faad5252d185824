"""Developer sessions: ``nox -s tests``, ``nox -s docs`` and friends.

Every session that imports TileLang installs the CPU build of torch first: tilelang asks
for an unpinned torch, which on Linux would otherwise pull a CUDA build of several GB.
"""

from __future__ import annotations

import json
import shutil
import urllib.request
from pathlib import Path

import nox

nox.options.sessions = ["tests", "lint", "typecheck"]
nox.options.reuse_existing_virtualenvs = True

PYTHON = "3.11"
TORCH = "torch==2.13.0"
CPU_INDEX = "https://download.pytorch.org/whl/cpu"
BOOK = "book"
BOOK_OUT = "book/_build/html"


def _cpu_index_answers() -> bool:
    try:
        urllib.request.urlopen(f"{CPU_INDEX}/torch/", timeout=5).close()
    except OSError:
        return False
    return True


def install_cpu_torch(session: nox.Session) -> None:
    """CPU torch from PyTorch's CPU index when it answers, else from the default index
    (whose configured find-links may already hold a CPU build)."""
    if _cpu_index_answers():
        session.install(TORCH, "--extra-index-url", CPU_INDEX)
    else:
        session.log(f"{CPU_INDEX} is out of reach; taking {TORCH} from the default index")
        session.install(TORCH)


@nox.session(python=PYTHON)
def tests(session: nox.Session) -> None:
    """Run the test suite (real TileLang lowering on the CPU)."""
    install_cpu_torch(session)
    session.install("-e", ".[test]")
    session.run("pytest", *session.posargs)


@nox.session(python=PYTHON)
def docs(session: nox.Session) -> None:
    """Build the book as Read the Docs does: warnings are errors."""
    install_cpu_torch(session)
    session.install("-e", ".[docs]")
    session.run("sphinx-build", "-W", "--keep-going", "-b", "html", BOOK, BOOK_OUT,
                *session.posargs)
    session.log(f"The book is in {BOOK_OUT}/index.html")


# How long kept lowering workers outlive a rebuild in docs-live (tlstages_keep_workers).
KEEP_WORKERS = "600"


@nox.session(name="docs-live", python=PYTHON)
def docs_live(session: nox.Session) -> None:
    """Rebuild the book on every change and serve it on localhost; the lowering workers
    are kept between rebuilds, so an edit re-lowers only what changed, without importing
    TileLang again (``tlstages workers status`` shows them, ``stop`` ends them)."""
    install_cpu_torch(session)
    session.install("-e", ".[docs]", "sphinx-autobuild")
    # A drifted snapshot's pending result is rewritten by every build: watching it would
    # rebuild for ever.
    session.run("sphinx-autobuild", BOOK, BOOK_OUT, "--watch", "sphinx_tlstages",
                "--re-ignore", r"\.pending\.json$", *session.posargs,
                env={"TLSTAGES_KEEP_WORKERS": KEEP_WORKERS})


@nox.session(python=PYTHON)
def lint(session: nox.Session) -> None:
    """ruff over the package, the tests and the benchmarks; the import contracts of
    pyproject.toml (the layering of core, worker, runner, ext and cli)."""
    session.install("ruff", "import-linter>=2.1")
    session.run("ruff", "check", "sphinx_tlstages", "tests", "benchmarks", "noxfile.py")
    # The package from this checkout, without installing it (or TileLang) for this.
    session.run("lint-imports", env={"PYTHONPATH": str(Path.cwd())})


@nox.session(python=PYTHON)
def typecheck(session: nox.Session) -> None:
    """mypy, strict, over the package (TileLang itself is not needed for this)."""
    session.install("mypy", "sphinx", "docutils", "types-docutils")
    session.run("mypy")


@nox.session(python=PYTHON)
def snapshots(session: nox.Session) -> None:
    """Rebuild the book with TLSTAGES_SNAPSHOTS=update: accept every change, drop unused."""
    install_cpu_torch(session)
    session.install("-e", ".[docs]")
    session.run("sphinx-build", "-b", "html", BOOK, BOOK_OUT, *session.posargs,
                env={"TLSTAGES_SNAPSHOTS": "update"})


@nox.session(name="bench-build", python=PYTHON)
def bench_build(session: nox.Session) -> None:
    """The build-time benchmark: ratios against a programoutput peer, TileLang alone and
    the same books without the extension (``-- --json FILE`` keeps the figures)."""
    install_cpu_torch(session)
    session.install("-e", ".[docs]", "sphinxcontrib-programoutput")
    session.run("python", "benchmarks/build_speed.py", *session.posargs)


@nox.session(python=PYTHON, reuse_venv=False)
def rtd(session: nox.Session) -> None:
    """Read the Docs' install and build, in a fresh environment, against its limits
    (15 minutes, 7 GB): the same steps as .readthedocs.yaml, with READTHEDOCS set."""
    figures = Path(session.create_tmp()) / "rtd-figures.json"
    figures.unlink(missing_ok=True)
    measure = ["python", "benchmarks/measure.py", "--json", str(figures)]
    session.install("pip")
    extra = ["--index-url", CPU_INDEX] if _cpu_index_answers() else []
    session.run(*measure, "--label", "install torch", "--", "python", "-m", "pip", "install",
                "-q", TORCH, *extra)
    session.run(*measure, "--label", "install the book", "--", "python", "-m", "pip",
                "install", "-q", ".[docs]")
    out = Path(session.create_tmp()) / "html"
    shutil.rmtree(out, ignore_errors=True)
    session.run(*measure, "--label", "build", "--", "python", "-m", "sphinx", "-T", "-W",
                "--keep-going", "-b", "html", "-d", str(out.parent / "doctrees"), BOOK,
                str(out), env={"READTHEDOCS": "True"})
    data = json.loads(figures.read_text())
    seconds = sum(step["seconds"] for step in data.values())
    peak = max(step["peak_mib"] for step in data.values())
    session.log(f"Read the Docs reproduction: {seconds:.0f} s of 900 s, peak {peak} MiB of "
                "7168 MiB")
    if seconds > 900 or peak > 7168:
        session.error("over Read the Docs' limits")
