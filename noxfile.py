"""Developer sessions: ``nox -s tests``, ``nox -s docs`` and friends.

Every session that imports TileLang installs the CPU build of torch first: tilelang asks
for an unpinned torch, which on Linux would otherwise pull a CUDA build of several GB.
"""

from __future__ import annotations

import urllib.request

import nox

nox.options.sessions = ["tests", "lint", "typecheck"]
nox.options.reuse_existing_virtualenvs = True

PYTHON = "3.11"
TORCH = "torch==2.13.0"
CPU_INDEX = "https://download.pytorch.org/whl/cpu"
BOOK = "book"
BOOK_OUT = "book/_build/html"


def install_cpu_torch(session: nox.Session) -> None:
    """CPU torch from PyTorch's CPU index when it answers, else from the default index
    (whose configured find-links may already hold a CPU build)."""
    try:
        urllib.request.urlopen(f"{CPU_INDEX}/torch/", timeout=5).close()
        extra = ["--extra-index-url", CPU_INDEX]
    except OSError:
        session.log(f"{CPU_INDEX} is out of reach; taking {TORCH} from the default index")
        extra = []
    session.install(TORCH, *extra)


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


@nox.session(name="docs-live", python=PYTHON)
def docs_live(session: nox.Session) -> None:
    """Rebuild the book on every change and serve it on localhost."""
    install_cpu_torch(session)
    session.install("-e", ".[docs]", "sphinx-autobuild")
    session.run("sphinx-autobuild", BOOK, BOOK_OUT, "--watch", "sphinx_tlstages",
                *session.posargs)


@nox.session(python=PYTHON)
def lint(session: nox.Session) -> None:
    """ruff over the package, the tests and this file."""
    session.install("ruff")
    session.run("ruff", "check", "sphinx_tlstages", "tests", "noxfile.py")


@nox.session(python=PYTHON)
def typecheck(session: nox.Session) -> None:
    """mypy, strict, over the package (TileLang itself is not needed for this)."""
    session.install("mypy", "sphinx", "docutils", "types-docutils")
    session.run("mypy")
