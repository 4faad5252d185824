"""What LaTeX output needs besides the nodes: ``sphinxtlstages.sty``.

The package declares the Unicode characters the parts (and kernels) write that pdflatex
does not know (the minus sign, ``≤``, ``≥``; xelatex and lualatex need nothing), and sets the
tables smaller than the text. Every LaTeX document loads it (``app.add_latex_package``), so
it is copied beside them, where ``latexmk`` looks.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..core.files import write_if_changed

if TYPE_CHECKING:
    from sphinx.application import Sphinx

PACKAGE = "sphinxtlstages"
STY = Path(__file__).parent / "texinputs" / f"{PACKAGE}.sty"


def copy_package(app: Sphinx) -> None:
    """On ``builder-inited``: put the package in the LaTeX output folder (unchanged, it
    is left alone, so an incremental build rewrites nothing)."""
    if app.builder.format == "latex":
        write_if_changed(Path(app.outdir, STY.name), STY.read_text(encoding="utf-8"))


def setup_latex(app: Sphinx) -> None:
    app.add_latex_package(PACKAGE)
    app.connect("builder-inited", copy_package)
