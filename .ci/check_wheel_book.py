"""Check the small book ``nox -s dist`` built with the installed wheel.

Run with the environment's interpreter, from outside the checkout:
``python check_wheel_book.py CHECKOUT HTML_DIR LATEX_DIR``. The extension must come
from site-packages (not from CHECKOUT); every part but the chart (which needs benchmark
numbers) must be on the page, under its CSS class; every ``_static`` file a page
references must exist, the extension's own CSS and JavaScript among them; the LaTeX
output must have the extension's package beside it.
"""

from __future__ import annotations

import re
import sys
import sysconfig
from pathlib import Path

import sphinx_tlstages
from sphinx_tlstages.core.parts import PARTS


def check(checkout: Path, html: Path, latex: Path) -> list[str]:
    problems = []
    where = Path(sphinx_tlstages.__file__).resolve()
    if where.is_relative_to(checkout.resolve()):
        problems.append(f"sphinx_tlstages was imported from the checkout: {where}")
    purelib = Path(sysconfig.get_paths()["purelib"]).resolve()
    if not where.is_relative_to(purelib):
        problems.append(f"sphinx_tlstages is not the installed one: {where}")
    pages = {page: page.read_text(encoding="utf-8") for page in html.rglob("*.html")}
    classes = {c for text in pages.values()
               for found in re.findall(r'class="([^"]*)"', text) for c in found.split()}
    for part in PARTS:
        if part.word != "chart" and part.css not in classes:
            problems.append(f"no {part.word} part ({part.css}) on any page")
    referenced: set[str] = set()
    for page, text in pages.items():
        for ref in re.findall(r'(?:href|src)="((?:\.\./)*_static/[^"?#]+)', text):
            referenced.add(ref.lstrip("./"))
            if not (page.parent / ref).is_file():
                problems.append(f"{page.name} references {ref}, which the build lacks")
    for own in ("_static/tlstages.css", "_static/tlstages.js"):
        if own not in referenced:
            problems.append(f"no page references {own}")
    if not (latex / "sphinxtlstages.sty").is_file():
        problems.append("sphinxtlstages.sty is not beside the .tex")
    print(f"{len(pages)} pages from sphinx_tlstages {sphinx_tlstages.__version__} at {where}")
    return problems


if __name__ == "__main__":
    found = check(*(Path(arg) for arg in sys.argv[1:4]))
    for problem in found:
        print(f"wheel book: {problem}", file=sys.stderr)
    sys.exit(1 if found else 0)
