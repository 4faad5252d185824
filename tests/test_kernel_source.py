"""Finding the factory and the pipelined statements from the kernel text alone."""

from __future__ import annotations

import pytest

from sphinx_tlstages.core.errors import SourceError
from sphinx_tlstages.core.kernel.source import (
    check_params,
    choose_factory,
    find_factories,
    normalise_source,
    parse_kernel,
)
from sphinx_tlstages.core.kernel.statements import pipelined_loops

from .kernels import GEMM, GEMM_AUTOTUNE, GEMM_PLAIN


def factories(source: str) -> list:
    return find_factories(parse_kernel(source, "kernel.py"))


@pytest.mark.parametrize(("source", "kind"), [(GEMM, "jit"), (GEMM_AUTOTUNE, "autotune"),
                                               (GEMM_PLAIN, "plain")])
def test_each_factory_style_is_found(source: str, kind: str) -> None:
    chosen = choose_factory(factories(source), None)
    assert (chosen.name, chosen.kind) == ("matmul", kind)


def test_decorated_factories_win_over_plain_helpers() -> None:
    source = "def helper(num_stages):\n    return num_stages\n\n" + GEMM
    assert choose_factory(factories(source), None).name == "matmul"


def test_several_candidates_are_named() -> None:
    source = GEMM + "\n" + GEMM.replace("def matmul", "def other")
    with pytest.raises(SourceError, match=r"several kernel factories: matmul \(line 2\), "
                                          r"other \(line \d+\); choose one with :factory:"):
        choose_factory(factories(source), None)
    assert choose_factory(factories(source), "other").name == "other"


def test_no_factory_lists_what_was_found() -> None:
    with pytest.raises(SourceError, match=r"no kernel factory.*found: helper \(line 1, plain\)"):
        choose_factory(factories("def helper(x):\n    return x\n"), None)


def test_factory_without_num_stages() -> None:
    source = "@tilelang.jit\ndef f(M, N):\n    return M\n"
    with pytest.raises(SourceError, match="has no num_stages parameter") as info:
        choose_factory(factories(source), None)
    assert info.value.line == 2
    assert "T.Pipelined" not in str(info.value)


FIXED = GEMM.replace(", num_stages, threads", ", threads")


@pytest.mark.parametrize(("loop", "before", "depth", "said"), [
    ("num_stages=3", "", 3, "num_stages=3"),
    ("3", "", 3, "num_stages=3"),  # T.Pipelined(0, n, 3)
    ("num_stages=DEPTH", "DEPTH = 2\n", 2, "num_stages=DEPTH (2)"),  # a module constant
    ("", "", 0, "no num_stages, TileLang's default 0"),
])
def test_a_depth_written_in_the_kernel_is_read(loop: str, before: str, depth: int,
                                               said: str) -> None:
    """A factory whose loop sets its own depth, as many published kernels do, lowers as
    written: the depth, and the line that says it, come from the text."""
    pipelined = "T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages)"
    call = f"T.Pipelined(T.ceildiv(K, block_K), {loop})" if loop != "3" \
        else "T.Pipelined(0, T.ceildiv(K, block_K), 3)"
    source = before + FIXED.replace(pipelined, call.replace(", )", ")"))
    factory = choose_factory(factories(source), None)
    assert factory.depth is not None
    assert (factory.depth.param, factory.depth.written, factory.depth.described) == \
        (None, depth, said)
    assert source.splitlines()[factory.depth.line - 1].lstrip().startswith("for ko in")


def test_a_depth_bound_in_the_factory_body_is_read() -> None:
    source = FIXED.replace("num_stages=num_stages", "num_stages=stages").replace(
        "    @T.prim_func", "    stages = 4\n\n    @T.prim_func")
    factory = choose_factory(factories(source), None)
    assert factory.depth is not None and (factory.depth.param, factory.depth.written) == \
        (None, 4)


def test_a_depth_parameter_by_another_name_takes_num_stages() -> None:
    source = GEMM.replace(", num_stages, threads", ", stages, threads").replace(
        "num_stages=num_stages", "num_stages=stages")
    factory = choose_factory(factories(source), None)
    assert factory.depth is not None and factory.depth.param == "stages"
    with pytest.raises(SourceError, match="stages comes from :num-stages:"):
        check_params(factory, {"stages": 2})
    check_params(factory, {k: 1 for k in ("M", "N", "K", "block_M", "block_N", "block_K",
                                          "threads")})  # stages is not missing


@pytest.mark.parametrize("bound", ["stages = 2 if DEBUG else 3\n    ",
                                   "stages = 2\n    stages = 3\n    "])
def test_a_depth_that_cannot_be_read_is_refused_with_a_hint(bound: str) -> None:
    source = FIXED.replace("num_stages=num_stages", "num_stages=stages").replace(
        "    @T.prim_func", f"    {bound}@T.prim_func")
    with pytest.raises(SourceError, match=r"has no num_stages parameter .*; its T.Pipelined "
                       r"loop \(line \d+\) takes num_stages=stages, which is neither a "
                       r"parameter, a number, nor computed from the factory's arguments"):
        choose_factory(factories(source), None)


LOOP = "T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages)"


@pytest.mark.parametrize(("change", "problem"), [
    # A module constant the factory rebinds, or one bound twice: not one value.
    (lambda src: "DEPTH = 2\n" + src.replace(LOOP, LOOP.replace("=num_stages", "=DEPTH"))
     .replace("    @T.prim_func", "    DEPTH, TILE = 3, 64\n\n    @T.prim_func"),
     "takes num_stages=DEPTH, which is neither a parameter, a number, nor computed from "
     "the factory's arguments"),
    (lambda src: "DEPTH = 2\nif DEBUG:\n    DEPTH = 1\n"
     + src.replace(LOOP, LOOP.replace("=num_stages", "=DEPTH")),
     "takes num_stages=DEPTH, which is neither a parameter, a number, nor computed from "
     "the factory's arguments"),
    # Two loops that read two parameters, or a depth passed through **.
    (lambda src: src.replace(", threads", ", threads, sa, sb").replace(
        LOOP, LOOP.replace("=num_stages", "=sa")).replace(
        "            T.copy(C_local", "            for r in T.Pipelined(4, num_stages=sb):\n"
        "                T.copy(A[r, 0], A_shared)\n            T.copy(C_local"),
     "its T.Pipelined loops read different parameters as their depth: sa (line 17), sb "
     "(line 21)"),
    (lambda src: src.replace(LOOP, "T.Pipelined(T.ceildiv(K, block_K), **cfg)"),
     "its T.Pipelined loop (line 17) takes its arguments through * or **, so its depth "
     "cannot be read"),
])
def test_depths_that_cannot_be_read_are_refused(change, problem: str) -> None:
    source = change(FIXED)
    with pytest.raises(SourceError) as info:
        choose_factory(factories(source), None)
    assert "has no num_stages parameter (its parameters: " in str(info.value)
    assert f"{problem}: give the factory a num_stages parameter" in str(info.value)


def test_loops_that_set_different_depths_lower_as_written() -> None:
    """A split kernel and its combine step, say: the first depth names the variant, and
    every loop's is said."""
    source = FIXED.replace(LOOP, LOOP.replace("=num_stages", "=3")).replace(
        "            T.copy(C_local", "            for r in T.Pipelined(4, num_stages=2):\n"
        "                T.copy(A[r, 0], A_shared)\n            T.copy(C_local")
    depth = choose_factory(factories(source), None).depth
    assert depth is not None and (depth.param, depth.written) == (None, 3)
    assert depth.each == ((17, "num_stages=3"), (21, "num_stages=2"))


def test_a_nested_parameter_hands_the_constant_on() -> None:
    """``num_stages = 1`` in the factory, handed to an inner function's parameter of the
    same name, as some published kernels do."""
    source = ("@tilelang.jit\ndef f(M, block=64):\n    num_stages = 1\n\n"
              "    def make(block, num_stages):\n        @T.prim_func\n"
              "        def main(A: T.Tensor((M,), T.float16)):\n"
              "            with T.Kernel(1, threads=128) as bx:\n"
              "                for i in T.Pipelined(M // block, num_stages=num_stages):\n"
              "                    pass\n\n        return main\n\n"
              "    return make(block, num_stages)\n")
    depth = choose_factory(factories(source), None).depth
    assert depth is not None and (depth.param, depth.written, depth.line) == (None, 1, 9)


def test_a_kwargs_factory_with_a_written_depth_lowers_as_written() -> None:
    source = FIXED.replace(", threads):", ", threads, **options):").replace(
        LOOP, LOOP.replace("=num_stages", "=2"))
    depth = choose_factory(factories(source), None).depth
    assert depth is not None and (depth.param, depth.written) == (None, 2)


def test_a_macro_helper_is_not_taken_for_the_factory() -> None:
    helper = ("@T.macro\ndef load(A, S, k):\n    for i in T.Pipelined(4, num_stages=2):\n"
              "        T.copy(A[i, k], S)\n\n\n")
    source = helper + GEMM_PLAIN
    assert choose_factory(factories(source), None).name == "matmul"


def test_an_eager_const_can_be_the_depth() -> None:
    source = ("@tilelang.jit\ndef f(A, block=64):\n    M, S = T.const(\"M, S\")\n"
              "    A: T.Tensor((M,), T.float16)\n"
              "    with T.Kernel(1, threads=128) as bx:\n"
              "        for i in T.Pipelined(M // block, num_stages=S):\n"
              "            pass\n")
    factory = choose_factory(factories(source), None)
    assert factory.depth is not None and factory.depth.param == "S"


def test_params_are_checked_against_the_signature() -> None:
    factory = choose_factory(factories(GEMM), None)
    with pytest.raises(SourceError, match="takes no parameter block_Q"):
        check_params(factory, {"M": 1, "N": 1, "K": 1, "block_M": 1, "block_N": 1,
                               "block_K": 1, "threads": 1, "block_Q": 2})
    with pytest.raises(SourceError, match="needs :params: for K"):
        check_params(factory, {"M": 1, "N": 1})
    with pytest.raises(SourceError, match="comes from :num-stages:"):
        check_params(factory, {"num_stages": 2})


def test_syntax_error_carries_its_line() -> None:
    with pytest.raises(SourceError) as info:
        parse_kernel("x = 1\ndef broken(:\n", "kernel.py")
    assert info.value.line == 2


def test_pipelined_statements_in_source_order() -> None:
    (loop,) = pipelined_loops(GEMM, "matmul")
    assert [s.text for s in loop] == [
        "T.copy(A[by * block_M, ko * block_K], A_shared)",
        "T.copy(B[bx * block_N, ko * block_K], B_shared)",
        "T.gemm(A_shared, B_shared, C_local, transpose_B=True)",
    ]
    assert [s.line for s in loop] == [18, 19, 20]


def test_normalise_source_ignores_layout_noise() -> None:
    assert normalise_source("    x = 1   \n    y = 2\n\n\n") == "x = 1\ny = 2\n"


# Kernels as files in other repositories bind them: behind an import guard, wrapped by
# assignment, or with the depth computed from the factory's own arguments.
GUARDED = ("try:\n    import tilelang\n    import tilelang.language as T\n"
           "    HAS_TILELANG = True\nexcept ImportError:\n    HAS_TILELANG = False\n\n"
           "if HAS_TILELANG:\n" + "\n".join(("    " + line).rstrip()
                                             for line in GEMM.splitlines()) + "\n")
WRAPPED = GEMM.replace("@tilelang.jit\ndef matmul(", "def _matmul(").replace(
    "return kernel", "return kernel\n\n\nmatmul = tilelang.jit(out_idx=[-1])(_matmul)")


@pytest.mark.parametrize(("source", "line", "kind"), [(GUARDED, 10, "jit"),
                                                       (WRAPPED, None, "jit")])
def test_a_factory_is_found_where_python_binds_it(source: str, line: int | None,
                                                 kind: str) -> None:
    chosen = choose_factory(factories(source), None)
    assert (chosen.name, chosen.kind) == ("matmul", kind)
    # The binding's own line: the def under the guard, the assignment that wraps it.
    where = next(i for i, text in enumerate(source.splitlines(), 1)
                 if "def matmul" in text or text.startswith("matmul ="))
    assert chosen.line == (line or where)
    assert chosen.takes_depth
    assert pipelined_loops(source, "matmul")[0][0].text.startswith("T.copy(A")


def test_a_missing_factory_says_what_was_looked_for_and_found() -> None:
    with pytest.raises(SourceError) as info:
        choose_factory(factories(GUARDED), "gemm")
    assert str(info.value) == (
        "no function 'gemm' bound at the kernel's top level (looked for a def or an "
        "assignment such as gemm = tilelang.jit(...), under a top-level if/try/with too); "
        "found: matmul (line 10, jit)")


COMPUTED = FIXED.replace("num_stages=num_stages", "num_stages=num_stages").replace(
    "    @T.prim_func", "    num_stages = 0 if inplace or K <= block_K else 2\n\n"
                       "    @T.prim_func").replace(", threads):", ", threads, inplace=False):")


def test_a_computed_depth_is_evaluated_for_the_arguments() -> None:
    from sphinx_tlstages.core.plan.variants import depth_of, depths, written_depth

    chosen = choose_factory(factories(COMPUTED), None)
    assert chosen.depth is not None and chosen.depth.param is None
    arguments = {"M": 64, "N": 64, "K": 1024, "block_M": 64, "block_N": 64, "block_K": 64,
                 "threads": 128}
    assert depths(chosen, (1, 2, 3), False, arguments) == ((2,), "")
    stages, unmet = depths(chosen, (1, 3), True, arguments)
    assert stages == (2,)
    assert unmet.startswith(
        "matmul computes its pipeline depth (num_stages = 0 if inplace or K <= block_K "
        "else 2 with inplace=False, K=1024, block_K=64 (2), line 19 of the kernel), so it "
        "lowers as written, with num_stages=2 only, not 1 3: drop :num-stages:")
    depth = depth_of(chosen)
    assert depth is not None and depth({**arguments, "inplace": True}) == 0
    assert depth({**arguments, "K": 64}) == 0
    assert written_depth(chosen, arguments) == (
        (19, "num_stages = 0 if inplace or K <= block_K else 2 with inplace=False, "
             "K=1024, block_K=64 (2)"),)


MACRO = ("@T.macro\ndef load(X, X_s, row, k):\n    T.copy(X[row, k], X_s)\n\n\n"
         "@tilelang.jit\ndef f(M, num_stages):\n    @T.prim_func\n"
         "    def main(A: T.Tensor((M, M), T.float16)):\n"
         "        with T.Kernel(1, threads=128) as bx:\n"
         "            A_s = T.alloc_shared((64, 64), T.float16)\n"
         "            acc = T.alloc_fragment((64, 64), T.float32)\n"
         "            for k in T.Pipelined(M // 64, num_stages=num_stages):\n"
         "                load(A, A_s, bx, k)\n"
         "                T.gemm(A_s, A_s, acc)\n\n    return main\n")


def test_a_macro_call_stands_for_its_statements() -> None:
    from sphinx_tlstages.core.kernel.statements import pipelined

    (loop,) = pipelined(MACRO, "f")
    assert (loop.line, loop.var) == (13, "k")
    copy, gemm = loop.body
    # The macro's own line and text, naming the buffers the call passes.
    assert (copy.text, copy.line, copy.op) == ("T.copy(X[row, k], X_s)", 3, "copy")
    assert {"A", "A_s", "X_s"} <= copy.names
    assert (gemm.line, gemm.op) == (15, "gemm")


def test_ir_statements_align_by_operation_and_buffers() -> None:
    from sphinx_tlstages.core.kernel.statements import pipelined
    from sphinx_tlstages.core.results.loop_match import align, readable, which_loop

    (loop,) = pipelined(MACRO, "f")
    copy = {"op": "tl.tileop.copy", "buffers": ["A", "A_s"]}
    gemm = {"op": "tl.tileop.gemm", "buffers": ["A_s", "acc"]}
    stray = {"op": "tl.tileop.copy", "buffers": ["B", "B_s"]}
    first, second = loop.body
    assert align([copy, gemm], loop.body) == [first, second]
    # A statement the body does not name stays unaligned; the others keep their lines.
    assert align([copy, stray, gemm], loop.body) == [first, None, second]
    # A copy never takes a gemm's line, though they touch the same tile.
    assert align([{"op": "tl.tileop.copy", "buffers": ["A_s", "acc"]}], loop.body) == [None]
    assert readable(stray) == "T.copy(B, B_s)"
    assert which_loop("k", {"A", "A_s"}, [loop], set()) == 0
    assert which_loop("k", {"Z"}, [loop], set()) is None


GUARDED_BODY = ("@T.macro\ndef score(Q_s, K_s, acc):\n    T.gemm(Q_s, K_s, acc)\n\n\n"
                "@tilelang.jit\ndef f(M, causal, num_stages):\n    @T.prim_func\n"
                "    def main(K: T.Tensor((M, 64), T.float16), Mask: T.Tensor((M,), T.int32)):\n"
                "        with T.Kernel(1, threads=128) as bx:\n"
                "            K_s = T.alloc_shared((64, 64), T.float16)\n"
                "            Q_s = T.alloc_shared((64, 64), T.float16)\n"
                "            acc = T.alloc_fragment((64, 64), T.float32)\n"
                "            for k in T.Pipelined(M // 64, num_stages=num_stages):\n"
                "                row = Mask[k]\n"
                "                if Mask[k] >= 0:\n"
                "                    T.copy(K[row * 64, 0], K_s)\n"
                "                    if causal:\n"
                "                        for i, j in T.Parallel(64, 64):\n"
                "                            acc[i, j] = -1\n"
                "                    else:\n"
                "                        T.clear(acc)\n"
                "                    score(Q_s, K_s, acc)\n\n    return main\n")


def test_a_guarded_body_aligns_whole_or_statement_by_statement() -> None:
    """TileLang splits an ``if`` into one guarded statement per statement it holds (and
    keeps its condition's value in a binding of its own where those statements could
    change it), folds a condition known while tracing, or keeps an ``if`` whole: each
    IR statement finds its own kernel line."""
    from sphinx_tlstages.core.kernel.statements import pipelined
    from sphinx_tlstages.core.results.loop_match import align

    (loop,) = pipelined(GUARDED_BODY, "f")
    bind, guard = loop.body
    assert (bind.op, guard.op, [s.line for s in guard.inner]) == ("Assign", "If",
                                                                   [17, 18, 3])
    copy, causal, _gemm = guard.inner
    assert [s.line for s in causal.inner] == [19, 22]
    # Each statement inside names the condition's names too, through nested statements.
    assert {"Mask", "k"} <= copy.names and {"Mask", "causal"} <= causal.inner[1].names
    value = {"op": "Bind", "buffers": ["Mask"], "added": "its condition's value"}
    split = [{"op": "Bind", "buffers": ["Mask"]}, value,
             {"op": "tl.tileop.copy", "buffers": ["Mask", "K", "K_s"], "guarded": True},
             {"op": "tl.tileop.fill", "buffers": ["Mask", "acc"], "guarded": True},
             {"op": "tl.tileop.gemm", "buffers": ["Mask", "Q_s", "K_s", "acc"],
              "guarded": True}]
    # The binding TileLang added belongs to the if; T.clear (a fill) to its else branch,
    # the trace-time condition folded; the macro's gemm to the macro's line.
    assert [s.line if s else None for s in align(split, loop.body)] == [15, 16, 17, 22, 3]
    whole = [{"op": "Bind", "buffers": ["Mask"]},
             {"op": "IfThenElse", "buffers": ["Mask", "K", "K_s", "acc", "Q_s"]}]
    assert [s.line if s else None for s in align(whole, loop.body)] == [15, 16]
