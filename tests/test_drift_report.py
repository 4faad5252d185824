"""The drift report: a red build that explains itself in the job summary, in words."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from sphinx_tlstages import cli
from sphinx_tlstages.core.records import drift_render
from sphinx_tlstages.core.records.drift import DIFF_LINES, Report, from_json
from sphinx_tlstages.core.results.stamps import tilelang_version

from .conftest import CONF
from .html_tree import Element, parse, table_rows
from .kernels import GEMM, GEMM_PARAMS, rst
from .test_bench import PAGE, bench_file, write
from .test_snapshots import SNAPSHOTS, _as_if_recorded_elsewhere, _without_gemm, golden

BASEURL = "https://example.org/book/"
CONF_URL = CONF + f'html_baseurl = "{BASEURL}"\n'
CLAIM = 'shared["A_shared"].shape[2] == 64'


def chapter(block_k: int = 64) -> str:
    params = GEMM_PARAMS.replace("block_K=64", f"block_K={block_k}")
    return ("Chapter\n=======\n\nSome prose.\n\n"
            + rst(GEMM, num_stages="2 3", params=params, name="gemm-chapter", assert_=CLAIM))


def line_of(text: str, start: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if line.lstrip().startswith(start))


def rendered(markdown: str) -> Element:
    """The Markdown as a GitHub-like renderer turns it into HTML (tables, raw HTML)."""
    return parse(MarkdownIt("commonmark", {"html": True}).enable("table").render(markdown))


def report_md(src: Path) -> str:
    found = sorted(src.glob("_build/**/tlstages-report.gfm"))
    assert len(found) == 1, found
    return found[0].read_text(encoding="utf-8")


@pytest.fixture
def ci(monkeypatch, tmp_path) -> Path:
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("CI", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    monkeypatch.chdir(tmp_path)  # the accept command names the book from here
    return summary


def test_a_drift_under_ci_leaves_a_summary_that_explains_itself(build, tmp_path, ci) -> None:
    src = tmp_path / "book"
    with pytest.MonkeyPatch.context() as local:
        local.delenv("CI")
        local.delenv("GITHUB_STEP_SUMMARY")
        assert build({"index.rst": chapter()}, srcdir=src, conf=CONF_URL).app.statuscode == 0
    _as_if_recorded_elsewhere(golden(src))
    drifted = build({"index.rst": chapter(32)}, srcdir=src, conf=CONF_URL, freshenv=True)
    assert drifted.app.statuscode == 1
    summary = ci.read_text(encoding="utf-8")
    marker, _, section = summary.partition("\n")
    assert marker.startswith("<!-- tlstages-report html ")
    assert section == report_md(src)  # the file a workflow posts as a comment
    version = tilelang_version()
    line = line_of(chapter(), ".. tl-pipeline::")
    assert (f"**1 of 1 directive changed; 2 :assert: claims failed; 2 variants compared "
            f"with their snapshots: 0 matched, 2 drifted, recorded with TileLang 0.1.0, "
            f"built with {version}.**") in summary
    assert tmp_path.as_posix() not in summary and str(Path.home()) not in summary

    page = rendered(summary)
    head = page.iter("h4")[0]
    assert head.astext() == f"gemm-chapter at index.rst:{line}"
    assert head.iter("a")[0].attrs["href"] == f"{BASEURL}index.html#tl-gemm-chapter"
    rows = table_rows(page)
    assert rows[0] == ["Variant", "What changed"]
    assert ["(directive)", "params block_K=64 -> block_K=32"] in rows
    assert ["num_stages=3", "A_shared (3, 128, 64) -> (3, 128, 32) float16"] in rows
    assert ["num_stages=2", "shared memory 65,536 -> 32,768 B"] in rows
    cuda = [r for r in rows if r[0] == "num_stages=3" and r[1].startswith("CUDA +")]
    assert len(cuda) == 1
    # The diff folded away, its summary said once (not HTML-escaped twice).
    folded = [d for d in page.iter("details") if "num_stages=3" in d.iter("summary")[0].astext()]
    assert folded[0].iter("summary")[0].astext() == \
        f"The CUDA diff of gemm-chapter, num_stages=3 ({cuda[0][1][5:]})"
    diff = folded[0].iter("code")[0]
    assert diff.attrs["class"] == "language-diff"
    assert "-" in diff.astext() and "+" in diff.astext()
    text = page.astext()
    assert "Recorded with TileLang 0.1.0, built with " + version in text
    assert f"line {line_of(chapter(), ':assert:')}, num_stages=2: {CLAIM!r} is false" in text
    assert "Accept it where the docs are written: tlstages snapshots accept book after a " \
        "local build, or build with TLSTAGES_SNAPSHOTS=update." in text

    assert cli.main(["report", str(src / "_build"), "--format", "markdown"]) == 0
    # The same report, read back from its JSON, in every format.
    data = json.loads(next(src.glob("_build/**/tlstages-report.json")).read_text())
    assert drift_render.markdown(from_json(json.dumps(data))) == section
    assert data["verdict"].startswith("1 of 1 directive changed")


def test_report_command_prints_the_last_build(build, tmp_path, ci, capsys) -> None:
    src = tmp_path / "book"
    build({"index.rst": chapter()}, srcdir=src, conf=CONF_URL)  # under CI: no snapshot
    capsys.readouterr()
    assert cli.main(["report", str(src / "_build"), "--format", "text"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("tl-pipeline report, html build: 0 of 1 directive changed; "
                          "1 without a snapshot; 0 variants matched their snapshots")
    assert f"index.rst:{line_of(chapter(), '.. tl-pipeline::')}: gemm-chapter" in out
    assert "no snapshot at _tlstages/snapshots/gemm-chapter.json" in out
    assert cli.main(["report", str(tmp_path / "nowhere")]) == 1


def test_a_clean_build_leaves_one_line_and_a_later_builder_nothing_new(build, tmp_path,
                                                                        ci) -> None:
    src = tmp_path / "book"
    with pytest.MonkeyPatch.context() as local:
        local.delenv("CI")
        local.delenv("GITHUB_STEP_SUMMARY")
        build({"index.rst": chapter()}, srcdir=src)
    assert build({"index.rst": chapter()}, srcdir=src).app.statuscode == 0
    summary = ci.read_text(encoding="utf-8")
    shown = [line for line in summary.splitlines() if line and not line.startswith("<!--")]
    assert shown == [f"**tl-pipeline, html build:** No drift: 1 directive, 2 variants "
                     f"matched their snapshots, recorded with TileLang "
                     f"{tilelang_version()}."]
    assert len(rendered(summary).iter("p")) == 1
    assert build({"index.rst": chapter()}, srcdir=src, buildername="text").app.statuscode == 0
    added = ci.read_text(encoding="utf-8")[len(summary):]
    assert [line for line in added.splitlines() if line and not line.startswith("<!--")] == \
        ["**tl-pipeline, text build:** nothing new since the html build."]


def test_snapshots_diff_prints_the_same_report(build, tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    src = tmp_path / "book"
    build({"index.rst": chapter()}, srcdir=src, conf=CONF_URL)
    _as_if_recorded_elsewhere(golden(src))
    (src / SNAPSHOTS / "gone.json").write_text(golden(src).read_text())
    drifted = build({"index.rst": chapter(32)}, srcdir=src, conf=CONF_URL, freshenv=True)
    assert drifted.app.statuscode == 1
    from_build = report_md(src)
    capsys.readouterr()
    assert cli.main(["snapshots", "diff", str(src)]) == 1
    printed = capsys.readouterr().out
    assert printed.splitlines()[0] == "### tl-pipeline report: pending snapshots"
    assert from_build.splitlines()[0] == "### tl-pipeline report: html build"
    assert printed.splitlines()[1:] == from_build.splitlines()[1:]
    # Checked on the snapshot, with the value it compared.
    assert f"num\\_stages=3: `{CLAIM!r} is false (shared[\"A_shared\"].shape[2] = 32; " \
        in printed
    assert "**Unused snapshots**" in printed and "`_tlstages/snapshots/gone.json`" in printed
    assert "Accept it** with `tlstages snapshots accept book`" in printed
    assert cli.main(["snapshots", "accept", str(src)]) == 0
    capsys.readouterr()
    assert cli.main(["snapshots", "diff", str(src), "--format", "json"]) == 1
    after = json.loads(capsys.readouterr().out)
    assert after["verdict"].startswith("0 of 1 directive changed; 2 :assert: claims failed;")


def test_the_same_drift_gives_the_same_bytes_in_any_folder_serial_or_j(build, tmp_path, ci,
                                                            monkeypatch) -> None:
    made = []
    for folder in ("one", "two/deeper"):
        src = tmp_path / folder / "book"
        src.mkdir(parents=True)
        monkeypatch.chdir(src.parent)
        with pytest.MonkeyPatch.context() as local:
            local.delenv("CI")
            build({"index.rst": chapter()}, srcdir=src)
        _as_if_recorded_elsewhere(golden(src))
        build({"index.rst": chapter(32)}, srcdir=src, freshenv=True,
              parallel=2 if folder != "one" else 0)
        made.append([p.read_bytes() for p in sorted(src.glob("_build/**/tlstages-report.*"))])
    assert len(made[0]) == 2 and made[0] == made[1]


def _big_report(directives: int) -> Report:
    report = Report("html", "tlstages snapshots accept book", directives_total=directives)
    for i in range(directives):
        entry = report.directive(f"k{i:05}", "chapters/a.rst", i + 1)
        report.add(entry, "changed", "num_stages=2", "CUDA +900 -900 lines",
                   detail=tuple(f"+ line {n} " + "x" * 80 for n in range(DIFF_LINES + 1)))
    return report


def test_a_report_fits_a_job_summary_however_many_directives_drift() -> None:
    out = drift_render.markdown(_big_report(3000))
    assert len(out.encode()) <= drift_render.MAX_BYTES
    kept = out.count("#### ")
    assert 0 < kept < 3000
    assert f"... and {3000 - kept} more directives with {3000 - kept} findings, not shown" in out
    data = _big_report(3000).as_json()
    assert len(data.encode()) <= drift_render.MAX_BYTES
    again = from_json(data)
    left = again.left_out[0]
    assert 0 < left < 3000 and len(again.directives) == 3000 - left
    assert again.verdict() == _big_report(3000).verdict()  # the directives left out counted
    assert "3000 of 3000 directives changed" in again.verdict()
    assert f"... and {left} more directives with {left} findings" in drift_render.markdown(again)


def test_kernel_text_is_escaped_once_and_renders_as_written() -> None:
    report = Report("html", "tlstages snapshots accept book", directives_total=1)
    entry = report.directive("k_1", "chapters/a*b.rst", 3)
    tricky = "x | y `tick` <b>&amp;</b> *not bold*"
    report.add(entry, "changed", "block_K=`32`", tricky, detail=("-a <b>", "+b ```"))
    report.add(entry, "assert", "num_stages=2", tricky, line=9)
    page = rendered(drift_render.markdown(report))
    assert table_rows(page)[1] == ["block_K=`32`", tricky]
    assert [li.astext() for li in page.iter("li")] == [f"line 9, num_stages=2: {tricky}"]
    assert page.iter("h4")[0].astext() == "k_1 at chapters/a*b.rst:3"
    details = page.iter("details")[0]
    assert details.iter("code")[0].astext() == "-a <b> +b ```"
    assert not page.iter("b") and not page.iter("em")


def test_stale_numbers_unguarded_facts_and_new_snapshots(build, tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    src = tmp_path / "book"
    first = build({"index.rst": PAGE}, srcdir=src)
    assert "**New snapshots** (recorded by this build): `_tlstages/snapshots/timed.json`" \
        in report_md(src)
    write(src, bench_file(first.app, {2: 0.2, 3: 0.125}))
    edited = PAGE.replace("block_K=64", "block_K=32")
    assert build({"index.rst": edited}, srcdir=src).app.statuscode == 1
    said = rendered(report_md(src)).astext()
    assert ("Stale benchmark numbers num_stages 2 3: the numbers measured on Test GPU are "
            "for another kernel or TileLang; run tlstages bench again") in said
    assert cli.main(["snapshots", "accept", str(src)]) == 0

    _without_gemm(src, "timed")
    monkeypatch.setenv("CI", "true")
    assert build({"index.rst": edited}, srcdir=src, freshenv=True).app.statuscode == 1
    md = report_md(src)
    assert md.splitlines()[2] == (
        "**0 of 1 directive changed; 1 with a snapshot that does not guard what the page "
        f"shows; 2 variants matched their snapshots, recorded with TileLang "
        f"{tilelang_version()}.**")
    said = rendered(md).astext()
    assert ("Shown but not guarded by the snapshot _tlstages/snapshots/timed.json does not "
            "keep gemm (read by the gemm part)") in said
    assert "Stale benchmark numbers" in said  # said, never failed


def test_a_job_summary_that_cannot_be_written_is_a_warning(build, tmp_path, monkeypatch) -> None:
    src = tmp_path / "book"
    build({"index.rst": chapter()}, srcdir=src)
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path))  # a folder: no file to append to
    again = build({"index.rst": chapter()}, srcdir=src)
    assert again.app.statuscode == 0
    assert f"GITHUB_STEP_SUMMARY {tmp_path}: the report could not be added" in again.warnings
    assert "[tlstages.report]" in again.warnings
    assert report_md(src).startswith("**tl-pipeline, html build:** No drift")
