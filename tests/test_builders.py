"""Every builder carries every directive of a multi-document project, where it stands.

The builders that assemble one output from many documents (singlehtml, latex, texinfo,
man) resolve them all under the root document's name; the directives live in other
documents. One reStructuredText and one MyST chapter, lowered once for all builders.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from sphinx.util.texescape import escape as tex_escape

from sphinx_tlstages.core.parts import SHOW_PARTS
from sphinx_tlstages.core.plan.toolkit import find

from .conftest import Built, build_once
from .kernels import GEMM, GEMM_PARAMS, myst, rst

CONF = """\
extensions = ["myst_parser", "sphinx_tlstages"]
project = "tests"
copyright = "2026, tests"
version = release = "1"
html_theme = "basic"
"""

# LaTeX's special characters in an author's title: they must survive every writer.
TITLE = "First GEMM ~ 100% of <peak> #1_a & {b}"

FILES = {
    "index.rst": "Book\n====\n\nThe introduction.\n\n.. toctree::\n\n   one\n   part/two\n",
    "one.rst": "One\n===\n\nBefore the first.\n\n"
               + rst(GEMM, TITLE, num_stages="2 3", params=GEMM_PARAMS, name="first",
                     # Every part (the second: the default); resources where a compiler
                     # is installed (without one, the build warns that it lacks it).
                     show=" ".join(p for p in SHOW_PARTS if p != "resources" or find("auto")))
               + "\nAfter the first.\n",
    "part/two.md": "# Two\n\nBefore the second.\n\n"
                   + myst(GEMM, "Second GEMM", num_stages="2 3", params=GEMM_PARAMS,
                          name="second")
                   + "\nAfter the second.\n",
}

# Per builder: its output files, in reading order, and whether it has HTML.
OUTPUTS = {
    "html": (["one.html", "part/two.html"], True),
    "dirhtml": (["one/index.html", "part/two/index.html"], True),
    "singlehtml": (["index.html"], True),
    "epub": (["one.xhtml", "part/two.xhtml"], True),
    "latex": (["tests.tex"], False),
    "text": (["one.txt", "part/two.txt"], False),
    "man": (["tests.1"], False),
    "texinfo": (["tests.texi"], False),
}


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("builders") / "src"


@pytest.fixture(scope="module", params=list(OUTPUTS))
def built(request: pytest.FixtureRequest, project: Path) -> Built:
    # One source folder and one environment for all builders: read and lowered once.
    return build_once(project, FILES, buildername=request.param, conf=CONF)


def _text(built: Built) -> str:
    files, _ = OUTPUTS[built.app.builder.name]
    text = "\n".join((built.outdir / f).read_text(encoding="utf-8") for f in files)
    if built.app.builder.name == "man":
        text = text.replace("\\-", "-").replace("\\(em", "—")
    return text


def test_every_directive_is_where_it_stands(built: Built) -> None:
    text = _text(built)
    order = ["Before the first", "First GEMM", "Summary", "Shared buffers", "After the first",
             "Before the second", "Second GEMM", "Summary", "Shared buffers",
             "After the second"]
    at = 0
    for marker in order:
        found = text.find(marker, at)
        assert found >= 0, f"{marker!r} missing (or out of place) in {built.app.builder.name}"
        at = found + len(marker)
    assert built.warnings == ""


def test_every_builder_gets_the_tables(built: Built) -> None:
    text = _text(built)
    assert text.count("49,152 B") >= 2  # the num_stages=3 column of both directives
    assert text.count("depth 3") >= 2  # the summary table


def test_builders_without_html_say_so_once(built: Built) -> None:
    name = built.app.builder.name
    text = _text(built)
    _, html = OUTPUTS[name]
    said = built.status.count(f"tl-pipeline: the {name} builder shows")
    if html:
        assert "<details" in text and said == 0
        return
    assert "<details" not in text
    # One line per directive in the output, one in the log per build.
    assert re.sub(r"\s+", " ", text).count("full CUDA listings are in the HTML output") == 2
    assert said == 1
    summary = "num_stages 2 → 3: +"  # a diff's summary, in a list
    assert (tex_escape(summary) if name == "latex" else summary) in text


def test_latex_loads_its_package_and_fits_tables(built: Built) -> None:
    if built.app.builder.name != "latex":
        pytest.skip("LaTeX only")
    tex = _text(built)
    assert r"\usepackage{sphinxtlstages}" in tex
    # Escaped, not dropped: the author's title and CUDA spellings in the tables.
    assert tex_escape(TITLE) in tex
    assert r"tl::cp\_async\_wait\textless{}N\textgreater{}()" in tex
    assert r"tl.PipelinePlanning\#1" in tex and r"(59 \%)" in tex
    assert (built.outdir / "sphinxtlstages.sty").is_file()
    # Every table of the parts has widths that add up to at most the line.
    specs = re.findall(r"\\begin\{(?:tabular|tabulary|longtable)\}(?:\[t\])?(?:\{\\linewidth\})?"
                       r"(?:\[t\])?\{((?:>\{[^}]*\}\\X\{\d+\}\{\d+\})+)\}", tex)
    assert len(specs) >= 2 * 4
    for spec in specs:
        parts = [(int(a), int(b)) for a, b in re.findall(r"\\X\{(\d+)\}\{(\d+)\}", spec)]
        assert sum(a / b for a, b in parts) <= 1.0


GHOST = '''\
from docutils.parsers.rst import Directive
from sphinx_tlstages.ext.nodes import tl_pipeline_placeholder

class Ghost(Directive):
    def run(self):
        node = tl_pipeline_placeholder(name="ghost", docname="index")
        node.source, node.line = self.state.document["source"], self.lineno
        return [node]

def setup(app):
    app.add_directive("ghost", Ghost)
'''


@pytest.mark.parametrize("buildername", ["html", "text"])
def test_a_placeholder_without_results_says_so(tmp_path: Path, buildername: str) -> None:
    conf = "import os, sys; sys.path.insert(0, os.path.dirname(__file__))\n" + CONF.replace(
        '"sphinx_tlstages"]', '"sphinx_tlstages", "ghost"]')
    built = build_once(tmp_path / "src", {"ghost.py": GHOST,
                                          "index.rst": "Ghost\n=====\n\n.. ghost::\n"},
                       buildername=buildername, conf=conf)
    assert re.search(r"index\.rst:4: WARNING: tl-pipeline ghost: no results: its document "
                     r"'index' recorded no such directive \[tlstages\.lowering\]",
                     built.warnings)
    page = "index.html" if buildername == "html" else "index.txt"
    assert "tl-pipeline ghost: no results" in (built.outdir / page).read_text("utf-8")


def test_downloads_resolve_from_every_page(built: Built) -> None:
    """Relative to the page being written: chapter/ in dirhtml, index.html in singlehtml."""
    name = built.app.builder.name
    if name not in ("html", "dirhtml", "singlehtml"):
        pytest.skip("builders with CUDA downloads only (EPUB has none)")
    links = [(page, ref) for page in built.outdir.rglob("*.html")
             for ref in re.findall(r'href="([^"#?]+\.cu)"', page.read_text(encoding="utf-8"))]
    assert len(links) == 8  # two variants of two directives, each as listed and with #line
    assert all((page.parent / ref).is_file() for page, ref in links)


def test_a_new_kind_of_part_plugs_in(tmp_path: Path) -> None:
    """A node of ours that a builder has no visitor for becomes its stand-in there (one
    note per run of them), and stays itself where a visitor is registered."""
    import gc

    from docutils import nodes

    from sphinx_tlstages.ext.nodes import replace_undrawable, tl_node

    class tl_demo(tl_node):
        stand_in = "demonstrations as sentences"

    try:
        built = build_once(tmp_path / "src", {"index.rst": "Demo\n====\n"}, "text", CONF)
        built.app.add_node(tl_demo, html=(lambda self, node: None, None))
        root = nodes.container("", tl_demo("", nodes.paragraph(text="one")),
                               tl_demo("", nodes.paragraph(text="two")))
        replace_undrawable(built.app, root)
        assert [type(n).__name__ for n in root.children] == ["paragraph", "paragraph"]
        assert root.astext() == "one\n\ntwo"
    finally:
        del tl_demo  # out of tl_node's subclasses again, for the builds after this one
        gc.collect()
