"""Option and target parsing: what authors may write, and the errors they get."""

from __future__ import annotations

import re
from types import SimpleNamespace

import pytest

from sphinx_tlstages.core import parts
from sphinx_tlstages.core.errors import OptionError
from sphinx_tlstages.core.parts import parse_show
from sphinx_tlstages.core.plan.options import (
    Expected,
    parse_expect_error,
    parse_name,
    parse_num_stages,
    parse_params,
)
from sphinx_tlstages.core.plan.spec import DirectiveSpec
from sphinx_tlstages.core.plan.targets import parse_target, parse_targets
from sphinx_tlstages.core.planner import Defaults, Kernel, plan

from .kernels import GEMM, GEMM_PARAMS


@pytest.mark.parametrize(("text", "expected"), [
    ("1 2 3 4", (1, 2, 3, 4)),
    ("3, 1,2", (3, 1, 2)),
    ("0", (0,)),
])
def test_num_stages(text: str, expected: tuple[int, ...]) -> None:
    assert parse_num_stages(text) == expected


@pytest.mark.parametrize(("text", "message"), [
    ("abc", "not a whole number"),
    ("1 -2", "negative"),
    ("2 2", "listed twice"),
    ("", "empty"),
    (" , ", "empty"),
])
def test_num_stages_errors(text: str, message: str) -> None:
    with pytest.raises(OptionError, match=message):
        parse_num_stages(text)


def test_params_are_python_literals() -> None:
    assert parse_params('M=1024 tile=(64, 32) dtype="float16" fast=True') == {
        "M": 1024, "tile": (64, 32), "dtype": "float16", "fast": True,
    }


def test_params_take_tilelang_dtypes_and_enum_constants() -> None:
    params = parse_params("dtype=T.bfloat16 policy=T.GemmWarpPolicy.FullRow")
    assert {k: repr(v) for k, v in params.items()} == {
        "dtype": "T.bfloat16", "policy": "T.GemmWarpPolicy.FullRow"}


@pytest.mark.parametrize(("text", "message"), [
    ("M=", "has no value"),
    ("M=1 M=2", "given twice"),
    ("M=foo", "neither a Python literal nor a TileLang dtype"),
    ("policy=T.gemm_policy.full", "neither a Python literal nor a TileLang dtype"),
    ("policy=numpy.Policy.Full", "neither a Python literal nor a TileLang dtype"),
    ("1024", "KEY=VALUE"),
    ("junk M=1", "KEY=VALUE"),
])
def test_params_errors(text: str, message: str) -> None:
    with pytest.raises(OptionError, match=message):
        parse_params(text)


def test_show_keeps_page_order_and_rejects_unknown() -> None:
    assert parse_show("cuda source") == ("source", "cuda")
    with pytest.raises(OptionError, match="unknown part graph"):
        parse_show("source graph")


@pytest.mark.parametrize(("alias", "word"), [
    ("figures", "figure"), ("schedule", "figure"), ("kernel", "source"),
    ("registers", "resources"), ("diffs", "diff"), ("synchronization", "sync")])
def test_show_reads_an_alias_as_its_part(alias: str, word: str) -> None:
    assert parse_show(f"{alias} gemm") == parse_show(f"{word} gemm")
    assert word in parse_show(alias)


def test_always_shown_parts_may_be_named_and_are_shown_anyway() -> None:
    # The summary and the hazard check are on every page: naming them is accepted and
    # changes nothing the page (or its snapshot) records.
    assert parse_show("summary figures") == ("figure",)
    assert parse_show("hazards") == ()
    assert parts.shown(SimpleNamespace(show=(), passes=())) == ("summary",)


def test_an_unknown_part_names_every_word_and_alias() -> None:
    with pytest.raises(OptionError) as caught:
        parse_show("figur")
    said = str(caught.value)
    for part in parts.PARTS:
        for word in (part.word, *part.aliases):
            assert re.search(rf"\b{re.escape(word)}\b", said), word
    assert "summary is always shown" in said


def test_every_word_names_one_part() -> None:
    words = [w for part in parts.PARTS for w in (part.word, *part.aliases)]
    assert len(words) == len(set(words))
    assert set(parts.DEFAULT_SHOW) <= set(parts.SHOW_PARTS)
    # The reference's row for :show: says which parts are always shown.
    assert "Always shown, whether named or not: ``summary``" in parts.reference()


@pytest.mark.parametrize(
    "text", ["sm_90a", "cuda -arch=sm_90a", '{"kind": "cuda", "arch": "sm_90a"}'])
def test_target_spellings_agree(text: str) -> None:
    target = parse_target(text)
    assert target.as_dict == {"kind": "cuda", "arch": "sm_90a"}
    assert target.label == "sm_90a"
    assert target.shared_memory_limit == 232448


@pytest.mark.parametrize(("text", "keys", "label"), [
    ("metal", None, "metal"), ('{"kind": "metal"}', None, "metal"),
    ('{"kind": "metal", "keys": ["metal", "gpu"]}', None, "metal"),
    ("metal4", ["metal", "gpu", "metal4"], "metal4"),
    ('{"kind": "metal", "keys": ["metal", "gpu", "metal4"]}', ["metal", "gpu", "metal4"],
     "metal4")])
def test_metal_spellings_agree(text: str, keys: list[str] | None, label: str) -> None:
    target = parse_target(text)
    assert target.as_dict == {"kind": "metal", **({"keys": keys} if keys else {})}
    assert (target.label, target.language, target.source_suffix) == (label, "Metal", ".metal")
    # Apple's Metal feature set tables: 32 KB of threadgroup memory per threadgroup.
    assert target.shared_memory_limit == 32768
    assert (target.barrier, target.asynchronous) == ("threadgroup_barrier", False)
    assert [t.label for t in parse_targets("sm_80 sm_90a metal")] == ["sm_80", "sm_90a",
                                                                      "metal"]


@pytest.mark.parametrize(("text", "message"), [
    ("auto", "needs a GPU"),
    ("sm80", "unknown target"),
    ('{"kind": "opencl"}', "only CUDA, HIP and Metal"),
    ('{"kind": "llvm"}', "CPU target .* runs no pipeline pass"),
    ("c", "num_stages changes nothing there"),
    ("webgpu", "no T.gemm implementation there"),
    ('{"kind": "webgpu"}', "does not lower for WebGPU"),
    ('{"kind": "metal", "keys": ["metal4"]}', "keys must be"),
    ("{not json", "not valid JSON"),
    ("cuda arch", "cannot read"),
])
def test_target_errors(text: str, message: str) -> None:
    with pytest.raises(OptionError, match=message):
        parse_target(text)


def test_name_must_be_a_file_name() -> None:
    assert parse_name("gemm-stages") == "gemm-stages"
    with pytest.raises(OptionError):
        parse_name("../escape")


def _plan(**options: str) -> DirectiveSpec:
    """Plan the seed GEMM; the options given stand on lines 20, 21, ... in name order."""
    given = {key.replace("_", "-"): value for key, value in options.items()}
    return plan(given, Kernel(GEMM, "gemm.py"), Defaults(targets=(parse_target("sm_80"),)),
                name="doc-1", docname="doc", lineno=10,
                line_of=lambda key: 20 + sorted(given).index(key) if key in given else 10)


def test_one_planner_turns_options_into_the_variants_every_caller_lowers() -> None:
    base = GEMM_PARAMS.replace(" block_K=64", "")
    spec = _plan(params=base, sweep="block_K=32,64", num_stages="2 3", show="figures sync")
    assert spec.name == "doc-1" and spec.show == ("figure", "sync")
    assert [v.heading for v in spec.variants] == [
        "block_K=32, num_stages=2", "block_K=32, num_stages=3",
        "block_K=64, num_stages=2", "block_K=64, num_stages=3"]
    # The same options from the command line's side give the same lowerings (keys).
    again = _plan(num_stages="2, 3", show="figure sync", sweep="block_K=32,64", params=base)
    assert [v.key("x") for v in again.variants] == [v.key("x") for v in spec.variants]


def test_the_planner_names_the_option_and_its_line() -> None:
    with pytest.raises(OptionError) as caught:
        _plan(params=GEMM_PARAMS, sweep="block_K=32,64", num_stages="2")
    assert str(caught.value) == ":sweep: block_K is also given in :params:"
    assert caught.value.line == 22  # the third option given
    with pytest.raises(OptionError) as caught:
        _plan(params=GEMM_PARAMS.replace("block_K=64", "block_K=64 K=2"), num_stages="2")
    assert caught.value.line == 21  # :params:, the second option given
    assert str(caught.value) == ":params: K is given twice"


# --- a typo costs nothing that was right (the directive's tolerant planning) ------------

def _tolerant(**options: str) -> DirectiveSpec:
    """As :func:`_plan`, tolerant, as the directive plans: problems kept, not raised."""
    given = {key.replace("_", "-"): value for key, value in options.items()}
    return plan(given, Kernel(GEMM, "gemm.py", line=30),
                Defaults(targets=(parse_target("sm_80"),)), name="doc-1", docname="doc",
                lineno=10, tolerant=True,
                line_of=lambda key: 20 + sorted(given).index(key) if key in given else 10)


def test_a_bad_value_keeps_its_good_part_and_says_what_it_kept() -> None:
    spec = _tolerant(params=GEMM_PARAMS, num_stages="2 tree 3", target="sm_80 sm8O",
                     show="figure grpahs", diff="side", passes="Simplify#0 tl.Simplify")
    assert [v.num_stages for v in spec.variants] == [2, 3]
    assert [t.label for t in spec.targets] == ["sm_80"]
    assert spec.show == ("figure",) and spec.diff == "consecutive"
    assert spec.passes == ("tl.Simplify",)
    assert [(p.line, p.message.split(" (")[-1]) for p in spec.problems] == [
        (21, "kept: num_stages 2 3)"), (25, "kept: target sm_80)"),
        (24, "kept: showing figure)"), (20, "ignored)"), (23, "the rest is kept)")]
    assert spec.in_error


def test_a_value_of_the_wrong_type_is_named_with_its_type_and_the_kernel_line() -> None:
    """block_M="64": TVM would fail deep in the lowering ("Check failed: (b.dtype().
    is_int() ...)"); the planner names the value, its type and where the kernel uses it
    as a number, at the option's line. Without it the factory cannot be called: the
    directive stops there."""
    with pytest.raises(OptionError) as caught:
        _tolerant(params=GEMM_PARAMS.replace("block_M=128", 'block_M="64"'), num_stages="2")
    kernel_line = next(i for i, line in enumerate(GEMM.splitlines(), 1) if "T.Kernel(" in line)
    assert str(caught.value) == (
        ":params: block_M='64' is a str, but the kernel uses block_M as a number (write "
        f"block_M=64, without quotes) at line {30 + kernel_line - 1}: with "
        "T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):")
    assert caught.value.line == 21
    # Swept, the bad value goes and the good ones stay.
    spec = _tolerant(params=GEMM_PARAMS.replace(" block_N=128", ""),
                     sweep='block_N=64,"128",128.0', num_stages="2")
    assert [v.heading for v in spec.variants] == ["block_N=64, num_stages=2"]
    assert [p.message for p in spec.problems] == [
        f":sweep: block_N='128' is a str, but the kernel uses block_N as a number (write "
        f"block_N=128, without quotes) at line {30 + kernel_line - 1}: with T.Kernel("
        "T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by): "
        "(block_N='128' is not swept)",
        f":sweep: block_N=128.0 is a float, but the kernel uses block_N as a whole number at "
        f"line {30 + kernel_line - 1}: with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, "
        "block_M), threads=threads) as (bx, by): (block_N=128.0 is not swept)"]


def test_a_string_param_the_kernel_uses_as_text_is_fine() -> None:
    kernel = GEMM.replace('    dtype = "float16"\n', "").replace(
        "def matmul(M,", "def matmul(dtype, M,")
    spec = plan({"params": 'dtype="float16" ' + GEMM_PARAMS, "num-stages": "2"},
                Kernel(kernel, "gemm.py"), Defaults(targets=(parse_target("sm_80"),)),
                name="d", docname="d", lineno=1, tolerant=True)
    assert not spec.problems


@pytest.mark.parametrize(("text", "entries", "pattern"), [
    ("block_N=128:2", [Expected(2, None, (("block_N", "128"),))], None),
    ("sm_90a:block_N=128:2 3: RAW on S",
     [Expected(2, "sm_90a", (("block_N", "128"),)), Expected(3)], "RAW on S"),
    ('dtype="float16":block_N=64:4', [Expected(4, None, (("dtype", "'float16'"),
                                                         ("block_N", "64")))], None),
    ("6:timeout", [Expected(6)], "timeout"),
])
def test_expectations_name_swept_values(text: str, entries: list[Expected],
                                        pattern: str | None) -> None:
    assert parse_expect_error(text) == (tuple(entries), pattern)


@pytest.mark.parametrize(("text", "message"), [
    ("block_N=12 8:2", "cannot read 'block_N=12'"),
    ("sm_80:sm_90a:2", "names two targets"),
    ("block_N=x y:2", "cannot read"),
    ("block_N=1:block_N=2:2", "names block_N twice"),
])
def test_expectation_errors(text: str, message: str) -> None:
    with pytest.raises(OptionError, match=message):
        parse_expect_error(text)


def test_an_expectation_naming_no_swept_value_is_said_at_its_line_and_dropped() -> None:
    base = GEMM_PARAMS.replace(" block_N=128", "")
    spec = _tolerant(params=base, sweep="block_N=64,128", num_stages="2 3",
                     expect_hazard="block_N=128:2 block_N=96:3 block_K=64:2 sm_90a:2 5")
    assert [e for e in spec.expect_hazard] == [Expected(2, None, (("block_N", "128"),))]
    assert [v.heading for v in spec.variants if spec.expects_hazard(v)] == [
        "block_N=128, num_stages=2"]
    assert [(p.line, p.message) for p in spec.problems] == [
        (20, ":expect-hazard: block_N=96:3 names block_N=96, which is not a value of block_N "
             "in :sweep: (64, 128) (the entry is dropped)"),
        (20, ":expect-hazard: block_K=64:2 names block_K, which is not swept (swept: "
             "block_N) (the entry is dropped)"),
        (20, ":expect-hazard: sm_90a:2 names no target of this directive (sm_80) (the entry "
             "is dropped)"),
        (20, ":expect-hazard: 5 is not in :num-stages: (the entry is dropped)")]
