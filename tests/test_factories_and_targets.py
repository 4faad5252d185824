"""Kernels as people write them, on both targets, lowered for real."""

from __future__ import annotations

import pytest

from .kernels import GEMM, GEMM_AUTOTUNE, GEMM_PARAMS, GEMM_PLAIN, read, rst

HEAD = "Kernels\n=======\n\n"


def test_plain_and_autotune_factories_lower_like_jit(build) -> None:
    page = HEAD + "\n".join(
        rst(source, num_stages="3", params=GEMM_PARAMS, name=name)
        for name, source in (("jit", GEMM), ("plain", GEMM_PLAIN), ("tuned", GEMM_AUTOTUNE))
    )
    result = build({"index.rst": page})
    assert result.warnings == ""
    shared = [result.table("tl-shared", index=i) for i in range(3)]
    assert shared[0] == shared[1] == shared[2]
    assert shared[0][1] == ["A_shared", "(3, 128, 64) float16, 49,152 B"]


def test_kernel_pass_configs_apply(build) -> None:
    # TL_DISABLE_WARP_SPECIALIZED turns Hopper's producer/consumer split off; the page must
    # show what the kernel's author compiles, so the split must be gone.
    configured = GEMM.replace(
        "@tilelang.jit\n",
        '@tilelang.jit(pass_configs={"tl.disable_warp_specialized": True})\n')
    page = HEAD + rst(configured, num_stages="3", target="sm_90a", params=GEMM_PARAMS,
                      name="configured") + "\n" + rst(GEMM, num_stages="3", target="sm_90a",
                                                     params=GEMM_PARAMS, name="default")
    result = build({"index.rst": page})
    assert result.warnings == ""
    configured_row = result.table("tl-summary", index=0)[1]
    default_row = result.table("tl-summary", index=1)[1]
    assert default_row[1].startswith("warp-specialised") and default_row[2] == "256"
    assert not configured_row[1].startswith("warp-specialised") and configured_row[2] == "128"


def test_hopper_shows_roles_barriers_and_tma(build) -> None:
    page = HEAD + rst(GEMM, "GEMM on Hopper", num_stages="0 3", target="cuda -arch=sm_90a",
                      params=GEMM_PARAMS, name="hopper")
    result = build({"index.rst": page})
    assert result.warnings == ""
    summary = {row[0]: row for row in result.table("tl-summary")[1:]}
    assert summary["0"][1:3] == ["not pipelined", "128"]
    assert summary["3"][1:3] == ["warp-specialised, 3 slots, 6 barriers", "256"]
    assert summary["3"][5] == "2 TMA load calls"
    roles = {row[0]: row[2:] for row in result.table("tl-annotations")[1:]}
    assert roles["T.copy(A[by * block_M, ko * block_K], A_shared)"] == ["not pipelined", "producer"]
    assert roles["T.gemm(A_shared, B_shared, C_local, transpose_B=True)"][1] == "consumer"
    # The compiler's own barrier waits, one per warp group, and its arrive on "empty".
    assert roles["inserted by the compiler: T.mbarrier_wait_parity (producer)"] == ["—", "producer"]
    assert roles["inserted by the compiler: T.mbarrier_wait_parity (consumer)"] == ["—", "consumer"]
    assert roles["inserted by the compiler: T.ptx_arrive_barrier (consumer)"] == ["—", "consumer"]
    assert roles["producer + consumer threads"] == ["—", "128 + 128"]
    assert roles["barrier ring"] == ["—", "mbarrier (6,), arrivals 1 1 1 128 128 128"]
    sync = {row[0]: row[1:] for row in result.table("tl-sync")}
    assert sync["tl::tma_load"] == ["0", "2"]
    assert sync["mbarrier[i].init()"] == ["0", "6"]
    assert sync["tl::wgmma_ss / _rs"] == ["1", "1"]
    assert "tl::cp_async_gs<N>" not in sync
    shared = {row[0]: row[1:] for row in result.table("tl-shared")}
    assert shared["A_shared"][1] == "(3, 128, 64) float16, 49,152 B"


def test_kernel_from_file_and_its_dependency(build, tmp_path) -> None:
    page = HEAD + f".. tl-pipeline:: From a file\n   :file: kernels/gemm.py\n" \
                  f"   :num-stages: 2\n   :params: {GEMM_PARAMS}\n"
    result = build({"index.rst": page, "kernels/gemm.py": GEMM})
    assert result.warnings == ""
    rows = result.table("tl-annotations")
    assert rows[1][1] == "gemm.py:18"  # a file kernel's lines are the file's own
    dependencies = {str(path) for path in result.app.env.dependencies["index"]}
    assert str(tmp_path / "src" / "kernels" / "gemm.py") in dependencies


def test_file_outside_the_source_dir_is_refused(build, tmp_path) -> None:
    outside = tmp_path / "elsewhere.py"
    outside.write_text(GEMM, encoding="utf-8")
    # As for literalinclude, a relative path is relative to the document.
    page = HEAD + f".. tl-pipeline::\n   :file: ../elsewhere.py\n   :params: {GEMM_PARAMS}\n"
    result = build({"index.rst": page})
    assert "is outside the source directory and tlstages_file_roots [tlstages.option]" \
        in result.warnings
    conf = ('extensions = ["sphinx_tlstages"]\n'
            f'tlstages_file_roots = [{str(tmp_path)!r}]\n')
    allowed = build({"index.rst": page}, conf=conf, freshenv=True)
    assert "tlstages" not in allowed.warnings


def test_missing_kernel_file_is_an_option_error_at_its_line(build) -> None:
    page = HEAD + f".. tl-pipeline::\n   :params: {GEMM_PARAMS}\n   :file: nowhere.py\n"
    result = build({"index.rst": page})
    assert "index.rst:6: WARNING: :file: nowhere.py is not a file (looked for nowhere.py) " \
           "[tlstages.option]" in result.warnings


# The seed GEMM as kernels often come: the depth written into the loop, or handed to it
# under another name.
GEMM_WRITTEN = GEMM.replace(", num_stages, threads", ", threads").replace(
    "num_stages=num_stages", "num_stages=3")
GEMM_STAGES = GEMM.replace(", num_stages, threads", ", stages, threads").replace(
    "num_stages=num_stages", "num_stages=stages")


def test_a_kernel_that_sets_its_depth_lowers_as_written(build) -> None:
    page = HEAD + rst(GEMM_WRITTEN, "As written", params=GEMM_PARAMS, name="written") \
        + "\n" + rst(GEMM_STAGES, "Another name", num_stages="2 3", params=GEMM_PARAMS,
                     name="renamed") \
        + "\n" + rst(GEMM_WRITTEN, "Asked for more", num_stages="2 3",
                     params=GEMM_PARAMS, name="asked") \
        + "\n" + rst(GEMM_WRITTEN, "Expected wrong", expect_error="2",
                     params=GEMM_PARAMS, name="expected") \
        + "\n" + rst(GEMM_WRITTEN, "Swept", sweep="block_K=32,64",
                     params=GEMM_PARAMS.replace(" block_K=64", ""), name="swept")
    result = build({"index.rst": page})
    # The third asks for depths the kernel cannot take: a warning at its :num-stages: line
    # naming the option to drop, and the kernel's own depth on the page.
    lines = page.splitlines()
    asked = lines.index("   :num-stages: 2 3", lines.index(".. tl-pipeline:: Asked for more"))
    loop_line = next(i for i, line in enumerate(GEMM_WRITTEN.splitlines(), 1)
                     if "T.Pipelined" in line)
    assert f"index.rst:{asked + 1}: WARNING: :num-stages: matmul fixes its pipeline depth " \
           f"(num_stages=3, line {loop_line} of the kernel), so it lowers as written, " \
           "with num_stages=3 only, not 2 3: drop :num-stages:, or, to compare depths, give " \
           "matmul a num_stages parameter and pass it to that loop [tlstages.option]" \
        in result.warnings
    asked_shared = result.table("tl-shared", index=2)
    assert asked_shared[0] == ["buffer", "num_stages=3 (as written)"]
    expected = lines.index("   :expect-error: 2", lines.index(".. tl-pipeline:: Expected wrong"))
    assert f"index.rst:{expected + 1}: WARNING: :expect-error: 2 is not the depth the kernel " \
           "fixes (3, as written) (the entry is dropped) [tlstages.option]" in result.warnings
    assert result.warnings.count("WARNING") == 2
    # Swept besides the written depth: one column per block_K, each as written.
    # The entry dropped, the directive above it renders too (as written).
    swept = result.table("tl-shared", index=4)
    assert swept[0] == ["buffer", "block_K=32, num_stages=3 (as written)",
                        "block_K=64, num_stages=3 (as written)"]
    assert swept[1][1:] == ["(3, 128, 32) float16, 24,576 B", "(3, 128, 64) float16, 49,152 B"]
    written = result.table("tl-summary", index=0)
    assert [row[:2] for row in written] == [["num_stages", "schedule"],
                                            ["3", "pipelined, depth 3"]]
    assert result.table("tl-shared", index=0)[0] == ["buffer", "num_stages=3 (as written)"]
    assert result.table("tl-shared", index=0)[1] == [
        "A_shared", "(3, 128, 64) float16, 49,152 B"]
    # The note numbers the loop's line as the kernel listing does: document lines.
    first = lines.index("   " + GEMM_WRITTEN.splitlines()[0]) + 1
    note = result.part("tl-as-written").astext()
    assert note == ("The kernel fixes its pipeline depth (num_stages=3, line "
                    f"{first + loop_line - 1}), so it is lowered as written. To compare "
                    "depths, give matmul a num_stages parameter and pass it to that loop.")
    # Given under the name its loop reads: the depths asked for, as with num_stages.
    renamed = result.table("tl-shared", index=1)
    assert renamed[0] == ["buffer", "num_stages=2", "num_stages=3"]
    assert renamed[1] == ["A_shared", "(2, 128, 64) float16, 32,768 B",
                          "(3, 128, 64) float16, 49,152 B"]
    assert not result.part("tl-pipeline", index=1).iter(cls="tl-as-written")


def test_a_prim_func_named_like_a_device_kernel(build) -> None:
    """Named ``gemm_kernel``, the host function is ``gemm_kernel`` and the device kernel
    ``gemm_kernel_kernel``: the facts read off the device kernel must not mix them up."""
    named = GEMM.replace("def kernel(", "def gemm_kernel(").replace(
        "return kernel", "return gemm_kernel")
    page = HEAD + rst(named, num_stages="2 3", params=GEMM_PARAMS, name="named") + "\n" + \
        rst(GEMM, num_stages="2 3", params=GEMM_PARAMS, name="plain")
    result = build({"index.rst": page})
    assert result.warnings == ""
    named_rows, plain_rows = (result.table("tl-summary", index=i) for i in (0, 1))
    assert named_rows == plain_rows
    assert [row[2:4] for row in named_rows[1:]] == [["128", "65,536 B (39 %)"],
                                                     ["128", "98,304 B (59 %)"]]


def test_an_enum_constant_reaches_the_factory(build) -> None:
    """``policy=T.GemmWarpPolicy.FullRow`` as TileLang's examples pass it: the factory gets
    the enum member, and its gemm lowers with that warp layout."""
    policed = GEMM.replace(", num_stages, threads", ", num_stages, threads, policy").replace(
        "transpose_B=True)", "transpose_B=True, policy=policy)")
    page = HEAD + rst(policed, num_stages="2", name="policed",
                      params=GEMM_PARAMS + " policy=T.GemmWarpPolicy.FullRow")
    result = build({"index.rst": page})
    assert result.warnings == ""
    assert "policy=T.GemmWarpPolicy.FullRow" in result.part("tl-pipeline").astext()
    assert result.table("tl-summary")[1][1:3] == ["pipelined, depth 2", "128"]


def _shimmed(factory: str, target: str, name: str) -> str:
    return (f".. tl-pipeline:: {name}\n   :file: kernels/shimmed_kernels.py\n"
            f"   :factory: {factory}\n   :name: {name}\n   :num-stages: 2\n"
            f"   :target: {target}\n   :params: M=256 N=256 K=256\n")


SHIMMED = {"kernels/shimmed_kernels.py": read("styles/shimmed_kernels.py"),
           "kernels/optional_tilelang.py": read("styles/optional_tilelang.py")}


@pytest.mark.smoke  # both ends of the supported ranges
def test_a_factory_behind_its_authors_decorator_lowers_as_written(build) -> None:
    """The package's own stand-in for ``@tilelang.jit`` compiles for the GPU when called:
    the page reaches TileLang's function through ``__wrapped__`` and lowers it on the
    CPU, with the pass configs the stand-in keeps (warp specialisation off on sm_90a,
    as its author compiles it); a logging decorator over ``@autotune`` over
    ``@tilelang.jit`` likewise; an eager factory behind the stand-in too."""
    page = HEAD + "\n".join([_shimmed("gemm", "sm_90a", "shim"),
                             _shimmed("gemm_tuned", "sm_90a", "tuned"),
                             _shimmed("gemm_eager", "sm_80", "eager")])
    result = build({"index.rst": page, **SHIMMED})
    assert result.warnings == ""
    for index in (0, 1):
        row = result.table("tl-summary", index=index)[1]
        assert row[1] == "pipelined, depth 2" and row[2] == "128", row
    assert result.table("tl-shared", index=2)[1] == ["A_s", "(2, 128, 32) float16, 16,384 B"]
    assert "not applied" not in result.html()


def test_pass_configs_a_decorator_keeps_out_of_reach_are_said(build) -> None:
    """Pass configs the stand-in only makes when the kernel first runs (per GPU): the
    page lowers without them, says so under the summary, and the build warns at the
    directive's line."""
    page = HEAD + _shimmed("gemm_per_device", "sm_90a", "per_device")
    result = build({"index.rst": page, **SHIMMED})
    said = ("the kernel's pass configs device_configs were not applied (the decorator at "
            "{where}): @jit(pass_configs=...) gives a function, not the dict of configs "
            "TileLang applies while lowering; the decorator makes them only when the "
            "kernel runs")
    warned = said.format(where="shimmed_kernels.py:46")
    assert f"index.rst:4: WARNING: per_device: num_stages 2: {warned} [tlstages.unread]" \
        in result.warnings
    assert result.warnings.count("WARNING") == 1
    assert result.part("tl-unapplied-configs").astext() == \
        f"num_stages=2: {said.format(where='shimmed_kernels.py:46')}."
    # Lowered as TileLang does without them: warp-specialised.
    assert result.table("tl-summary")[1][1].startswith("warp-specialised")
