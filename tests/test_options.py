"""Option and target parsing: what authors may write, and the errors they get."""

from __future__ import annotations

import pytest

from sphinx_tlstages.core.errors import OptionError
from sphinx_tlstages.core.plan.options import parse_name, parse_num_stages, parse_params, parse_show
from sphinx_tlstages.core.plan.targets import parse_target


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


@pytest.mark.parametrize(
    "text", ["sm_90a", "cuda -arch=sm_90a", '{"kind": "cuda", "arch": "sm_90a"}'])
def test_target_spellings_agree(text: str) -> None:
    target = parse_target(text)
    assert target.as_dict == {"kind": "cuda", "arch": "sm_90a"}
    assert target.label == "sm_90a"
    assert target.shared_memory_limit == 232448


@pytest.mark.parametrize(("text", "message"), [
    ("auto", "needs a GPU"),
    ("sm80", "unknown target"),
    ('{"kind": "llvm"}', "only CUDA"),
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
