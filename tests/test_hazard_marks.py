"""A hazard finding marked in its variant's schedule figure, from real lowerings: the
consume-then-fetch sum of tile-ai/tilelang#2668 (flagged on sm_80 in TileLang 0.1.15) gets
its two statements' steady-state boxes outlined and the finding said, in SVG (both
themes), TikZ, the description and the sentence; its fetch-first twin, and a finding whose
statements are not the figure's, draw nothing more than a clean figure."""

from __future__ import annotations

import itertools
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sphinx_tlstages.core.figures import schedule_drawing, schedule_sentence, to_svg
from sphinx_tlstages.core.figures.model import schedule_figures
from sphinx_tlstages.core.figures.tikz import to_tikz

from .conftest import build_once
from .kernels import read, rst
from .test_hazards import FETCH_FIRST, ROLLING_SUM

COVERS = ["num_stages=2"]


def lower(tmp: Path, source: str, target: str = "sm_80") -> dict[str, Any]:
    kernel = tmp / "kernel.py"
    kernel.write_text(source)
    done = subprocess.run([sys.executable, "-m", "sphinx_tlstages", "lower", str(kernel),
                           "--params", "N=512", "K=16", "--num-stages", "2", "--target",
                           target, "--json"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)["2"]
    return result


@pytest.fixture(scope="module")
def racy(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    result = lower(tmp_path_factory.mktemp("racy"), ROLLING_SUM)
    if result["hazards"]["verdict"] != "hazard":  # a TileLang that fixed #2668
        pytest.skip(f"not flagged: {result['hazards']['text']}")
    return result


@pytest.fixture(scope="module")
def racy90(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    result = lower(tmp_path_factory.mktemp("racy90"), ROLLING_SUM, "sm_90a")
    if result["hazards"]["verdict"] != "hazard":
        pytest.skip(f"not flagged: {result['hazards']['text']}")
    return result


@pytest.fixture(scope="module")
def twin(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return lower(tmp_path_factory.mktemp("twin"), FETCH_FIRST)


def figure(result: dict[str, Any]) -> dict[str, Any]:
    figures, note = schedule_figures(result)  # type: ignore[arg-type]
    assert note is None and len(figures) == 1, note
    return figures[0]


def outlines(svg: str) -> list[str]:
    return re.findall(r'<rect [^>]*class="hazard" fill="none"[^>]*/>', svg)


def test_the_finding_is_placed_on_its_two_statements(racy: dict[str, Any]) -> None:
    fig = figure(racy)
    finding = racy["hazards"]["findings"][0]
    assert [m["kind"] for m in fig["hazards"]] == ["RAW"]
    texts = {fig["statements"][i]["text"] for i in fig["hazards"][0]["stmts"]}
    assert texts == {s["text"] for s in finding["statements"]} == {
        "for i in T.Parallel(N): acc[i] += S[i]", "T.copy(A[k + 1, :], S)"}


def test_svg_outlines_the_steady_state_boxes_in_both_themes(racy: dict[str, Any]) -> None:
    fig = figure(racy)
    for theme in ("html", "print"):
        svg = to_svg(schedule_drawing(fig, COVERS, theme, "racy"))
        # two statement boxes in the steady state, and the legend's sample
        assert len(outlines(svg)) == 3, svg
        assert re.search(r'class="hazardfill">RAW\u00a0on\u00a0S\u00a0at\u00a0k=0: a race',
                         svg), svg
        colour = "var(--tl-fig-hazard, #E0115F)" if theme == "html" else "#C2185B"
        assert f".hazard{{stroke:{colour}}}" in svg
        assert "The hazard check flags RAW on S at k=0 between L" in svg  # the <desc>
    assert svg == to_svg(schedule_drawing(fig, COVERS, "print", "racy"))  # deterministic


def test_tikz_draws_the_outlines_and_the_words(racy: dict[str, Any]) -> None:
    tikz = to_tikz(schedule_drawing(figure(racy), COVERS, "print", "racy"), lambda t: t)
    assert "\\definecolor{tlhazard}{HTML}{C2185B}" in tikz
    assert len(re.findall(r"\\draw\[tlhazard, line width=1\.5pt", tikz)) == 3, tikz
    assert re.search(r"text=tlhazardfill.*\{RAW\u00a0on\u00a0S\u00a0at\u00a0k=0: a race", tikz)


def test_the_sentence_says_the_finding(racy: dict[str, Any]) -> None:
    said = schedule_sentence(figure(racy), COVERS)
    assert said.endswith("The hazard check flags RAW on S at k=0 between L11 for i in "
                         "T.Parallel(N): acc[i] += S[i] and L13 T.copy(A[…], S): their "
                         "steady-state boxes are outlined."), said


def test_a_warp_specialised_figure_outlines_the_statements_chips(
        racy90: dict[str, Any]) -> None:
    """On Hopper the sum's chip (consumer) and the TMA copy's (producer) are outlined in
    every drawn iteration; the words say it, in SVG, TikZ and the sentence."""
    fig = figure(racy90)
    assert fig["kind"] == "warp_specialized"
    assert [(m["kind"], m["buffer"]) for m in fig["hazards"]] == [("WAR", "S")]
    drawing = schedule_drawing(fig, COVERS, "html", "racy90")
    svg = to_svg(drawing)
    columns = len(re.findall(r'class="fg" text-anchor="middle" font-weight="bold">k = ', svg))
    assert columns >= 2 and len(outlines(svg)) == 2 * columns + 1, svg
    assert "class=\"hazardfill\">WAR\u00a0on\u00a0S\u00a0at\u00a0k=1: a race" in svg
    tikz = to_tikz(schedule_drawing(fig, COVERS, "print", "racy90"), lambda t: t)
    assert len(re.findall(r"\\draw\[tlhazard, line width=1\.5pt", tikz)) == 2 * columns + 1
    assert schedule_sentence(fig, COVERS).endswith(
        "The hazard check flags WAR on S at k=1 between L11 for i in T.Parallel(N): acc[i] "
        "+= S[i] and L13 T.copy(A[k + 1, :], S): their boxes are outlined.")
    clean = {**racy90, "hazards": {**racy90["hazards"], "verdict": "none", "findings": []}}
    assert "hazard" not in to_svg(schedule_drawing(figure(clean), COVERS, "html", "racy90"))


def test_a_clean_variant_draws_no_mark(twin: dict[str, Any]) -> None:
    assert twin["hazards"]["verdict"] == "none"
    fig = figure(twin)
    assert "hazards" not in fig
    svg = to_svg(schedule_drawing(fig, COVERS, "html", "twin"))
    assert "hazard" not in svg and "hazard" not in schedule_sentence(fig, COVERS)
    assert "hazard" not in to_tikz(schedule_drawing(fig, COVERS, "print", "twin"),
                                   lambda t: t)


def test_a_finding_not_on_the_figure_draws_nothing(racy: dict[str, Any]) -> None:
    """A statement at a line the figure draws with other text, statements all at lines
    it does not draw, or none at all: no mark, and the figure is byte for byte the one
    drawn without the finding. One statement off the figure's lines (before the loop) is
    named by its line beside the other's outline."""
    unflagged = {**racy, "hazards": {**racy["hazards"], "verdict": "none", "findings": []}}
    clean = to_svg(schedule_drawing(figure(unflagged), COVERS, "html", "racy"))
    for changes in ([{}, {"text": "T.copy(A[k, :], S)"}], [{"line": 98}, {"line": 99}]):
        moved = json.loads(json.dumps(racy))
        for statement, change in zip(moved["hazards"]["findings"][0]["statements"],
                                     changes, strict=True):
            statement.update(change)
        assert "hazards" not in figure(moved)
        assert to_svg(schedule_drawing(figure(moved), COVERS, "html", "racy")) == clean
    bare = json.loads(json.dumps(racy))
    bare["hazards"]["findings"][0]["statements"] = []
    assert "hazards" not in figure(bare)
    before = json.loads(json.dumps(racy))
    before["hazards"]["findings"][0]["statements"][1].update(line=99)
    mark = figure(before)["hazards"][0]
    assert len(mark["stmts"]) == 1 and mark["others"][0]["line"] == 99, mark


def test_a_built_page_marks_the_flagged_directive_only(
        tmp_path_factory: pytest.TempPathFactory, shared_cache: Path) -> None:
    """In HTML the racy directive's figure has the outlines and names its statements by
    their lines in the page; its twin's figure has none; the text builder says it."""
    page = ("Marks\n=====\n\n"
            + rst(ROLLING_SUM, num_stages="2", params="N=512 K=16", name="racy",
                  expect_hazard="2: RAW on S")
            + "\n" + rst(FETCH_FIRST, num_stages="2", params="N=512 K=16", name="twin"))
    src = tmp_path_factory.mktemp("marks")
    html = build_once(src / "html", {"index.rst": page})
    assert "WARNING" not in html.warnings, html.warnings
    figures = re.findall(r"<svg .*?</svg>", html.html(), re.S)
    assert len(figures) == 2
    racy_svg, twin_svg = figures
    if "hazard" not in racy_svg and "cp_async_wait" in html.html():
        pytest.skip("a TileLang that fixed #2668")
    assert len(outlines(racy_svg)) == 3 and "hazard" not in twin_svg
    lines = page.splitlines()
    read = next(n for n, text in enumerate(lines, 1) if "acc[i] += S[i]" in text) - 1
    copy = next(n for n, text in enumerate(lines, 1) if "T.copy(A[k + 1, :], S)" in text)
    assert (f"RAW on S at k=0 between L{read} for i in T.Parallel(N): acc[i] += S[i] and "
            f"L{copy} T.copy(A[…], S)") in racy_svg
    text = build_once(src / "text", {"index.rst": page}, "text")
    said = (text.outdir / "index.txt").read_text(encoding="utf-8")
    assert " ".join(said.split()).count("The hazard check flags RAW on S at k=0") == 1


@pytest.mark.parametrize("which", ["racy", "twin"])
def test_part_names_do_not_overlap_and_fit(which: str, request: pytest.FixtureRequest) -> None:
    """The prologue of these loops begins with a step that draws nothing: its name must
    still keep the steady state's name clear of it, and the epilogue's name must fit."""
    from sphinx_tlstages.core.figures.cp_async import _name_width

    figures, _ = schedule_figures(request.getfixturevalue(which))
    svg = to_svg(schedule_drawing(figures[0], COVERS))
    width = float(re.search(r'viewBox="0 0 ([\d.]+) ', svg).group(1))  # type: ignore[union-attr]
    names = [(float(x), text) for x, text in re.findall(
        r'<text x="([\d.]+)" y="40" class="fg" font-weight="bold">([^<]+)</text>', svg)]
    assert [text.split(" ")[0] for _, text in names] == ["prologue", "steady", "epilogue"]
    for (x, text), (after, _) in itertools.pairwise(names):
        assert x + _name_width(text) <= after, (text, x, after)
    last_x, last = names[-1]
    assert last_x + _name_width(last) <= width


def test_the_ring_sentence_names_a_buffer_without_versions(racy90: dict[str, Any]) -> None:
    """#2668's ring has one buffer version: the sentence still names the buffer it loads."""
    assert "TMA-loads S into ring slot" in schedule_sentence(figure(racy90), COVERS)


RMS_NORM = read("hazards/rms_norm.py")


@pytest.fixture(scope="module")
def workspace_race(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """RMSNorm's second pass, whose weight tile TileLang places on the bytes of the
    reduction's workspace: the prologue's cp.async into W_shared follows the reduction's
    last read of its workspace with no barrier between."""
    kernel = tmp_path_factory.mktemp("rms") / "kernel.py"
    kernel.write_text(RMS_NORM)
    done = subprocess.run([sys.executable, "-m", "sphinx_tlstages", "lower", str(kernel),
                           "--params", "M=256", "N=4096", "block_N=256", "--num-stages", "2",
                           "--json"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)["2"]
    return result


def test_a_race_with_a_statements_scratch_is_said_at_both_statements(
        workspace_race: dict[str, Any]) -> None:
    """The finding names the two accesses that race at their own kernel lines (the
    reduction, whose workspace is TileLang's, and the second loop's copy of the weight
    tile), says that the workspace lies on W_shared's bytes, and names no index of
    TileLang's own code; the second loop's figure outlines the copy and names the
    reduction by its line."""
    hazards = workspace_race["hazards"]
    if hazards["verdict"] != "hazard":  # a TileLang that barriers after the reduction
        pytest.skip(f"not flagged: {hazards['text']}")
    finding = hazards["findings"][0]
    assert (finding["kind"], finding["buffer"]) == ("WAR", "W_shared"), finding
    lines = RMS_NORM.splitlines()
    said = {(s["text"], s["line"]) for s in finding["statements"]}
    reduce_line = next(n for n, t in enumerate(lines, 1) if "T.reduce_sum" in t)
    copy_line = next(n for n, t in enumerate(lines, 1) if "T.copy(W[" in t)
    assert said == {("T.reduce_sum(squares, total, dim=1)", reduce_line),
                    ("T.copy(W[k * block_N], W_shared)", copy_line)}, said
    assert all(s["cuda_lines"] for s in finding["statements"]), finding
    assert "TileLang's reduction (tl::AllReduce) read from its workspace, which lies on " \
           "W_shared's bytes" in finding["text"], finding
    assert not re.search(r"\bat [a-z_]+=\d", finding["text"]), finding  # no TileLang index
    # Both accesses lie outside the kernel's loops: each is placed by the loop it precedes
    # (two loops over k: the second), never "outside the pipelined loop" beside a line
    # inside one.
    assert finding["text"].count("before the second loop over k") == 2, finding
    figures, note = schedule_figures(workspace_race)  # type: ignore[arg-type]
    assert note is None, note
    marked = [fig for fig in figures if fig.get("hazards")]
    assert len(marked) == 1, figures
    mark = marked[0]["hazards"][0]
    assert [marked[0]["statements"][i]["text"] for i in mark["stmts"]] == [
        "T.copy(W[k * block_N], W_shared)"]
    assert mark["others"] == [{"text": "T.reduce_sum(squares, total, dim=1)",
                               "line": reduce_line}]
    sentence = schedule_sentence(marked[0], COVERS)
    assert f"and T.reduce_sum(squares, total, dim=1) (line {reduce_line})" in sentence
