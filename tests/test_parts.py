"""The parts of the page as ``:show:`` names them: always-shown parts and aliases, on a
real page (the parsing itself is in test_options)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from sphinx_tlstages.core.parts import PARTS

from .conftest import Built
from .html_tree import parse
from .kernels import GEMM, GEMM_PARAMS, rst

PART_CLASSES = {part.css for part in PARTS}


def _page(show: str) -> dict[str, str]:
    return {"index.rst": "Parts\n=====\n\n" + rst(GEMM, "GEMM", num_stages="2 3",
                                                  params=GEMM_PARAMS, name="gemm",
                                                  show=show)}


def _parts(built: Built) -> list[str]:
    """The classes of the directive's parts (its root's children's first class)."""
    root = parse(built.html()).iter(cls="tl-pipeline")[0]
    return [element.classes[0] for element in root.iter()
            if element.classes and element.classes[0] in PART_CLASSES]


def test_naming_the_summary_is_accepted_and_the_figure_part_renders(
        build: Callable[..., Built], tmp_path: Path) -> None:
    built = build(_page("summary figures"), srcdir=tmp_path / "named")
    assert built.warnings == ""
    assert _parts(built) == ["tl-summary", "tl-figures"]
    assert built.part("tl-figures").iter(tag="svg")


def test_an_alias_renders_what_its_part_renders(build: Callable[..., Built],
                                                tmp_path: Path) -> None:
    word = build(_page("figure gemm"), srcdir=tmp_path / "word")
    alias = build(_page("schedule mma"), srcdir=tmp_path / "alias")
    assert word.warnings == alias.warnings == ""
    assert _parts(word) == ["tl-summary", "tl-figures", "tl-gemm"]
    assert alias.html() == word.html()


def test_an_unknown_part_is_a_warning_naming_the_words(build: Callable[..., Built],
                                                       tmp_path: Path) -> None:
    built = build(_page("figure grpahs"), srcdir=tmp_path / "typo")
    assert "unknown part grpahs; choose from source chart figure" in built.warnings
    assert "figures, schedule for figure" in built.warnings
