"""An author's loop: claims that say why they fail, snapshots that record only what a page
shows, options that mean what they say, MyST as people write it. Real lowering."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sphinx_tlstages.core.claims import NAMES

from .conftest import CONF, write_project
from .kernels import GEMM, GEMM_PARAMS, ROOT, TWO_LOOPS, rst
from .test_failures import line_of, located

HEAD = "Claims\n======\n\n"
SNAPSHOTS = Path("_tlstages/snapshots")


def errors(warnings: str, filename: str, subtype: str,
           level: str = "ERROR") -> list[tuple[int, str]]:
    """(line, message with its indented lines) of each ``tlstages.<subtype>`` error."""
    pattern = rf"{re.escape(filename)}:(\d+): {level}: (.*?) \[tlstages\.{subtype}\]"
    return [(int(m.group(1)), m.group(2))
            for m in re.finditer(pattern, warnings, flags=re.DOTALL)]


# ---- claims -------------------------------------------------------------------------

WRONG = 'shared["A_shared"].shape[0] == num_stages'
UNKNOWN = "smem_bytes <= 65536"


def test_a_false_claim_shows_each_value_and_an_unknown_name_the_nearest(build) -> None:
    page = HEAD + rst(GEMM, num_stages="1 2", params=GEMM_PARAMS, name="claims",
                      **{"assert": f"{WRONG}\n      {UNKNOWN}"})
    result = build({"index.rst": page})
    assert result.app.statuscode == 1
    found = errors(result.warnings, "index.rst", "assert")
    # At num_stages=1 the buffer has no version dimension; at 2 the claim holds.
    assert found[0] == (line_of(page, ":assert:"),
                        f"claims: num_stages=1: assertion {WRONG!r} is false\n"
                        '  shared["A_shared"].shape[0] = 128\n'
                        "  num_stages = 1\n"
                        '  shared["A_shared"].shape = (128, 64)\n'
                        "  shared has 'A_shared', 'B_shared'")
    # Once, not once per variant, with the name meant and every name.
    line, said = found[1]
    assert len(found) == 2 and line == line_of(page, UNKNOWN)
    assert said.startswith(f"claims: num_stages=1: assertion {UNKNOWN!r} uses 'smem_bytes', "
                           "which is not a name a claim can use; did you mean "
                           "dynamic_shared_bytes? The names: cuda_lines, dynamic_shared_bytes,")
    # The closing line is no snapshot's.
    assert "tl-pipeline: 2 check(s) failed: 2 :assert: claims [tlstages.failed]" \
        in result.warnings
    assert "[tlstages.snapshot]" not in result.warnings


@pytest.mark.smoke  # both ends of the supported ranges
def test_myst_yaml_block_claims_fail_at_their_own_lines(build) -> None:
    source = GEMM
    page = ("# Claims\n\n```{tl-pipeline}\n---\nname: claims-md\nnum-stages: 1 2\n"
            f"params: {GEMM_PARAMS}\nassert: |\n  stage[-1] == num_stages - 1\n  {WRONG}\n"
            "---\n" + source + "```\n")
    result = build({"index.md": page})
    found = errors(result.warnings, "index.md", "assert")
    assert [(line, said.split(":")[1]) for line, said in found] == [
        (line_of(page, "stage[-1]"), " num_stages=1"), (line_of(page, WRONG), " num_stages=1")]
    assert "stage[-1] = 1" in found[0][1]  # the multiply is at stage 1 without a pipeline


@pytest.mark.smoke  # both ends of the supported ranges
def test_myst_indented_continuation_is_an_error_at_its_option(build) -> None:
    page = ("# Claims\n\n```{tl-pipeline}\n:name: cont\n:num-stages: 2\n"
            f":params: {GEMM_PARAMS}\n:assert: stage[-1] == 1\n  threads == 128\n\n"
            + GEMM + "```\n")
    result = build({"index.md": page})
    [(line, said)] = errors(result.warnings, "index.md", "option", "WARNING")
    assert line == line_of(page, ":assert:")
    assert said.startswith(":assert: its value goes on under it, indented, but MyST reads "
                           "only the option's own line")
    assert "---\nassert: |\n  stage[-1] == 1\n  threads == 128\n---" in result.warnings
    assert "give the kernel inline or with :file:" not in result.warnings
    # With :file:, the same mistake was reported as a kernel given twice.
    with_file = page.replace(":name: cont\n", ":name: cont2\n:file: k.py\n").split(
        "\n\n" + GEMM)[0] + "\n```\n"
    again = build({"index.md": with_file, "k.py": GEMM})
    [(line, said)] = errors(again.warnings, "index.md", "option", "WARNING")
    assert line == line_of(with_file, ":assert:") and said.startswith(":assert: its value")


# ---- options ------------------------------------------------------------------------

@pytest.mark.smoke  # both ends of the supported ranges
def test_every_bad_option_is_reported_at_its_own_line_rst_and_myst(build) -> None:
    bad = {"num_stages": "2 abc", "diff": "sideways", "timeout": "-1"}
    page = HEAD + rst(GEMM, params=GEMM_PARAMS, **bad)
    result = build({"index.rst": page, "other.md": "# Other\n\n```{tl-pipeline}\n---\n"
                    + "".join(f"{k.replace('_', '-')}: {v}\n" for k, v in bad.items())
                    + f"params: {GEMM_PARAMS}\n---\n" + GEMM + "```\n"})
    lines = [line for line, _ in located(result.warnings, "index.rst", "option")]
    assert lines == [line_of(page, ":num-stages:"), line_of(page, ":diff:"),
                     line_of(page, ":timeout:")]
    md = [line for line, _ in located(result.warnings, "other.md", "option")]
    assert md == [5, 6, 7]  # each YAML line: fence 3, --- 4, then the options


def test_pyobject_naming_one_of_several_factories_selects_it(build, tmp_path) -> None:
    source = GEMM + "\n\n" + GEMM.replace("def matmul(", "def other(")
    page = HEAD + rst("", num_stages="2", params=GEMM_PARAMS, name="picked", file="two.py",
                      pyobject="other")
    result = build({"index.rst": page, "two.py": source})
    assert result.warnings == "" and result.app.statuscode == 0
    assert "Kernel other" in result.html()
    recorded = json.loads((tmp_path / "src" / SNAPSHOTS / "picked.json").read_text())
    assert recorded["factory"] == "other"


# ---- snapshots ----------------------------------------------------------------------

REFUSES_2 = GEMM.replace('    dtype = "float16"\n',
                         '    dtype = "float16"\n    assert num_stages != 2, "two refused"\n')


def test_a_failed_variant_is_not_golden_and_later_recorded_as_new(build, tmp_path,
                                                                  monkeypatch) -> None:
    src = tmp_path / "src"
    golden = src / SNAPSHOTS / "once-failed.json"
    failing = HEAD + rst(REFUSES_2, num_stages="1 2", params=GEMM_PARAMS, name="once-failed")
    first = build({"index.rst": failing}, srcdir=src)
    assert "failed to lower" in first.warnings
    assert list(json.loads(golden.read_text())["variants"]) == ["1"]  # no {"error": ...}

    # Fixed on the same line: the code of num_stages=1 is the same.
    fixed = HEAD + rst(REFUSES_2.replace("!= 2", "!= 9"), num_stages="1 2", params=GEMM_PARAMS,
                       name="once-failed")
    monkeypatch.setenv("CI", "true")  # where nothing is written: the record is missing
    strict = build({"index.rst": fixed}, srcdir=src)
    assert strict.app.statuscode == 1
    assert "has no record of num_stages=2; record it where the docs are written" \
        in strict.warnings and "failed -> lowered" not in strict.warnings
    monkeypatch.delenv("CI")
    second = build({"index.rst": fixed}, srcdir=src)
    assert second.app.statuscode == 0 and second.warnings == "", second.warnings
    assert "once-failed: recorded num_stages=2 in" in second.status
    assert list(json.loads(golden.read_text())["variants"]) == ["1", "2"]


def test_an_expected_failure_is_golden(build, tmp_path) -> None:
    src = tmp_path / "src"
    page = HEAD + rst(REFUSES_2, num_stages="1 2", params=GEMM_PARAMS, name="expected",
                      expect_error="2")
    assert build({"index.rst": page}, srcdir=src).app.statuscode == 0
    variants = json.loads((src / SNAPSHOTS / "expected.json").read_text())["variants"]
    assert variants["2"] == {"error": "AssertionError: two refused"}


# ---- every example is true ----------------------------------------------------------

def _documented_claims() -> list[str]:
    """The ``:assert:`` examples of the reference's names and of the guide and README."""
    found = [n.example for n in NAMES]
    for path in [ROOT / "README.md", *sorted((ROOT / "book" / "guide").glob("*.md"))]:
        lines = path.read_text(encoding="utf-8").splitlines()
        for i, line in enumerate(lines):
            if line.strip() == "assert: |":  # MyST's YAML block
                column = line.index("assert")
            elif line.lstrip().startswith(":assert:"):  # an option line, not prose
                column = line.index(":assert:")
                found.append(line[column + len(":assert:"):].strip())
            else:
                continue
            for more in lines[i + 1:]:
                if not more.strip() or more.lstrip().startswith(":") \
                        or len(more) - len(more.lstrip()) <= column:
                    break
                found.append(more.strip())
    return found


def test_every_documented_example_holds_at_every_default_depth(build) -> None:
    from sphinx_tlstages.ext.directive import OPTIONS
    examples = _documented_claims() + [
        text for text in re.findall(r"``(.+?)``", OPTIONS["assert"]) if "==" in text]
    assert len(examples) > len(NAMES) + 3
    assert 'shared["A_shared"].shape[-2:] == (128, 64)' in examples  # from the YAML block
    claims = "\n      ".join(examples)
    page = HEAD + rst(GEMM, params=GEMM_PARAMS, name="examples",
                      show="shared gemm resources", **{"assert": claims})
    result = build({"index.rst": page})  # the default sweep: 1 2 3 4
    assert errors(result.warnings, "index.rst", "assert") == []
    assert result.app.statuscode == 0 and result.warnings == "", result.warnings


def test_the_reference_lists_every_name_with_the_seed_gemms_values(build, tmp_path) -> None:
    src = tmp_path / "src"
    (src / SNAPSHOTS).mkdir(parents=True)
    shutil.copy(ROOT / "book" / SNAPSHOTS / "gemm-sm80.json", src / SNAPSHOTS)
    conf = (f"import sys\nsys.path.insert(0, {str(ROOT / 'book' / '_ext')!r})\n"
            'extensions = ["sphinx_tlstages", "tlstages_reference"]\n'
            "tlstages_snapshots = 'off'\n")
    result = build({"index.rst": "Ref\n===\n\n.. tlstages-reference:: assert-names\n"},
                   conf=conf, srcdir=src)
    assert result.warnings == ""
    rows = result.table("body")
    assert [row[0] for row in rows[1:]] == [n.name for n in NAMES]
    by_name = {row[0]: row for row in rows[1:]}
    assert by_name["shared"][3].startswith("{'A_shared': namespace(shape=(128, 64)")
    assert by_name["shared"][4].startswith("{'A_shared': namespace(shape=(3, 128, 64)")
    assert by_name["num_stages"][3:5] == ["1", "3"]
    assert by_name["gemm"][3] == "['mma_sync']"


# ---- words --------------------------------------------------------------------------

def test_the_verdict_counts_matched_drifted_and_failed_and_diff_says_when_nothing_compared(
        build, tmp_path, monkeypatch, capsys) -> None:
    from sphinx_tlstages import cli
    monkeypatch.chdir(tmp_path)
    src = tmp_path / "book"
    page = HEAD + rst(REFUSES_2.replace("!= 2", "!= 9"), num_stages="1 2",
                      params=GEMM_PARAMS, name="counted")
    assert build({"index.rst": page}, srcdir=src).app.statuscode == 0
    # Edited on the same lines: num_stages=1 is the same, 2 drifts, 3 fails to lower.
    edited = HEAD + rst(REFUSES_2.replace("!= 2", "!= 3").replace(
        'dtype = "float16"\n', 'dtype = "float16" if num_stages != 2 else "bfloat16"\n'),
        num_stages="1 2 3", params=GEMM_PARAMS, name="counted")
    monkeypatch.setenv("CI", "true")
    drifted = build({"index.rst": edited}, srcdir=src)
    assert drifted.app.statuscode == 1
    report = json.loads(next(src.glob("_build/**/tlstages-report.json")).read_text())
    assert "2 variants compared with their snapshots: 1 matched, 1 drifted, 1 failed to " \
           "lower" in report["verdict"]
    capsys.readouterr()
    # The CI build wrote no pending snapshot: the command has nothing to compare.
    cli.main(["snapshots", "diff", str(src), "--format", "text"])
    out = capsys.readouterr().out
    assert "no pending snapshots to compare" in out and "No drift" not in out


def test_a_tilelang_crash_names_its_pass_the_kernel_line_and_the_known_cause(build) -> None:
    assert TWO_LOOPS != GEMM
    page = HEAD + rst(TWO_LOOPS, num_stages="2", params=GEMM_PARAMS, name="crash",
                      target="sm_90a")
    result = build({"index.rst": page})
    second_loop = [i for i, line in enumerate(page.splitlines(), 1)
                   if "T.Pipelined" in line][1]
    [(line, said)] = located(result.warnings, "index.rst", "lowering")
    assert line == second_loop
    assert said.startswith("crash: num_stages=2 failed to lower (exception): TileLang's pass "
                           "tl.LayoutInference#1 failed: InternalError: Check failed: "
                           "(az->CanProveEqual(")  # TileLang's own words are kept
    assert "(hint: A_shared, B_shared are used by the T.Pipelined loops of lines" in said
    assert "Give each pipelined loop its own shared buffers" in said


# ---- layout -------------------------------------------------------------------------

def test_records_never_land_in_the_published_output(tmp_path, monkeypatch, capsys) -> None:
    from sphinx_tlstages import cli
    src, out = tmp_path / "src", tmp_path / "site"
    write_project(src, {"index.rst": HEAD + rst(GEMM, num_stages="2", params=GEMM_PARAMS,
                                                 name="placed")}, CONF)
    env = {k: v for k, v in os.environ.items() if k != "TLSTAGES_CACHE_DIR"}
    # A plain sphinx-build SRC OUT: Sphinx keeps its doctrees in OUT/.doctrees.
    done = subprocess.run([sys.executable, "-m", "sphinx", "-q", "-b", "html", str(src),
                           str(out)], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert (out / ".doctrees").is_dir() and (out / "index.html").is_file()
    assert [p for p in out.rglob("*") if p.name.startswith("tlstages-")] == []
    beside = tmp_path / "site.tlstages"
    assert any((beside / "tlstages-cache").rglob("*.json"))
    assert (beside / "tlstages-report.json").is_file()
    assert (beside / "tlstages-explain" / "placed.json").is_file()
    # The commands find them from the folder the author built into.
    capsys.readouterr()
    assert cli.main(["report", str(out), "--format", "text"]) == 0
    assert capsys.readouterr().out.startswith("tl-pipeline report, html build: No drift")
    assert cli.main(["explain", "placed", str(out)]) == 0


def test_every_install_snippet_agrees_with_the_readme() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    torch = "pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu"
    assert f"{torch}\npip install \"sphinx-tlstages[myst]\"" in readme
    # The contributors' path keeps its two commands, under its own heading, after the
    # author's.
    quick = readme.index("## Quick start for contributors")
    assert readme.index("## Use it in your book") < quick
    assert "python3 -m pip install nox && python3 -m nox -s docs\n" \
        "python3 -m pip install nox && python3 -m nox -s tests\n" in readme[quick:]
    pages = [ROOT / "README.md", *sorted((ROOT / "book").rglob("*.md")),
             *sorted((ROOT / "book").rglob("*.rst"))]
    for page in pages:
        for line in page.read_text(encoding="utf-8").splitlines():
            if "pip install" not in line or "nox" in line:
                continue
            said = re.findall(r"pip install (.+?)\s*(?:``?|#|$)", line)[0]
            if said.startswith("torch"):
                assert line.strip(" -$").removeprefix("run: ") == torch, (page, line)
            else:
                assert re.fullmatch(r'"sphinx-tlstages\[[a-z,]*myst[a-z,]*\]"|"sphinx-tlstages'
                                    r'\[(cache|resources|docs)\]"|sphinx-tlstages', said), \
                    (page, line)
