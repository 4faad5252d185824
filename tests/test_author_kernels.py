"""Kernels as their authors wrote them in other repositories' styles, lowered for real:
factories behind an import guard or wrapped by assignment, depths computed from the
factory's arguments or fixed in the loop."""

from __future__ import annotations

import itertools
import re

import pytest

from .kernels import GEMM, GEMM_PARAMS, read, rst

HEAD = "Kernels\n=======\n\n"

# Optional kernels behind an import guard, as a package that runs without TileLang does.
GUARDED = ("try:\n    import tilelang\n    import tilelang.language as T\n"
           "    HAS_TILELANG = True\nexcept ImportError:\n    HAS_TILELANG = False\n\n"
           "if HAS_TILELANG:\n" + "\n".join(("    " + line).rstrip()
                                             for line in GEMM.splitlines()) + "\n")
# Wrapped by assignment rather than decorated.
WRAPPED = GEMM.replace("@tilelang.jit\ndef matmul(", "def _matmul(").replace(
    "return kernel", "return kernel\n\n\nmatmul = tilelang.jit(_matmul)")
# The depth computed from the factory's own arguments.
COMPUTED = GEMM.replace(", num_stages, threads):", ", threads, inplace=False):").replace(
    '    dtype = "float16"\n',
    '    dtype = "float16"\n    num_stages = 0 if inplace else 2\n')


# A two-pass online softmax: the first T.Pipelined loop finds each row's maximum and sum,
# the second writes the normalised tile; each loop has a shared tile of its own.
SOFTMAX = read("author/softmax.py")
SOFTMAX_PARAMS = "M=256 N=1024 block_M=16 block_N=128"


# Loads in a @T.macro the pipelined loop calls.
MACRO_GEMM = read("author/macro_gemm.py")
# A backward-attention piece: 4-D tensors, a runtime condition in the loop, two gemms.
ATTENTION = read("author/attention_4d.py")


def _line(page: str, text: str, after: str = "") -> int:
    """The document line (from 1) of the first line holding ``text`` after ``after``."""
    lines = page.splitlines()
    start = next(i for i, line in enumerate(lines) if after in line) if after else 0
    return next(i for i, line in enumerate(lines) if i >= start and text in line) + 1


@pytest.mark.smoke  # both ends of the supported ranges
def test_factories_load_where_python_binds_them(build) -> None:
    page = HEAD + rst(GUARDED, "Guarded", num_stages="2", params=GEMM_PARAMS,
                      name="guarded") + "\n" + rst(WRAPPED, "Wrapped", num_stages="2",
                                                   params=GEMM_PARAMS, name="wrapped") \
        + "\n" + rst(GUARDED, "Misnamed", num_stages="2", params=GEMM_PARAMS,
                     factory="gemm", name="misnamed")
    result = build({"index.rst": page})
    for index in (0, 1):
        shared = result.table("tl-shared", index=index)
        assert shared[1] == ["A_shared", "(2, 128, 64) float16, 32,768 B"]
    # The kernel's own lines, under the guard's indentation.
    rows = result.table("tl-annotations", index=0)
    assert rows[1][1] == str(_line(page, "T.copy(A[by", "Guarded"))
    # A name not bound: what was looked for and found, at the document line.
    assert f"index.rst:{_line(page, '.. tl-pipeline:: Misnamed')}: WARNING: no function " \
           "'gemm' bound at the kernel's top level (looked for a def or an assignment such " \
           "as gemm = tilelang.jit(...), under a top-level if/try/with too); found: matmul " \
           "(line 10, jit) [tlstages.source]" in result.warnings
    assert result.warnings.count("WARNING") == 1


def test_a_guard_false_where_it_lowers_says_so(build) -> None:
    off = GUARDED.replace("    HAS_TILELANG = True", "    HAS_TILELANG = False")
    page = HEAD + rst(off, "Off", num_stages="2", params=GEMM_PARAMS, name="off")
    result = build({"index.rst": page})
    assert "the kernel ran but bound no 'matmul': its definition (line 10), under " \
           "`if HAS_TILELANG:` (line 8), was not executed; the module binds no function" \
        in result.warnings


@pytest.mark.smoke  # both ends of the supported ranges
def test_a_computed_depth_lowers_as_written(build) -> None:
    page = HEAD + rst(COMPUTED, "Computed", params=GEMM_PARAMS, name="computed") + "\n" \
        + rst(COMPUTED, "Asked", num_stages="2 4", params=GEMM_PARAMS + " inplace=True",
              name="asked") + "\n" \
        + rst(COMPUTED, "Swept", sweep="inplace=False,True", params=GEMM_PARAMS,
              name="swept")
    result = build({"index.rst": page})
    # Its arguments' depth (2 by default), one variant, as written.
    assert result.table("tl-shared", index=0)[:2] == [
        ["buffer", "num_stages=2 (as written)"],
        ["A_shared", "(2, 128, 64) float16, 32,768 B"]]
    note = result.part("tl-as-written").astext()
    assert note.startswith("The kernel computes its pipeline depth from its arguments "
                           "(num_stages = 0 if inplace else 2 with inplace=False (2), line ")
    # Asked for other depths: a warning at the option's line naming the expression, and
    # the depth the arguments give (inplace=True: 0, no pipelining).
    asked = _line(page, ":num-stages: 2 4", "Asked")
    assert f"index.rst:{asked}: WARNING: :num-stages: matmul computes its pipeline depth " \
           "(num_stages = 0 if inplace else 2 with inplace=True (0), line " in result.warnings
    assert "so it lowers as written, with num_stages=0 only, not 2 4: drop :num-stages:" \
        in result.warnings
    assert result.table("tl-shared", index=1)[1] == ["A_shared",
                                                      "(128, 64) float16, 16,384 B"]
    # A swept argument the depth reads changes it, column by column.
    assert result.table("tl-shared", index=2)[0] == [
        "buffer", "inplace=False, num_stages=2 (as written)",
        "inplace=True, num_stages=0 (as written)"]
    assert result.warnings.count("WARNING") == 1


@pytest.mark.smoke  # both ends of the supported ranges
def test_two_pipelined_loops_each_statement_on_its_line(build) -> None:
    page = HEAD + rst(SOFTMAX, "Softmax", num_stages="2", target="sm_80 sm_90a",
                      params=SOFTMAX_PARAMS, name="softmax")
    result = build({"index.rst": page})
    assert result.warnings == ""
    rows = {row[0]: row[1:] for row in result.table("tl-annotations")}
    second = _line(page, "T.copy(X[bx * block_M, k * block_N], X_s2)")
    first = _line(page, "T.copy(X[bx * block_M, k * block_N], X_s)")
    # Every statement of both loops on its kernel line, in the kernel's spelling: the
    # second loop software-pipelined on both targets, the first warp-specialised on sm_90a.
    assert rows["T.copy(X[bx * block_M, k * block_N], X_s2)"] == [
        str(second), "stage 0, order 1", "stage 0, order 1"]
    assert rows["T.copy(X_s2, tile)"][2:] == ["stage 2, order 0"]
    assert rows["T.copy(X[bx * block_M, k * block_N], X_s)"][0] == str(first)
    assert rows["T.copy(X[bx * block_M, k * block_N], X_s)"][2] == "producer"
    assert rows["T.copy(X_s, tile)"][2] == "consumer"
    assert not any("T.region" in key for key in rows)
    assert all(row[0] for key, row in rows.items()
               if not key.startswith(("inserted", "producer", "barrier")))
    # The ring names the one buffer that travels through it.
    html = result.html()
    assert "X_s/X_s2" not in html and "TMA load into X_s[0]" in html
    # The summary names each loop by its line and says which TileLang split.
    summary = {row[0]: row[1] for row in result.table("tl-summary")}
    loop1, loop2 = first - 1, second - 1
    assert summary["sm_80, num_stages=2"] == (f"line {loop1}: pipelined, depth 2; "
                                              f"line {loop2}: pipelined, depth 2")
    assert summary["sm_90a, num_stages=2"] == (
        f"line {loop1}: warp-specialised, 2 slots, 4 barriers; line {loop2}: pipelined, "
        "depth 2")
    assert result.part("tl-loop-split").astext() == (
        f"sm_90a, num_stages=2: TileLang warp-specialised the loop at line {loop1} "
        "(producer and consumer warps, a barrier ring) and software-pipelined the loop at "
        f"line {loop2} inside the consumer warps, as cp.async copies; TileLang gives no "
        "reason for the choice in its IR or its log.")
    # Counts say what they count, in agreement.
    copies = {row[0]: row[5] for row in result.table("tl-summary")}
    # The first loop's TMA copy and the second loop's cp.async copies, both counted.
    assert copies["sm_90a, num_stages=2"] == "1 TMA load call, 3 cp.async calls"
    # Each loop has its own figure, headed by its line where a variant has several.
    assert f"sm_80, num_stages=2, line {second - 1}" in html  # the T.Pipelined lines
    assert f"sm_90a, num_stages=2, line {first - 1}" in html
    assert f"sm_90a, num_stages=2, line {second - 1}" in html


def test_macro_loads_and_4d_tensors_on_their_lines(build) -> None:
    page = HEAD + rst(MACRO_GEMM, "Macro", num_stages="2", target="sm_80 sm_90a",
                      params="M=512 N=512 K=512 block_M=64 block_N=64 block_K=32",
                      name="macro") + "\n" \
        + rst(ATTENTION, "Attention", num_stages="2", target="sm_80 sm_90a",
              params="batch=1 seq=256 heads=8 dim=64 block=64", name="attention")
    result = build({"index.rst": page})
    assert result.warnings == ""
    rows = {row[0]: row[1:] for row in result.table("tl-annotations", index=0)}
    # Each copy the macro makes on the macro's own line, its stage on sm_80 and its warp
    # group on sm_90a; the call site is not a row of its own.
    a_copy = rows["T.copy(A[row * block_M, k * block_K], A_s)"]
    assert a_copy == [str(_line(page, "T.copy(A[row * block_M")), "stage 0, order 0",
                      "producer"]
    assert rows["T.copy(B[col * block_N, k * block_K], B_s)"][1:] == ["stage 0, order 1",
                                                                      "producer"]
    assert not any(key.startswith("load_tiles(") for key in rows)
    attention = {row[0]: row[1:] for row in result.table("tl-annotations", index=1)}
    for text in ("T.copy(Q[bz, i_k * block, by, 0], q_s)",
                 "T.copy(dO[bz, i_k * block, by, 0], s_do)", "T.gemm(acc_h, s_do, dk)"):
        assert attention[text][0] == str(_line(page, text)), text
        assert attention[text][1].startswith("stage "), text
        assert attention[text][2] in ("producer", "consumer"), text
    condition = next(key for key in attention if key.startswith("if by // 4 == by % 4:"))
    assert attention[condition][1].startswith("stage ")
    assert not any("T.region" in key or "no kernel line" in key for key in attention)


@pytest.mark.smoke  # both ends of the supported ranges
def test_a_depth_the_loop_cannot_reach_is_said(build) -> None:
    """Two iterations (K=64, block_K=32) at depth 4: four slots, two filled."""
    page = HEAD + rst(GEMM, "Two iterations", num_stages="2 4", target="sm_80 sm_90a",
                      params="M=128 N=128 K=64 block_M=128 block_N=128 block_K=32 "
                             "threads=128", name="short")
    result = build({"index.rst": page})
    summary = {row[0]: row[1] for row in result.table("tl-summary")}
    assert summary["sm_80, num_stages=2"] == "pipelined, depth 2"
    assert summary["sm_80, num_stages=4"] == (
        "pipelined, depth 4; the loop runs 2 times: num_stages=4 allocates 4 slots and "
        "fills 2")
    assert summary["sm_90a, num_stages=4"] == (
        "warp-specialised, 4 slots, 8 barriers; the loop runs 2 times: num_stages=4 "
        "allocates 4 slots and fills 2")
    shared = {row[0]: row[1:] for row in result.table("tl-shared")}
    assert shared["A_shared"][1] == "(4, 128, 32) float16, 32,768 B"
    # The words the tables use are said once, under them.
    assert result.part("tl-waits-key").astext().startswith(
        "waits: each tl::cp_async_wait<n>() of the code, in order (per loop, by the line of "
        "its T.Pipelined, where a kernel has several); <n> waits until at most n committed "
        "groups")
    assert result.part("tl-annotations-key").astext().startswith(
        "stage s: the statement runs s iterations after the first statements of its "
        "iteration")
    # On paper too.
    latex = build({"index.rst": page}, buildername="latex")
    tex = " ".join(next(latex.outdir.glob("*.tex")).read_text(encoding="utf-8").split())
    assert "the loop runs 2 times: num\\_stages=4 allocates 4 slots and fills 2" in tex


def _crosses(segment: tuple[float, float, float, float],
             box: tuple[float, float, float, float]) -> bool:
    """Whether an axis-parallel segment runs through the inside of a box."""
    x1, y1, x2, y2 = segment
    left, top, width, height = box
    inside_x = (min(x1, x2) < left + width - 0.5) and (max(x1, x2) > left + 0.5)
    inside_y = (min(y1, y2) < top + height - 0.5) and (max(y1, y2) > top + 0.5)
    return inside_x and inside_y


def test_no_arrow_crosses_a_label_at_any_depth(build) -> None:
    """The warp-specialised figure's arrows run in the gutters and between the bands,
    never over a chip (whose label is its text), from one stage to four."""
    page = HEAD + rst(GEMM, "Hopper", num_stages="1 2 3 4", target="sm_90a",
                      params=GEMM_PARAMS, name="hopper")
    result = build({"index.rst": page})
    svgs = [s for s in re.findall(r"<svg.*?</svg>", result.html(), re.S)
            if "Warp-specialised loop" in s]
    assert len(svgs) == 4
    for svg in svgs:
        chips = [tuple(float(v) for v in m) for m in re.findall(
            r'<rect x="([\d.]+)" y="([\d.]+)" width="([\d.]+)" height="(15)"', svg)]
        arrows = [p for p in re.findall(r'<path d="([^"]+)"[^>]*marker-end', svg)]
        assert chips and len(arrows) >= 2
        for d in arrows:
            points = [tuple(map(float, xy)) for xy in re.findall(r"([\d.]+) ([\d.]+)", d)]
            for (x1, y1), (x2, y2) in itertools.pairwise(points):
                assert not any(_crosses((x1, y1, x2, y2), c) for c in chips), (d, svg[:80])


def test_a_macro_called_twice_gives_a_row_per_call(build) -> None:
    """One copy in a macro, called for A and for B: two statements TileLang pipelined on
    one line, each named by the call it came through, with its own stage and order."""
    page = HEAD + rst(read("author/macro_twice.py"), "Twice", num_stages="1", name="twice",
                      params="M=512 N=512 K=512 block_M=64 block_N=64 block_K=32")
    result = build({"index.rst": page})
    rows = {row[0]: row[1:] for row in result.table("tl-annotations")[1:]}
    copy = _line(page, "T.copy(src[")
    via_a = [k for k in rows if k.endswith("via stage_tile(A, A_s, by, k, block_M, block_K)")]
    via_b = [k for k in rows if k.endswith("via stage_tile(B, B_s, bx, k, block_N, block_K)")]
    assert len(via_a) == len(via_b) == 1
    assert rows[via_a[0]][0] == rows[via_b[0]][0] == str(copy)
    # Both copies issue in stage 0, each at its own place in the iteration.
    assert {rows[via_a[0]][1], rows[via_b[0]][1]} == {"stage 0, order 1", "stage 0, order 2"}
