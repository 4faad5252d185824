"""Bad input and failing variants: a warning at the document line, the rest still builds."""

from __future__ import annotations

import re

from .kernels import GEMM, GEMM_PARAMS, myst, rst

HEAD = "Failures\n========\n\n"


def located(warnings: str, filename: str, subtype: str) -> list[tuple[int, str]]:
    """(line, message) of each ``tlstages.<subtype>`` warning in ``filename``."""
    found = []
    pattern = rf"{re.escape(filename)}:(\d+): WARNING: (.*?) \[tlstages\.{subtype}\]"
    for match in re.finditer(pattern, warnings):
        found.append((int(match.group(1)), match.group(2)))
    return found


def line_of(page: str, text: str) -> int:
    return next(i for i, line in enumerate(page.splitlines(), 1) if text in line)


UNLUCKY = GEMM.replace(
    '    dtype = "float16"\n',
    '    dtype = "float16"\n'
    '    if num_stages == 3:\n'
    '        raise ValueError("three is unlucky")\n',
)


def test_failing_variant_is_reported_at_its_line_and_others_render(build) -> None:
    page = HEAD + rst(UNLUCKY, num_stages="2 3 4", params=GEMM_PARAMS, name="unlucky")
    result = build({"index.rst": page})
    warnings = located(result.warnings, "index.rst", "lowering")
    assert warnings == [(line_of(page, "raise ValueError"),
                         "unlucky: num_stages=3 failed to lower (exception): "
                         "ValueError: three is unlucky")]
    rows = result.table("tl-summary")
    assert rows[2][0] == "3" and rows[2][1].startswith("failed (exception): ValueError")
    assert rows[1][1] == "pipelined, depth 2" and rows[3][1] == "pipelined, depth 4"
    shared = {row[0]: row[1:] for row in result.table("tl-shared")}
    assert shared["A_shared"] == ["(2, 128, 64) float16, 32,768 B",
                                  "(4, 128, 64) float16, 65,536 B"]


def test_cached_failure_warns_again(build, tmp_path) -> None:
    page = HEAD + rst(UNLUCKY, num_stages="3", params=GEMM_PARAMS, name="again")
    first = build({"index.rst": page})
    assert len(located(first.warnings, "index.rst", "lowering")) == 1
    second = build({"index.rst": page}, freshenv=True)
    assert len(located(second.warnings, "index.rst", "lowering")) == 1
    # Counted as failed, not as lowered or cached, and said to come from the cache.
    assert "1 variant, 0 lowered, 0 cached, 1 failed (1 of them cached)" in second.status


def test_syntax_error_points_at_the_rst_line(build) -> None:
    broken = GEMM.replace("T.clear(C_local)", "T.clear(C_local))")
    page = HEAD + rst(broken, params=GEMM_PARAMS)
    result = build({"index.rst": page})
    assert located(result.warnings, "index.rst", "source") == [
        (line_of(page, "T.clear(C_local))"), "syntax error in kernel: unmatched ')'")]
    assert "tl-pipeline: syntax error" in result.html()


def test_syntax_error_points_at_the_myst_line(build) -> None:
    broken = GEMM.replace("T.clear(C_local)", "T.clear(C_local))")
    page = "# Failures\n\nprose\n\n" + myst(broken, params=GEMM_PARAMS)
    result = build({"index.md": page})
    assert located(result.warnings, "index.md", "source") == [
        (line_of(page, "T.clear(C_local))"), "syntax error in kernel: unmatched ')'")]


def test_runtime_error_in_myst_points_at_its_line(build) -> None:
    page = "# Failures\n\n" + myst(UNLUCKY, num_stages="3", params=GEMM_PARAMS, name="md")
    result = build({"index.md": page})
    assert [line for line, _ in located(result.warnings, "index.md", "lowering")] == [
        line_of(page, "raise ValueError")]


def test_bad_option_is_reported_at_the_option_line(build) -> None:
    """A typo costs only itself: the good values are lowered and shown, under a box that
    says what was left out."""
    page = HEAD + rst(GEMM, params=GEMM_PARAMS, num_stages="2 abc")
    result = build({"index.rst": page})
    assert located(result.warnings, "index.rst", "option") == [
        (line_of(page, ":num-stages:"),
         ":num-stages: 'abc' is not a whole number (kept: num_stages 2)")]
    assert "Traceback" not in result.warnings
    assert 'class="tl-error admonition error"' in result.html()
    assert [row[0] for row in result.table("tl-summary")] == ["num_stages", "2"]


def test_unknown_param_and_missing_factory(build) -> None:
    page = HEAD + rst(GEMM, params=GEMM_PARAMS + " block_Q=1") + "\n" + rst(
        "def helper(x):\n    return x\n")
    result = build({"index.rst": page})
    messages = [m for _, m in located(result.warnings, "index.rst", "source")]
    assert messages == [
        "factory 'matmul' takes no parameter block_Q (its parameters: M, N, K, block_M, "
        "block_N, block_K, num_stages, threads)",
        "no kernel factory: expected a @tilelang.jit or @autotune function, or a function "
        "taking num_stages or with a T.Pipelined loop; found: helper (line 1, plain)",
    ]


def errors(warnings: str, filename: str, subtype: str) -> list[tuple[int, str]]:
    """(line, message) of each ``tlstages.<subtype>`` error in ``filename``."""
    pattern = rf"{re.escape(filename)}:(\d+): ERROR: (.*?) \[tlstages\.{subtype}\]"
    return [(int(m.group(1)), m.group(2)) for m in re.finditer(pattern, warnings)]


def test_duplicate_names_name_both_places(build, tmp_path) -> None:
    """A :name: used twice is an error at both places, naming the other; each directive
    renders its own variants, cold and warm, and no snapshot is written for the name."""
    one = HEAD + rst(GEMM, params=GEMM_PARAMS, num_stages="2", name="same")
    two = "Other\n=====\n\n" + rst(GEMM, params=GEMM_PARAMS, num_stages="3", name="same")
    toc = ".. toctree::\n\n   other\n\n"
    index = one.replace(HEAD, HEAD + toc)
    src = tmp_path / "src"
    first, second = line_of(index, ".. tl-pipeline::"), line_of(two, ".. tl-pipeline::")
    said = ("tl-pipeline name 'same' is also used at {}; give each directive its own :name: "
            "(neither is checked against the snapshot same.json, nor is one written, until "
            "then)")
    for build_number in (1, 2):  # cold, then warm
        result = build({"index.rst": index, "other.rst": two}, srcdir=src)
        assert errors(result.warnings, "other.rst", "name") == [
            (second, said.format(f"index.rst:{first}"))], build_number
        assert errors(result.warnings, "index.rst", "name") == [
            (first, said.format(f"other.rst:{second}"))]
        assert result.app.statuscode == 1
        assert "2 check(s) failed: 2 directives sharing a :name:" in result.warnings
        for page, stages in (("index", "2"), ("other", "3")):
            assert [row[0] for row in result.table("tl-summary", page)] == [
                "num_stages", stages], (build_number, page)
            assert "is also used at" in result.part("tl-error", page).astext()
        assert not (src / "_tlstages" / "snapshots" / "same.json").exists()


def test_assertions_are_claims_checked_on_every_build(build) -> None:
    claims = ('shared["A_shared"].shape[0] == num_stages\n'
              '      max(sync["cp_async_wait"]) == num_stages - 1\n'
              '      stage[-1] == num_stages - 1')
    page = HEAD + rst(GEMM, num_stages="2 3 4", params=GEMM_PARAMS, name="claims",
                      **{"assert": claims})
    result = build({"index.rst": page})
    assert result.warnings == "" and result.app.statuscode == 0
    assert "Checked on every build, for every variant:" in result.html()
    wrong = page.replace("== num_stages - 1\n", "== num_stages\n", 1)
    failed = build({"index.rst": wrong})
    assert failed.app.statuscode == 1
    line = line_of(wrong, 'max(sync["cp_async_wait"])')
    for stages in (2, 3, 4):
        assert f"index.rst:{line}: ERROR: claims: num_stages={stages}: assertion " \
               f"'max(sync[\"cp_async_wait\"]) == num_stages' is false" in failed.warnings
    raising = build({"index.rst": page.replace('shared["A_shared"]', 'shared["X"]')})
    assert "assertion 'shared[\"X\"].shape[0] == num_stages' raised KeyError: 'X'" \
        in raising.warnings
