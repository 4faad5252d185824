"""The occupancy figure, drawn from results the book recorded (its committed snapshots:
the seed GEMM on Ampere at one to four stages, the tensor-memory GEMM on Blackwell), as
SVG in both themes and as TikZ; and its place in a built page's resources part."""

from __future__ import annotations

import json
import re
from pathlib import Path

from sphinx_tlstages.core.figures import occupancy_drawing, to_svg
from sphinx_tlstages.core.figures.drawing import Rect, Text
from sphinx_tlstages.core.figures.occupancy import describe, occupancy_input, sentence
from sphinx_tlstages.core.figures.tikz import to_tikz

SNAPSHOTS = Path(__file__).resolve().parent.parent / "book" / "_tlstages" / "snapshots"


def recorded(name: str) -> dict[str, object]:
    snapshot = json.loads((SNAPSHOTS / f"{name}.json").read_text(encoding="utf-8"))
    data = occupancy_input(name, [(f"num_stages={stages}", variant.get("resources"))
                                  for stages, variant in snapshot["variants"].items()])
    assert data is not None
    return data


def cells(drawing: object) -> dict[tuple[float, str], list[Rect]]:
    """The squares of each row (by its y) and colour."""
    found: dict[tuple[float, str], list[Rect]] = {}
    for shape in drawing.shapes:  # type: ignore[attr-defined]
        if isinstance(shape, Rect):
            found.setdefault((shape.y, shape.cls), []).append(shape)
    return found


def test_ampere_rows_draw_what_each_resource_allows_and_colour_the_deciding_one() -> None:
    data = recorded("gemm-sm80")
    pic = occupancy_drawing(data)
    texts = [s for s in pic.shapes if isinstance(s, Text)]
    said = [t.text for t in texts]
    assert said.count("num_stages=1") == 1 and "tensor" not in said
    assert [t.text for t in texts if t.text.endswith("%)")] == ["2 (12%)", "2 (12%)",
                                                                "1 (6%)", "1 (6%)"]
    bold = [t.text for t in texts if t.weight == "bold" and t.size == 10 and t.text.isdigit()]
    # ns 1: registers (2); ns 2: registers and shared memory (2, 2); ns 3, 4: shared (1).
    assert bold[:3] == ["2", "2", "2"] and bold[3:] == ["1", "1"]
    rows = sorted({y for y, _ in cells(pic)})
    assert len(rows) == 4
    first = {cls: len(r) for (y, cls), r in cells(pic).items() if y == rows[0]}
    # Registers allow 2 (in colour); shared memory 4, threads 16, blocks 32 (grey, four
    # squares at most: the numbers say the rest).
    assert first == {"accentfill": 2, "neutral": 4 + 4 + 4}
    third = {cls: len(r) for (y, cls), r in cells(pic).items() if y == rows[2]}
    assert third == {"accentfill": 1, "neutral": 2 + 4 + 4}
    assert pic.width <= 420  # a phone shows it whole
    assert "num_stages=3: 1 block per SM (6% of its warps), limited by shared memory " \
           "(allowed: registers 2, shared memory 1, threads 16" in describe(data)
    assert sentence(data).startswith("Occupancy figure: num_stages=1 2 per SM (registers);")


def test_blackwell_has_a_tensor_memory_column() -> None:
    data = recorded("gemm-tmem")
    pic = occupancy_drawing(data)
    said = [s.text for s in pic.shapes if isinstance(s, Text)]
    assert "tensor" in said and said.count("4") >= 3  # 128 of 512 columns: four blocks
    assert "limited by registers (allowed: registers 1, shared memory 6, threads 8, " \
           "the blocks an SM holds 32, tensor memory 4)" in describe(data)


def test_fewer_than_two_variants_draw_nothing() -> None:
    snapshot = json.loads((SNAPSHOTS / "gemm-sm80.json").read_text(encoding="utf-8"))
    assert occupancy_input("one", [("num_stages=1", snapshot["variants"]["1"]["resources"]),
                                   ("num_stages=2", None)]) is None


def test_svg_in_both_themes_and_tikz_are_the_same_bytes_every_time() -> None:
    data = recorded("gemm-sm80")
    html, again = to_svg(occupancy_drawing(data, "html")), to_svg(occupancy_drawing(data))
    assert html == again
    printed = to_svg(occupancy_drawing(data, "print"))
    assert "var(--tl-fig-accent" in html and "var(" not in printed
    assert 'role="img"' in html and "<desc" in html and "limited by registers" in html
    ids = re.findall(r' id="([^"]+)"', html)
    assert ids and all(i.startswith("tlo-") for i in ids)
    tikz = to_tikz(occupancy_drawing(data, "print"), lambda text: text.replace("_", r"\_"))
    assert tikz == to_tikz(occupancy_drawing(data, "print"),
                           lambda text: text.replace("_", r"\_"))
    assert "\\begin{tikzpicture}" in tikz and "num\\_stages=3" in tikz
    assert "\\definecolor{tlaccentfill}" in tikz or "accentfill" in tikz


def test_tensor_memory_is_a_limit_of_its_own_in_columns_of_powers_of_two() -> None:
    from sphinx_tlstages.core.hardware.occupancy import LIMITS, occupancy, tensor_memory_blocks

    assert [tensor_memory_blocks(c) for c in (20, 100, 128, 512, 600)] == [16, 4, 4, 1, 0]
    b200 = LIMITS["10.0"]
    gemm = occupancy(b200, 256, 240, 1024, 32768, tensor_memory=128)
    assert gemm["limits"]["tensor memory"] == 4 and gemm["limiter"] == ["registers"]
    whole = occupancy(b200, 128, 64, 0, 0, tensor_memory=512)
    assert (whole["blocks_per_sm"], whole["limiter"]) == (1, ["tensor memory"])
    assert "tensor memory" not in occupancy(b200, 128, 64, 0, 0)["limits"]
