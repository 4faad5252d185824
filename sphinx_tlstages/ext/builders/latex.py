"""What LaTeX output needs besides the nodes: ``sphinxtlstages.sty``.

The package declares the Unicode characters the parts (and kernels) write that pdflatex
does not know (the minus sign, ``≤``, ``≥``; xelatex and lualatex need nothing), and sets the
tables smaller than the text. Every LaTeX document loads it (``app.add_latex_package``), so
it is copied beside them, where ``latexmk`` looks.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from docutils import nodes

from ...core.files import write_if_changed
from ...core.kernel.listing import Listing, for_pdflatex
from ..messages import warn

if TYPE_CHECKING:
    from sphinx.application import Sphinx

    from ...core.plan.spec import DirectiveSpec

PACKAGE = "sphinxtlstages"
STY = Path(__file__).parent.parent / "texinputs" / f"{PACKAGE}.sty"


def copy_package(app: Sphinx) -> None:
    """On ``builder-inited``: put the package in the LaTeX output folder (unchanged, it
    is left alone, so an incremental build rewrites nothing)."""
    if app.builder.format == "latex":
        write_if_changed(Path(app.outdir, STY.name), STY.read_text(encoding="utf-8"))


def setup_latex(app: Sphinx) -> None:
    app.add_latex_package(PACKAGE)
    app.connect("builder-inited", copy_package)


def _replace_text(node: nodes.Text) -> list[tuple[int, str]]:
    text, found = for_pdflatex(str(node))
    if found:
        node.parent.replace(node, nodes.Text(text))
    return found


def for_latex(app: Sphinx, spec: DirectiveSpec, root: nodes.Element) -> None:
    """What one rendered directive needs for LaTeX: a captioned listing as Sphinx's LaTeX
    writer wants it (its own post-transform ran before the directive was rendered), and
    the text pdflatex cannot print replaced."""
    # Imported here: it loads Sphinx's whole LaTeX builder, which an HTML build never uses.
    from sphinx.builders.latex.nodes import captioned_literal_block

    for wrapper in list(root.findall(nodes.container)):
        if wrapper.get("literal_block"):
            wrapper.replace_self(captioned_literal_block("", *wrapper.children,
                                                         **wrapper.attributes))
    _for_pdflatex(app, spec, root)


def _for_pdflatex(app: Sphinx, spec: DirectiveSpec, root: nodes.Element) -> None:
    """Under pdflatex, replace what it cannot print (a CJK comment in a kernel, say) by
    ``?`` in one directive's nodes, and say so once, at the first such listed line:
    pdflatex would otherwise stop at it with "Unicode character ... not set up"."""
    if app.config.latex_engine != "pdflatex":
        return
    listing = spec.listing or Listing(spec.variants[0].source)
    lines: list[int] = []  # kernel lines of the listing that had some
    chars: dict[str, None] = {}
    listed = [block for part in root.findall(nodes.container) if "tl-source" in part["classes"]
              for block in part.findall(nodes.literal_block)]
    for block in list(root.findall(nodes.literal_block)):
        text, found = for_pdflatex(block.astext())
        if not found:
            continue
        if block in listed:
            lines += [listing.start + number - 1 for number, _ in found]
        chars.update(dict.fromkeys("".join(bad for _, bad in found)))
        block.rawsource = text
        block.children = []
        block += nodes.Text(text)
    for text_node in list(root.findall(nodes.Text)):
        found = _replace_text(text_node)
        chars.update(dict.fromkeys("".join(bad for _, bad in found)))
    if not chars:
        return
    shown = "".join(list(chars)[:8]) + ("…" if len(chars) > 8 else "")
    # Numbered as the listing numbers them: the file's lines, or the document's.
    first = spec.kernel_line or 1
    numbers = ", ".join(str(first + n - 1) for n in lines[:6]) \
        + (", ..." if len(lines) > 6 else "")
    where = (f"line {numbers} of the kernel has" if len(lines) == 1 else
             f"lines {numbers} of the kernel have") if lines else "its text has"
    warn(f"tl-pipeline {spec.name}: {where} characters pdflatex cannot "
         f"print ({shown}); the PDF shows each as '?'. Set latex_engine = 'xelatex' (or "
         "'lualatex') to print them.", "latex",
         location=spec.kernel_location(lines[0] if lines else None))

