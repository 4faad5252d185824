"""Whatever a pipelined loop's body holds, every part of the page draws it, each
statement on its kernel line: bindings (``x = expr``, one read by another), a condition
around the whole iteration (which TileLang splits into one guarded statement per
statement), a condition kept whole, macros, a copy TileLang adds of its own. Where a part
cannot be drawn, the build warns at the directive and the page says why."""

from __future__ import annotations

import re

import pytest

from .kernels import read, rst

HEAD = "Kernels\n=======\n\n"

# An FP8 GEMM with per-block scales: the B scale is bound to a name inside the loop.
FP8 = read("author/scaled_fp8_gemm.py")
FP8_PARAMS = "M=256 N=256 K=512"
# A gather through a table: bindings (one read by another), macro loads, an if/else.
BINDINGS = read("author/loop_bindings.py")
BINDINGS_PARAMS = "M=256 N=256 K=512 tiles=8"
# Block-sparse attention: the whole iteration under ``if kb >= 0:``, a macro inside it
# with a condition known while tracing.
SPARSE = read("author/block_sparse_attention.py")
SPARSE_PARAMS = "batch=1 heads=2 seq=512 dim=64 blocks_kept=4"
# Chunked linear attention: a masked score tile, a reduction over a shared tile (which
# TileLang reads through a fragment copy of its own), fragment copies.
LINEAR = read("author/chunked_linear_attention.py")


def _line(page: str, text: str) -> int:
    return next(i for i, line in enumerate(page.splitlines(), 1) if text in line)


def _drawn(html: str) -> int:
    """How many schedule figures the page draws."""
    return len(re.findall(r"<svg[^>]*>.*?(?:Pipeline schedule|Warp-specialised loop)",
                          html, re.S))


@pytest.mark.smoke  # both ends of the supported ranges
def test_bindings_in_the_loop_draw_every_part(build) -> None:
    page = HEAD + rst(FP8, "Scaled FP8", num_stages="2 3", target="sm_80 sm_90a",
                      params=FP8_PARAMS, name="fp8") + "\n" \
        + rst(BINDINGS, "Gathered", num_stages="2", target="sm_80 sm_90a",
              params=BINDINGS_PARAMS, name="gathered")
    result = build({"index.rst": page})
    assert result.warnings == ""
    html = result.html()
    assert "could not be read" not in html and "not drawn" not in html
    assert _drawn(html) >= 4
    rows = {row[0]: row[1:] for row in result.table("tl-annotations", index=0)}
    # The scale, bound in the loop: its line, the stage TileLang evaluates it in with the
    # statement that reads it (no stage of its own), and the warp group that reads it.
    scale = rows["b_scale = scale_b[bx * block_N // group, k]"]
    assert scale[0] == str(_line(page, "b_scale = scale_b["))
    assert scale[1:] == ["with its readers: stage 2", "with its readers: stage 3",
                         "consumer", "consumer"]
    # The statements after it keep their own stages (the arrays skip the binding).
    assert rows["T.gemm(A_s, B_s, partial, transpose_B=True, clear_accum=True)"][1] == \
        "stage 2, order 0"
    assert all(row[0] for key, row in rows.items() if not key.startswith(
        ("inserted", "producer", "barrier")))
    assert "with its readers: a name bound to a value that reads nothing the loop writes" \
        in result.part("tl-annotations-key").astext()
    gathered = {row[0]: row[1:] for row in result.table("tl-annotations", index=1)}
    # A binding read by the copies, one read only by the reduction's branch.
    assert gathered["tile = Order[t]"][1] == "with its readers: stage 0"
    assert gathered["w = Weight[t]"][1] == "with its readers: stage 2"
    via_a = next(key for key in gathered
                 if key.endswith("via load_rows(A, A_s, by * block_M, col)"))
    assert gathered[via_a][0] == str(_line(page, "T.copy(src[row, col], dst)"))
    assert gathered[via_a][1:] == ["stage 0, order 1", "producer"]
    branch = next(key for key in gathered if key.startswith("if w > 0:"))
    assert gathered[branch][1:] == ["stage 2, order 3", "consumer"]


@pytest.mark.smoke  # both ends of the supported ranges
def test_a_condition_around_the_whole_iteration_puts_each_statement_on_its_line(build) -> None:
    page = HEAD + rst(SPARSE, "Block-sparse", num_stages="1 2", target="sm_80 sm_90a",
                      params=SPARSE_PARAMS, name="sparse")
    result = build({"index.rst": page})
    assert result.warnings == ""
    rows = {row[0]: row[1:] for row in result.table("tl-annotations")}
    assert not any("no kernel line" in key or "a condition over" in key for key in rows)
    # Each copy, gemm and reduction inside the if on its own line: stages on sm_80, the
    # warp group that runs it on sm_90a (the copies the producer's, under its own copy
    # of the condition; the rest the consumer's).
    for text, group in (("T.copy(K[b, h, kb * block, 0], K_s)", "producer"),
                        ("T.copy(V[b, h, kb * block, 0], V_s)", "producer"),
                        ("T.reduce_max(s, m, dim=1, clear=False)", "consumer"),
                        ("T.gemm(p, V_s, o, policy=T.GemmWarpPolicy.FullRow)", "consumer")):
        assert rows[text][0] == str(_line(page, text)), text
        assert all(cell.startswith("stage ") for cell in rows[text][1:3]), (text, rows[text])
        assert rows[text][3:] == [group, group], (text, rows[text])
    # The macro's statements on the macro's lines: the branch TileLang's trace took.
    assert rows["T.clear(s)"][0] == str(_line(page, "T.clear(s)"))
    assert rows["T.clear(s)"][3:] == ["consumer", "consumer"]
    assert _drawn(result.html()) == 4


def test_a_copy_tilelang_adds_is_named_for_the_statement_that_needs_it(build) -> None:
    page = HEAD + rst(LINEAR, "Chunked", num_stages="2", params="B=1 S=512 H=2 D=64",
                      name="chunked")
    result = build({"index.rst": page})
    assert result.warnings == ""
    part = result.part("tl-annotations")
    rows = {row[0]: row[1:] for row in result.table("tl-annotations")}
    reduce = "T.reduce_sum(s_masked, norm, dim=1)"
    line = str(_line(page, reduce))
    added = f"added by TileLang for {reduce}: T.copy(s_masked, s_masked_frag), on a " \
            "buffer of TileLang's own (s_masked_frag)"
    assert rows[added][0] == rows[reduce][0] == line
    assert rows[added][1].startswith("stage ") and rows[reduce][1].startswith("stage ")
    assert "no kernel line" not in part.astext()
    assert rows["T.copy(state, state_s)"][0] == str(_line(page, "T.copy(state, state_s)"))


def test_a_schedule_the_reader_cannot_read_warns_at_the_directive(build, own_cache) -> None:
    """The reader raising (made to, on a crafted kernel): the variant still lowers and
    its tables stand; the figure says what is missing and why, and the build warns at the
    directive's line with this extension's subtype, so ``-W`` fails."""
    page = HEAD + rst(read("author/unreadable_schedule.py"), "Unreadable",
                      num_stages="2 3", params="M=256 N=256 K=256", name="unreadable")
    result = build({"index.rst": page})
    where = _line(page, ".. tl-pipeline:: Unreadable")
    assert (f"index.rst:{where}: WARNING: unreadable: num_stages 2 3: the schedule figure "
            "is not drawn: the schedule could not be read off the IR (RuntimeError: a "
            "statement of a kind the reader does not know) [tlstages.unread]") \
        in result.warnings
    assert result.warnings.count("WARNING") == 1
    assert result.table("tl-shared")[1][0] == "A_s"  # the other parts stand
    assert result.part("tl-figures").astext() == (
        "Schedule figure num_stages=2, num_stages=3: the schedule could not be read off "
        "the IR (RuntimeError: a statement of a kind the reader does not know), so it is "
        "not drawn.")


def test_a_loop_planned_in_one_stage_says_why_it_is_not_drawn(build) -> None:
    """Every statement in one stage (a copy into a fragment, no asynchronous copy): the
    pipeliner leaves the loop as it was. The page says so, not that something could not
    be read, and the build does not warn."""
    page = HEAD + rst(read("author/split_sums.py"), "Splits", num_stages="2",
                      params="rows=256 dim=64", name="splits")
    result = build({"index.rst": page})
    assert result.warnings == ""
    assert result.part("tl-figures").astext() == (
        "Schedule figure num_stages=2: TileLang planned every statement of the loop in one "
        "stage, so the pipeliner left it as it was: there is no schedule to draw.")
    rows = {row[0]: row[1:] for row in result.table("tl-annotations")}
    assert rows["T.copy(Partial[s, bx * block, 0], part)"] == [
        str(_line(page, "T.copy(Partial[s, bx * block, 0], part)")), "stage 2, order 0"]
