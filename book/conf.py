"""The sphinx-tlstages book: every figure in it is lowered by TileLang at build time."""

from __future__ import annotations

project = "TileLang pipelines, as the compiler sees them"
author = "sphinx-tlstages maintainers"
copyright = "2026, sphinx-tlstages maintainers"

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent / "_ext"))

extensions = ["myst_parser", "sphinx_tlstages", "tlstages_reference"]
myst_heading_anchors = 3  # links to a section of a Markdown page (guide/builds.md#speed)
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build", "kernels", "_ext", "README.md"]

html_theme = "furo"
html_title = "TileLang pipelines"

tlstages_target = "sm_80"
tlstages_num_stages = "1 2 3 4"

# EPUB wants a version; the book has none of its own but the extension's.
from sphinx_tlstages.version import __version__ as version  # noqa: E402

release = version
# The PDF (nox -s pdf, Read the Docs' "formats: [pdf, epub]").
latex_documents = [("index", "tilelang-pipelines.tex", project, author, "manual")]
epub_basename = "tilelang-pipelines"
