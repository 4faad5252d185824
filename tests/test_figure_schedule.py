"""The schedule figure against the code: for the seed GEMM (the book's kernels/gemm.py,
num_stages 1-4, sm_80, lowered for real), the figure's prologue, steady state and
epilogue, and its commits and waits, are those of the generated loop, read three ways:
the figure's own content, the final device IR (checked by the worker on every lowering)
and the CUDA text (read here by brace matching, an independent witness)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from sphinx_tlstages.core.figures.lanes import drawn_schedule
from sphinx_tlstages.core.figures.model import schedule_figures
from sphinx_tlstages.core.results.result import Result
from sphinx_tlstages.ext.collector import all_directives
from sphinx_tlstages.ext.state import build_state

from .conftest import build_once
from .test_seed_gemm import PAGE

_CUDA_SYNC = re.compile(r"tl::cp_async_commit\(\)|tl::cp_async_wait<(\d+)>\(\)")


def cuda_loop(cuda: str, var: str) -> dict[str, Any]:
    """Commits and waits (``C``, ``W2``) before, in and after the kernel's ``for (int var
    = 0; var < N; ...)`` loop, and N, read off the CUDA text."""
    head = re.search(rf"for \(int {var} = 0; {var} < (\d+);", cuda)
    assert head is not None, "no pipelined loop in the CUDA"
    start = cuda.index("{", head.end())
    depth, end = 0, start
    for end in range(start, len(cuda)):
        depth += {"{": 1, "}": -1}.get(cuda[end], 0)
        if depth == 0:
            break
    kernel = cuda.rfind("__global__", 0, head.start())

    def marks(text: str) -> list[str]:
        return ["C" if m.group(1) is None else f"W{m.group(1)}"
                for m in _CUDA_SYNC.finditer(text)]

    return {"extent": int(head.group(1)), "before": marks(cuda[kernel:head.start()]),
            "body": marks(cuda[start:end]), "after": marks(cuda[end:])}


def marks(steps: list[list[dict[str, Any]]]) -> list[str]:
    return [s["sync"] for step in steps for s in step if "sync" in s]


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory, shared_cache: Path) -> dict[int, Result]:
    # The seed GEMM page of test_seed_gemm: the same lowerings, taken from the cache.
    built = build_once(tmp_path_factory.mktemp("figure-ir") / "src", {"index.rst": PAGE})
    state = build_state(built.app)
    assert state is not None
    (spec,) = all_directives(built.app.env)
    return {v.num_stages: state.result(v) for v in spec.variants}


@pytest.mark.parametrize("stages", [1, 2, 3, 4])
def test_figure_is_the_generated_loop(results: dict[int, Result], stages: int) -> None:
    result = results[stages]
    schedule = result["schedule"]
    assert schedule["problems"] == []  # the worker's own check against the final IR
    (fig,), note = schedule_figures(result)
    assert note is None
    drawn = drawn_schedule(fig)
    cuda = cuda_loop(result["cuda"], "ko")
    (final,) = schedule["generated"]
    # The steady state repeats as often as the generated loop runs, with its marks.
    assert drawn["repeat"] == cuda["extent"] == final["extent"]
    assert marks(drawn["body"]) == cuda["body"]
    # The prologue: one step per commit group issued before the loop, marks as there.
    assert marks(drawn["prologue"]) == cuda["before"]
    assert len(drawn["prologue"]) == cuda["before"].count("C")
    # The epilogue: one step per wait after the loop, with the same N in the same order.
    assert marks(drawn["epilogue"]) == cuda["after"]
    assert len(drawn["epilogue"]) == sum(m.startswith("W") for m in cuda["after"])
    # And the waits are the summary's (the counts read off the CUDA for the tables).
    waits = [int(m[1:]) for m in marks(drawn["body"]) + marks(drawn["epilogue"])
             if m.startswith("W")]
    assert waits == result["sync"]["cp_async_wait"]


@pytest.mark.parametrize("stages", [1, 2, 3, 4])
def test_what_the_book_says_about_the_schedule(results: dict[int, Result],
                                               stages: int) -> None:
    (fig,), _ = schedule_figures(results[stages])
    drawn = drawn_schedule(fig)
    depth = max(stages - 1, 1)
    assert len(drawn["prologue"]) == len(drawn["epilogue"]) == depth
    assert drawn["repeat"] == 16 - depth  # K / block_K = 16 tiles
    waits = [m for m in marks(drawn["body"]) + marks(drawn["epilogue"]) if m[0] == "W"]
    tiles = [s["tile"] for s in drawn["body"][0] if "tile" in s]
    if stages == 1:
        # The special schedule: the gemm of tile k first, then the copies of tile k+1,
        # into the one buffer there is.
        assert waits == ["W0", "W0"]
        assert tiles == ["ko", "ko+1", "ko+1"]
        assert fig["version_dims"] == {}
    else:
        assert waits == [f"W{n}" for n in range(stages - 1, -1, -1)]
        assert tiles == [f"ko+{stages - 1}", f"ko+{stages - 1}", "ko"]
        # The copy of tile k+S-1 writes the version the gemm of tile k-1 read.
        versions = [s["version"] for s in drawn["body"][0] if "tile" in s]
        assert versions == [stages - 1, stages - 1, 0]
        assert fig["version_dims"] == {"A_shared": stages, "B_shared": stages}
    # Lanes in the order the compiler emits the statements, named by their source (the
    # kernel's own line numbers here; the page numbers them as its listing does).
    copies = ["L18 copy(A[…], A_shared)", "L19 copy(B[…], B_shared)"]
    gemm = "L20 gemm(A_shared, B_sh…"
    assert drawn["lanes"] == ([gemm, *copies] if stages == 1 else [*copies, gemm])


def test_page_figures_say_the_same(tmp_path_factory: pytest.TempPathFactory,
                                   results: dict[int, Result]) -> None:
    built = build_once(tmp_path_factory.mktemp("figure-page") / "src", {"index.rst": PAGE})
    part = built.part("tl-figures")
    figures = part.iter("div", cls="tl-figure")
    assert len(figures) == 4  # four distinct schedules
    descs = [f.iter("desc")[0].astext() for f in figures]
    assert "Epilogue step 2: wait<0>, T.gemm(A_shared, B_shared, C_local, transpose_B=True) " \
           "on tile n−1 (version 0)." in descs[2]
    assert descs[2].startswith("Software pipeline of a 3-statement loop over n = 16 tiles, "
                               "num_stages = 3;")
