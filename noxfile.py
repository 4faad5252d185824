"""Developer sessions: ``nox -s tests``, ``nox -s docs`` and friends.

Every session that imports TileLang installs the CPU build of torch first: tilelang asks
for an unpinned torch, which on Linux would otherwise pull a CUDA build of several GB.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import urllib.request
from pathlib import Path

import nox

nox.options.sessions = ["tests", "lint", "typecheck"]
nox.options.reuse_existing_virtualenvs = True

PYTHON = "3.11"
TORCH = "torch==2.13.0"
TILELANG_NEWEST = "0.1.15"
# The ranges pyproject.toml declares, each end tested with the smoke subset (tests marked
# ``smoke``) by a session of its own: combinations that install together (Sphinx 8.1 is
# the last for Python 3.10, myst-parser 4 the last for Sphinx 8.1 and 5 the first for 9).
RANGE_ENDS = {
    "oldest": ("3.10", ["sphinx==8.1.3", "docutils==0.20.1", "myst-parser==4.0.1",
                        "tilelang==0.1.14"]),
    "newest": ("3.13", ["sphinx", "docutils", "myst-parser", f"tilelang=={TILELANG_NEWEST}"]),
}
CPU_INDEX = "https://download.pytorch.org/whl/cpu"
BOOK = "book"
BOOK_OUT = "book/_build/html"
# One environment (and so one lowering cache) for every builder of the book.
DOCTREES = "book/_build/doctrees"
LATEX_OUT = "book/_build/latex"
PDF_ENGINES = ("pdflatex", "xelatex")  # Sphinx's default, and the Unicode one
# texlive-latex-extra brings PGF/TikZ (texlive-pictures), which draws the figures.
TEX_PACKAGES = ("latexmk texlive-latex-recommended texlive-latex-extra "
                "texlive-fonts-recommended tex-gyre texlive-xetex fonts-freefont-otf")


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
    """The test suite (real TileLang lowering on the CPU), with the newest TileLang and
    NVIDIA's compiler (the resources part's builds run here; under ``CI`` they must)."""
    install_cpu_torch(session)
    session.install("-e", ".[test,resources]", f"tilelang=={TILELANG_NEWEST}")
    session.run("pytest", *session.posargs)


def _range_end(session: nox.Session, name: str) -> None:
    install_cpu_torch(session)
    # The resources extra pins one CUDA release whatever the range end: its builds (and the
    # book's fresh recording, whose snapshots hold the part's numbers) run at both ends.
    session.install("-e", ".[test,resources]", *RANGE_ENDS[name][1])
    session.run("python", "-c", "import sys, sphinx, docutils, myst_parser, tilelang; "
                "print('Python', sys.version.split()[0], '| Sphinx', sphinx.__version__, "
                "'| docutils', docutils.__version__, '| MyST-Parser', myst_parser.__version__, "
                "'| TileLang', tilelang.__version__)")
    # The upgrade rehearsal's test lowers with the other range end's TileLang, where that
    # session's environment exists (it skips, saying so, where it does not).
    other = Path(".nox", "newest" if name == "oldest" else "oldest", "bin", "python")
    env = {"TLSTAGES_UPGRADE_PYTHON": str(other.resolve())} if other.is_file() else {}
    session.run("pytest", *(session.posargs or ["-m", "smoke"]), env=env)


@nox.session(python=RANGE_ENDS["oldest"][0])
def oldest(session: nox.Session) -> None:
    """The smoke subset at the lower end of every declared range."""
    _range_end(session, "oldest")


@nox.session(python=RANGE_ENDS["newest"][0])
def newest(session: nox.Session) -> None:
    """The smoke subset with the newest Python and the newest releases that install."""
    _range_end(session, "newest")


@nox.session(python=PYTHON)
def quick(session: nox.Session) -> None:
    """The tests that need neither TileLang nor torch (marked ``quick``), in an environment
    without them: the package without its dependencies, then Sphinx and pytest. Seconds."""
    session.install("--no-deps", "-e", ".")
    session.install("sphinx>=8.1.3", "docutils>=0.20.1", "pytest>=8", "sphinx-pytest>=0.2",
                    "myst-parser>=4.0.1")
    session.run("pytest", "-m", "quick", "-p", "no:cacheprovider", *session.posargs)


@nox.session(python=PYTHON)
def docs(session: nox.Session) -> None:
    """Build the book as Read the Docs does, warnings as errors: HTML, then EPUB and the
    LaTeX source (checked for every directive's caption and tables; ``pdf`` runs LaTeX).
    The later builders reuse the HTML build's environment and lowerings: seconds each."""
    install_cpu_torch(session)
    session.install("-e", ".[docs]")
    build = ["sphinx-build", "-W", "--keep-going", "-d", DOCTREES]
    session.run(*build, "-b", "html", BOOK, BOOK_OUT, *session.posargs)
    session.run(*build, "-q", "-b", "epub", BOOK, "book/_build/epub")
    session.run(*build, "-q", "-b", "latex", BOOK, LATEX_OUT)
    session.run("python", ".ci/check_latex_source.py", BOOK, LATEX_OUT)
    session.log(f"The book is in {BOOK_OUT}/index.html")


@nox.session(python=PYTHON)
def pdf(session: nox.Session) -> None:
    """The book's PDF through latexmk, with pdflatex (Sphinx's default) and xelatex."""
    missing = [tool for tool in ("latexmk", "pdflatex", "xelatex", "make")
               if shutil.which(tool) is None]
    if missing:
        session.error(f"{', '.join(missing)} not found. TeX Live from Debian's or Ubuntu's "
                      f"packages: sudo apt-get install make {TEX_PACKAGES}")
    install_cpu_torch(session)
    session.install("-e", ".[docs]")
    for engine in PDF_ENGINES:
        out = Path("book/_build") / f"pdf-{engine}"
        session.run("sphinx-build", "-W", "--keep-going", "-q", "-b", "latex", "-d", DOCTREES,
                    "-D", f"latex_engine={engine}", BOOK, str(out))
        session.run("make", "-C", str(out), "all-pdf",
                    "LATEXMKOPTS=-interaction=nonstopmode -halt-on-error", external=True,
                    silent=True)
        for log in out.glob("*.log"):
            text = log.read_text(encoding="utf-8", errors="replace")
            overfull = text.count("Overfull \\hbox")
            missing_glyphs = text.count("Missing character")
            session.log(f"{engine}: {log.with_suffix('.pdf')}, {overfull} overfull lines, "
                        f"{missing_glyphs} missing characters")


# How long kept lowering workers outlive a rebuild in docs-live (tlstages_keep_workers).
KEEP_WORKERS = "600"


@nox.session(name="docs-live", python=PYTHON)
def docs_live(session: nox.Session) -> None:
    """Rebuild the book on every change and serve it on localhost; the lowering workers
    are kept between rebuilds, so an edit re-lowers only what changed, without importing
    TileLang again (``tlstages workers status`` shows them, ``stop`` ends them)."""
    install_cpu_torch(session)
    session.install("-e", ".[docs]", "sphinx-autobuild")
    # A drifted snapshot's pending result is written by the build (unchanged bytes are
    # left alone, but a new drift is written through a temporary file and a rename):
    # watching them would rebuild for ever.
    session.run("sphinx-autobuild", "-d", DOCTREES, BOOK, BOOK_OUT, "--watch",
                "sphinx_tlstages", "--re-ignore", r"\.pending\.json(\.[^/]*\.tmp)?$",
                *session.posargs,
                env={"TLSTAGES_KEEP_WORKERS": KEEP_WORKERS})


@nox.session(python=PYTHON)
def lint(session: nox.Session) -> None:
    """ruff over the package, the tests, the benchmarks and the verification tools; the
    import contracts of
    pyproject.toml (the layering of core, worker, runner, ext and cli)."""
    session.install("ruff", "import-linter>=2.1")
    session.run("ruff", "check", "sphinx_tlstages", "tests", "benchmarks", "verification", ".ci",
                "noxfile.py")
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
    session.run("sphinx-build", "-b", "html", "-d", DOCTREES, BOOK, BOOK_OUT, *session.posargs,
                env={"TLSTAGES_SNAPSHOTS": "update"})


@nox.session(name="bench-build", python=PYTHON)
def bench_build(session: nox.Session) -> None:
    """The build-time benchmark: the promise's ratios recorded with their commit and
    compared with the last record (``benchmarks/speed_ratios/``); ratios against a
    programoutput peer, TileLang alone and the same books without the extension (``--
    --json FILE`` keeps the figures); then a fresh folder against a warm remote cache,
    against a warm local ``-E`` build."""
    install_cpu_torch(session)
    session.install("-e", ".[docs,cache]", "sphinxcontrib-programoutput", "moto[server]")
    session.run("python", "benchmarks/speed_ratios/speed_ratios.py")
    session.run("python", "benchmarks/build_speed/build_speed.py", *session.posargs)
    session.run("python", "benchmarks/remote_cache/remote_cache.py")


@nox.session(name="bench-resources", python=PYTHON)
def bench_resources(session: nox.Session) -> None:
    """What the resources part costs: its compile step against the same nvcc and
    nvdisasm commands run directly (and nvcc alone) on the same CUDA, and a cold book
    with the part against without it (``-- --json FILE`` keeps the figures). The check
    against a GPU's driver is ``verification/resources_on_gpu``."""
    install_cpu_torch(session)
    session.install("-e", ".[docs,resources]")
    session.run("python", "benchmarks/resources_cost/resources_cost.py", *session.posargs)


def _tracked_copy(session: nox.Session) -> Path:
    """The checkout's tracked files as they are now, and nothing else: what Read the
    Docs clones (a stale egg-info in the working tree can hide a file package-data misses)."""
    dest = Path(session.create_tmp()) / "checkout"
    shutil.rmtree(dest, ignore_errors=True)
    names = subprocess.run(["git", "ls-files", "-z"], check=True, capture_output=True,
                           text=True).stdout.split("\0")
    for name in filter(None, names):
        if Path(name).is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(name, dest / name)
    return dest


def _missing_static(out: Path) -> list[str]:
    """``_static`` files some page references that the output lacks."""
    missing = set()
    for page in out.rglob("*.html"):
        text = page.read_text(encoding="utf-8", errors="replace")
        for ref in re.findall(r'(?:href|src)="((?:\.\./)*_static/[^"?#]+)', text):
            if not (page.parent / ref).is_file():
                missing.add(ref.lstrip("./"))
    return sorted(missing)


@nox.session(python=PYTHON, reuse_venv=False)
def rtd(session: nox.Session) -> None:
    """Read the Docs' install and build, in a fresh environment, against its limits
    (15 minutes, 7 GB): the same steps as .readthedocs.yaml, with READTHEDOCS set, from a
    copy of the tracked files, the package installed from it as Read the Docs does (not
    editable); then every _static file the pages reference must exist."""
    checkout = _tracked_copy(session)
    figures = Path(session.create_tmp()) / "rtd-figures.json"
    figures.unlink(missing_ok=True)
    measure = ["python", str(Path("benchmarks/measure.py").resolve()), "--json", str(figures)]
    session.install("pip")
    extra = ["--index-url", CPU_INDEX] if _cpu_index_answers() else []
    session.run(*measure, "--label", "install torch", "--", "python", "-m", "pip", "install",
                "-q", TORCH, *extra)
    session.run(*measure, "--label", "install the book", "--", "python", "-m", "pip",
                "install", "-q", f"{checkout}[docs]")
    out = Path(session.create_tmp()) / "rtd"
    shutil.rmtree(out, ignore_errors=True)
    # formats: [pdf, epub] in .readthedocs.yaml: the LaTeX source stands for the PDF here.
    for builder in ("html", "epub", "latex"):
        session.run(*measure, "--label", f"build {builder}", "--", "python", "-m", "sphinx",
                    "-T", "-W", "--keep-going", "-b", builder, "-d", str(out / "doctrees"),
                    str(checkout / BOOK), str(out / builder), env={"READTHEDOCS": "True"})
    session.run("python", ".ci/check_latex_source.py", str(checkout / BOOK), str(out / "latex"))
    missing = _missing_static(out / "html")
    if missing:
        session.error(f"pages reference _static files the build lacks: {missing}")
    data = json.loads(figures.read_text())
    seconds = sum(step["seconds"] for step in data.values())
    peak = max(step["peak_mib"] for step in data.values())
    session.log(f"Read the Docs reproduction: {seconds:.0f} s of 900 s, peak {peak} MiB of "
                "7168 MiB")
    if seconds > 900 or peak > 7168:
        session.error("over Read the Docs' limits")
