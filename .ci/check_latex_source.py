"""Check the book's LaTeX source (``sphinx-build -b latex``) without running LaTeX.

Every ``tl-pipeline`` of the book's sources must appear in the .tex once, in source order,
with its caption, its summary table and the line saying what only HTML shows; the
extension's LaTeX package must be loaded and beside the .tex. Usage:
``python .ci/check_latex_source.py BOOK_SOURCE_DIR LATEX_OUTPUT_DIR``.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from sphinx.util import texescape

DIRECTIVE = re.compile(r"^(?:\.\. tl-pipeline::|```\{tl-pipeline\})[ \t]*(.*)$", re.MULTILINE)
SHOW = re.compile(r"^\s*:show:\s*(.*)$", re.MULTILINE)
TABLE = re.compile(r"\\begin\{(?:tabular|tabulary|longtable)\}")
ROOT = r"\begin{sphinxuseclass}{tl-pipeline}"
# A fenced code block of a Markdown page (an example of the directive, not one).
FENCE = re.compile(r"^```(?!\{tl-pipeline\})[^\n]*\n.*?^```[ \t]*$", re.MULTILINE | re.DOTALL)


def titles(source: Path, order: list[str]) -> list[tuple[str, bool]]:
    """Each directive's title, and whether it shows a part only HTML has (diffs, full
    CUDA: every directive without its own :show:), documents in reading order."""
    found = []
    for docname in order:
        path = next(p for p in (source / f"{docname}.rst", source / f"{docname}.md")
                    if p.is_file())
        text = path.read_text("utf-8")
        if path.suffix == ".md":
            text = FENCE.sub("", text)
        starts = list(DIRECTIVE.finditer(text))
        for i, match in enumerate(starts):
            block = text[match.end():starts[i + 1].start() if i + 1 < len(starts) else None]
            show = SHOW.search(block.split("\n\n", 1)[0])
            html_only = show is None or bool({"diff", "cuda"} & set(show.group(1).split()))
            found.append((match.group(1).strip(), html_only))
    return found


def reading_order(tex: str) -> list[str]:
    """The documents as the .tex holds them (Sphinx labels each one's start)."""
    return list(dict.fromkeys(re.findall(r"\\label\{\\detokenize\{([^:}]+)::doc\}\}", tex)))


def check(source: Path, out: Path) -> list[str]:
    problems = []
    texs = sorted(out.glob("*.tex"))
    if not texs:
        return [f"no .tex in {out}"]
    tex = "\n".join(p.read_text(encoding="utf-8") for p in texs)
    if r"\usepackage{sphinxtlstages}" not in tex:
        problems.append("sphinxtlstages is not loaded")
    if not (out / "sphinxtlstages.sty").is_file():
        problems.append("sphinxtlstages.sty is not beside the .tex")
    texescape.init()
    wanted = titles(source, reading_order(tex))
    pieces = tex.split(ROOT)[1:]
    if len(pieces) != len(wanted):
        problems.append(f"{len(wanted)} directives in the sources, {len(pieces)} in the .tex")
    for (title, html_only), piece in zip(wanted, pieces, strict=False):
        if texescape.escape(title) not in piece[:2000]:
            problems.append(f"{title!r}: its caption is not where the directive stands")
        if "{Summary}" not in piece:
            problems.append(f"{title!r}: no summary")
        if not TABLE.search(piece):
            problems.append(f"{title!r}: no table")
        if html_only and "in the HTML output" not in piece:
            problems.append(f"{title!r}: does not say what only HTML shows")
    if "no results" in tex:
        problems.append("a directive found no results")
    print(f"{len(pieces)} directives in {', '.join(p.name for p in texs)}: "
          f"{len(TABLE.findall(tex))} tables")
    return problems


if __name__ == "__main__":
    found = check(Path(sys.argv[1]), Path(sys.argv[2]))
    for problem in found:
        print(f"LaTeX source: {problem}", file=sys.stderr)
    sys.exit(1 if found else 0)
