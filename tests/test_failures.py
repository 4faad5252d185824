"""Bad input and failing variants: a warning at the document line, the rest still builds."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap

from .conftest import CONF, strip_colours, write_project
from .kernels import GEMM, GEMM_PARAMS, myst, read, rst

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


# --- mistakes of our own: one page per kind (issue 52) ----------------------------------

ROLLING_SUM = read("hazards/rolling_sum.py")


def test_an_unknown_option_is_said_with_the_name_it_may_mean_and_ignored(build) -> None:
    rst_page = HEAD + rst(GEMM, params=GEMM_PARAMS, num_stage="2", name="rst-typo")
    md_page = "# Failures\n\n" + myst(GEMM, params=GEMM_PARAMS, nmae="x", num_stages="3")
    toc = ".. toctree::\n\n   md\n\n"
    result = build({"index.rst": rst_page.replace(HEAD, HEAD + toc), "md.md": md_page})
    page = rst_page.replace(HEAD, HEAD + toc)
    assert located(result.warnings, "index.rst", "option") == [
        (line_of(page, ":num-stage:"), ":num-stage: is not an option of tl-pipeline; did you "
                                       "mean :num-stages:? (ignored)")]
    assert located(result.warnings, "md.md", "option") == [
        (line_of(md_page, ":nmae:"), ":nmae: is not an option of tl-pipeline; did you mean "
                                     ":name:? (ignored)")]
    # Rendered all the same, with what the other options give.
    assert [row[0] for row in result.table("tl-summary")][1:] == ["1", "2", "3", "4"]
    assert [row[0] for row in result.table("tl-summary", "md")][1:] == ["3"]


def test_a_param_of_the_wrong_type_is_named_at_its_option(build) -> None:
    page = HEAD + rst(GEMM, params=GEMM_PARAMS.replace("block_M=128", 'block_M="64"'),
                      num_stages="2", name="typed")
    result = build({"index.rst": page})
    kernel_line = line_of(page, "with T.Kernel(")
    assert located(result.warnings, "index.rst", "option") == [(
        line_of(page, ":params:"),
        ":params: block_M='64' is a str, but the kernel uses block_M as a number (write "
        f"block_M=64, without quotes) at line {kernel_line}: with T.Kernel(T.ceildiv(N, "
        "block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):")]
    assert "Check failed" not in result.warnings
    assert "block_M=&#39;64&#39;" not in result.html()  # the quotes stay straight, literal
    assert "<code class=\"docutils literal notranslate\"><span class=\"pre\">'64'</span>" \
        in result.html()


def test_expectations_name_swept_values_and_a_bad_one_costs_only_itself(build) -> None:
    """:expect-hazard: N=512:2 names one column of a sweep; N=384:2 names none: said at
    the option's line, in rST and in MyST (its option line and its YAML block), and the
    directive renders both columns with the good entry in force."""
    options = {"params": "K=16", "sweep": "N=256,512", "num_stages": "2",
               "expect_hazard": "N=512:2 N=384:2"}
    rst_page = HEAD + ".. toctree::\n\n   md\n   yaml\n\n" + rst(ROLLING_SUM, name="swept",
                                                              **options)
    md_page = "# Swept\n\n" + myst(ROLLING_SUM, name="swept-md", **options)
    yaml_page = ("# Swept\n\n```{tl-pipeline}\n---\nname: swept-yaml\nparams: K=16\n"
                 "sweep: N=256,512\nnum-stages: 2\nexpect-hazard: N=512:2 N=384:2\n---\n"
                 + ROLLING_SUM + "```\n")
    result = build({"index.rst": rst_page, "md.md": md_page, "yaml.md": yaml_page})
    said = (":expect-hazard: N=384:2 names N=384, which is not a value of N in :sweep: "
            "(256, 512) (the entry is dropped)")
    for name, page in (("index.rst", rst_page), ("md.md", md_page), ("yaml.md", yaml_page)):
        assert located(result.warnings, name, "option") == [
            (line_of(page, "expect-hazard:"), said)], name
    for name in ("swept", "swept-md", "swept-yaml"):
        assert f"{name}: N=512, num_stages=2: hazard" in result.status
        assert "(expected by :expect-hazard:)" in result.status
        assert re.search(rf"WARNING: {name}: N=256, num_stages=2: hazard.*\[tlstages\.hazard\]",
                         result.warnings), name
    assert [row[0] for row in result.table("tl-summary")][1:] == [  # both rendered
        "N=256, num_stages=2", "N=512, num_stages=2"]


def test_a_closing_line_counts_what_it_counts(build) -> None:
    page = HEAD + rst(ROLLING_SUM, params="N=512 K=16", num_stages="1 2", name="counted",
                      expect_hazard="1") + "\n" + rst(UNLUCKY, params=GEMM_PARAMS,
                                                      num_stages="2 3", name="unlucky")
    result = build({"index.rst": page})
    assert "tl-pipeline: 1 check(s) failed: 1 :expect-hazard: variant [tlstages.failed]" \
        in result.warnings
    assert re.search(r"tl-pipeline: 4 variants, \d lowered, \d cached, 1 failed", result.status)
    lowered, cached = map(int, re.search(r"(\d) lowered, (\d) cached", result.status).groups())
    assert lowered + cached == 3  # the failed one is neither


def test_error_boxes_are_copyable_in_every_builder(build, tmp_path) -> None:
    """The box for an option continued reST-style in MyST shows the YAML block to write
    as it is: ``---``, straight quotes, its lines; in HTML, LaTeX and text."""
    page = ("# Boxes\n\n```{tl-pipeline}\n:params: " + GEMM_PARAMS
            + "\n:assert: shared[\"A_shared\"].shape[0] == 2\n  threads == 128\n"
            ":name: 'quoted'\n\n" + GEMM + "```\n")
    block = '---\nassert: |\n  shared["A_shared"].shape[0] == 2\n  threads == 128\n---'
    for builder, name in (("html", "index.html"), ("latex", "tests.tex"), ("text", "index.txt")):
        result = build({"index.md": page}, buildername=builder,
                       srcdir=tmp_path / builder)
        out = (result.outdir / name).read_text(encoding="utf-8")
        for curled in ("“", "”", "‘", "’", "—", "–"):
            assert curled not in out, (builder, curled)
        if builder == "html":
            assert "<pre><span></span>" + block + "\n</pre>" in out
        elif builder == "latex":
            # Pygments' escapes of a verbatim block: its characters, never a dash or a
            # curled quote.
            plain = out.replace("\\PYGZhy{}", "-").replace("\\PYGZdq{}", '"') \
                .replace("\\PYGZus{}", "_")
            assert "\\begin{sphinxVerbatim}[commandchars=\\\\\\{\\}]\n" + block + "\n" \
                "\\end{sphinxVerbatim}" in plain
        else:
            lines = out.splitlines()
            start = next(i for i, line in enumerate(lines) if line.strip() == "---")
            assert textwrap.dedent("\n".join(lines[start:start + 5])) == block, out


def _located_lines(stderr: str) -> list[str]:
    """This extension's located findings in a build's log: ``file:line: KIND: message``
    up to the subtype, sorted (a parallel build says them in its own order)."""
    return sorted(re.findall(r"^(\S+:\d+: (?:WARNING|ERROR): .*?\[tlstages\.\w+\])$",
                             strip_colours(stderr), re.MULTILINE))


def test_a_warm_build_is_as_strict_as_a_cold_one(tmp_path) -> None:
    """Every located finding of a cold build comes back in a build that does not read
    the document again (warm, incremental, -j auto), until its source changes; -W fails
    each of them."""
    bad = (HEAD + ".. toctree::\n\n   other\n\n"
           + rst(GEMM, params=GEMM_PARAMS, num_stages="2", target="sm8O", name="target")
           + "\n" + rst(GEMM, params=GEMM_PARAMS, num_stages="2 -1", name="depth")
           + "\n.. tl-pipeline::\n   :file: missing.py\n   :name: gone\n\n"
           + rst(GEMM.replace("T.clear(C_local)", "T.clear(C_local))"), params=GEMM_PARAMS,
                 name="syntax")
           + "\n" + rst(GEMM, params=GEMM_PARAMS.replace("block_M=128 ", ""),
                        num_stages="2", name="param"))
    other = "Other\n=====\n\n" + rst(GEMM, params=GEMM_PARAMS, num_stages="2", name="good")
    # Enough pages that -j reads them in parallel (Sphinx does past five).
    pages = {f"p{n}.rst": f"P{n}\n==\n\nProse.\n" for n in range(6)}
    toc = "".join(f"   p{n}\n" for n in range(6))
    bad = bad.replace("   other\n", "   other\n" + toc)
    src = tmp_path / "src"
    write_project(src, {"index.rst": bad, "other.rst": other, **pages}, CONF)

    def build(out: str, *extra: str) -> tuple[int, list[str]]:
        done = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-b",
                               "html", str(src), str(tmp_path / out), *extra],
                              capture_output=True, text=True, env=os.environ, timeout=600)
        return done.returncode, _located_lines(done.stderr)

    code, cold = build("serial")
    assert code != 0
    assert len(cold) == 5, cold  # target, depth, missing file, syntax error, missing param
    for what in ("sm8O", "-1 is negative", "missing.py", "syntax error",
                 "needs :params: for block_M"):
        assert any(what in line for line in cold), (what, cold)
    assert build("serial") == (code, cold)  # warm: nothing read again
    write_project(src, {"index.rst": bad, "other.rst": other + "\nMore prose.\n", **pages},
                  CONF)
    assert build("serial") == (code, cold)  # incremental: only other.rst read again
    # Read in parallel from nothing (what each reader said merged), then warm.
    assert build("parallel", "-j", "auto") == (code, cold)
    assert build("parallel", "-j", "auto") == (code, cold)
    fixed = bad.replace("sm8O", "sm_80")
    write_project(src, {"index.rst": fixed, "other.rst": other, **pages}, CONF)
    assert build("parallel", "-j", "auto") == (code, [line for line in cold if "sm8O" not in line])
