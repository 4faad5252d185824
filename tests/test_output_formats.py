"""Output that does not depend on the machine, the folder or the builder's format."""

from __future__ import annotations

import re
from pathlib import Path

from .conftest import build_once
from .kernels import GEMM, GEMM_PARAMS, rst

PAGE = "Formats\n=======\n\n" + rst(GEMM, "Seed GEMM", num_stages="2 3", params=GEMM_PARAMS,
                                     name="formats")


def pipeline_html(html: str) -> str:
    start = html.index('<div class="tl-pipeline')
    end = html.index("</article>", start) if "</article>" in html else len(html)
    return html[start:end]


def test_two_folders_two_cold_caches_give_identical_output(tmp_path: Path, monkeypatch) -> None:
    outputs = []
    for folder in ("first checkout", "second/checkout"):
        monkeypatch.setenv("TLSTAGES_CACHE_DIR", str(tmp_path / folder / "cache"))
        built = build_once(tmp_path / folder / "src", {"index.rst": PAGE})
        assert built.warnings == ""
        downloads = sorted((built.outdir / "_tlstages").rglob("*.cu"))
        outputs.append((pipeline_html(built.html()),
                        [(p.relative_to(built.outdir).as_posix(), p.read_bytes())
                         for p in downloads]))
    assert outputs[0] == outputs[1]
    assert len(outputs[0][1]) == 4  # two variants, each as listed and with #line


def test_text_builder_gets_tables_and_summaries_without_html(build) -> None:
    result = build({"index.rst": PAGE}, buildername="text")
    text = " ".join((result.outdir / "index.txt").read_text(encoding="utf-8").split())
    assert "<details" not in text and "<summary" not in text
    assert "(3, 128, 64)" in text and "49,152 B" in text
    assert re.search(r"\* num_stages 2 → 3: \+\d+ -\d+ lines \* num_stages=2: full CUDA, \d+ "
                     r"lines .* \*The diffs and the full CUDA listings are in the HTML output\.\*",
                     text)
    assert "98,304 B" in text and "pipelined, depth 3" in text
    assert "tl::cp_async_gs<16>" not in text  # full CUDA is HTML-only


def test_latex_builder_gets_plain_nodes(build) -> None:
    result = build({"index.rst": PAGE}, buildername="latex",
                   confoverrides={"latex_documents": [("index", "book.tex", "T", "A", "manual")]})
    tex = (result.outdir / "book.tex").read_text(encoding="utf-8")
    assert "details" not in tex
    assert "49,152 B" in tex
    assert "The diffs and the full CUDA listings are in the HTML output." in tex
    assert result.warnings == ""
