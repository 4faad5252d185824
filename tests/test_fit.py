"""The fit part with real lowering: which depth fits which GPU, the lowerings it shares
with the page and the cache, a kernel's own tuning list, ``fit[...]`` claims, every
builder, and ``tlstages lower --show fit``."""

from __future__ import annotations

import io
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from sphinx_tlstages.cli.lower import lower_file
from sphinx_tlstages.ext.state import build_state

from .conftest import Built, build_once
from .kernels import GEMM, GEMM_PARAMS, HERE, rst

SEED = rst(GEMM, "The seed GEMM on the GPUs people have", num_stages="3 4",
           params=GEMM_PARAMS, name="seed-fit", show="fit",
           assert_='fit["H100"].deepest == 4 and fit["RTX 4090"].deepest == 3\n'
                   '      fit["A100"].fits and fit["sm_121"].limit == 101376')
TUNED = (".. tl-pipeline:: A GEMM and its own tuning list\n"
         "   :file: kernels/tuned_gemm.py\n"
         "   :name: tuned\n"
         "   :num-stages: 2 3\n"
         "   :params: M=1024 N=1024 K=1024\n"
         "   :show: fit\n"
         "   :assert: fit[\"A100\"].tried == (num_stages == 3)\n")
REUSE = rst(GEMM, "Ampere read from sm_86, Hopper from its own", num_stages="2",
            target="sm_86 sm_90a", params=GEMM_PARAMS, name="reuse", show="fit resources")
PAGE = "GPUs\n====\n\n" + "\n".join((SEED, TUNED, REUSE))
GPUS = ["A100 (sm_80): 166,912 B", "A10, RTX 3090 (sm_86): 101,376 B",
        "L4, RTX 4090 (sm_89): 101,376 B", "H100, H200 (sm_90a): 232,448 B",
        "B200 (sm_100a): 232,448 B", "RTX 5090 (sm_120), GB10 (sm_121): 101,376 B",
        "MI300X, MI325X (gfx942): 65,536 B", "MI350X, MI355X (gfx950): 163,840 B",
        "Apple M-series (metal): 32,768 B"]


def _project(srcdir: Path, page: str) -> dict[str, str]:
    (srcdir / "kernels").mkdir(parents=True, exist_ok=True)
    shutil.copy(HERE / "fit" / "tuned_gemm.py", srcdir / "kernels")
    return {"index.rst": page}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, shared_cache: Path) -> Built:
    src = tmp_path_factory.mktemp("fit") / "src"
    return build_once(src, _project(src, PAGE), confoverrides={"tlstages_snapshots": "off"})


def _notes(built: Built, index: int) -> str:
    notes = built.part("tl-fit", index=index).iter("p", cls="tl-note")
    return " ".join(re.sub(r"\s+", " ", p.astext()) for p in notes)


def test_builds_without_a_warning_and_every_claim_holds(built: Built) -> None:
    # sm_86 at two stages fits; nothing the fit part finds is a warning: other GPUs'
    # limits are the table's to show, not the build's to fail on.
    assert built.warnings == ""
    assert built.app.statuscode == 0


def test_each_depth_against_each_gpus_limit(built: Built) -> None:
    rows = built.table("tl-fit")
    assert rows[0] == ["variant", *GPUS]
    by_row = {row[0]: row[1:] for row in rows[1:]}
    assert by_row["num_stages=3"] == [
        "fits (59 %)", "fits (97 %)", "fits (97 %)", "fits (42 %)", "fits (42 %)",
        "fits (97 %)", "fits (50 %)", "fits (60 %)", "misses by 65,536 B"]
    # Ampere's 99 KiB parts miss four stages by what the sm_80 lowering needs beyond it;
    # sm_120's own lowering holds 64 B more (its TMA barriers).
    four = by_row["num_stages=4"]
    assert four[1] == four[2] == "misses by 29,696 B" and four[5] == "misses by 29,760 B"
    assert four[6] == "fits (50 %)"  # gfx942: TileLang does not pipeline there
    assert by_row["deepest that fits"] == ["num_stages=4", "num_stages=3", "num_stages=3",
                                           "num_stages=4", "num_stages=4", "num_stages=3",
                                           "num_stages=4", "num_stages=4", "none"]


def test_the_part_says_which_lowering_each_column_reads(built: Built) -> None:
    notes = _notes(built, 0)
    assert ("A100, A10, RTX 3090, L4 and RTX 4090 read the page's own sm_80 variants "
            "(TileLang lowers sm_80, sm_86 and sm_89 alike)") in notes
    assert "H100 and H200 read sm_90a, 2 lowerings for this table" in notes
    assert ("RTX 5090 and GB10 read sm_120, 2 lowerings for this table (TileLang lowers "
            "sm_120 and sm_121 alike)") in notes
    assert "In all, 12 lowerings beyond the page's own, cached as the page's are." in notes
    # Lowered through the batch and the cache, as the page's own variants are.
    state = build_state(built.app)
    assert state is not None
    spec = next(s for s in _specs(built) if s.name == "seed-fit")
    assert spec.fit is not None and len(spec.fit.extra) == 12
    assert all(state.result(v).get("ok") for v in spec.lowerings)


def _specs(built: Built) -> list[Any]:
    from sphinx_tlstages.ext.collector import all_directives
    return all_directives(built.app.env)


def test_the_kernels_own_tuning_list_is_audited(built: Built) -> None:
    rows = built.table("tl-fit", index=1)
    assert rows[0][:2] == ["variant", "in the tuning list"]
    by_row = {row[0]: row[1:] for row in rows[1:]}
    # Depth 4 is no depth of the page: the tuning list tries it, so it is a row too.
    assert [by_row[f"num_stages={d}"][0] for d in (2, 3, 4)] == ["no", "yes", "yes"]
    assert by_row["num_stages=2"][1] == "fits (39 %) (never tried)"
    assert by_row["num_stages=4"][2] == "misses by 29,696 B (tried)"  # A10, RTX 3090
    assert by_row["num_stages=3"][-1] == "misses by 65,536 B (tried)"  # Apple
    assert by_row["num_stages=2"][-1] == "misses by 32,768 B"  # not tried: no mark
    notes = _notes(built, 1)
    assert ("The kernel's tuning list, the @autotune configurations (tuned_gemm.py:11), "
            "tries num_stages 3 and 4.") in notes
    assert "num_stages=3 cannot run on Apple M-series." in notes
    assert ("num_stages=4 cannot run on A10, RTX 3090, L4, RTX 4090, RTX 5090, GB10 and "
            "Apple M-series.") in notes
    assert "num_stages=2 fits A100, A10, RTX 3090," in notes and "is never tried" in notes
    assert "Only the depths are audited" in notes
    assert ("A100, A10, RTX 3090, L4 and RTX 4090 read the page's own sm_80 variants and "
            "1 lowering of the depths only the tuning list tries") in notes


def test_columns_read_the_pages_own_targets_and_blocks_come_from_its_compiles(
        built: Built) -> None:
    rows = built.table("tl-fit", index=2)
    two = rows[1][1:]
    assert two[1] == "fits (65 %), 1 block/SM"  # A10: the page's own sm_86 compile
    assert two[0].startswith("fits (39 %), ") and "block" in two[0]  # A100: sm_86 registers
    assert two[3].startswith("fits (28 %), ") and "block" in two[3]  # H100: its own
    notes = _notes(built, 2)
    assert "A100, A10, RTX 3090, L4 and RTX 4090 read the page's own sm_86 variants" in notes
    assert "H100 and H200 read the page's own sm_90a variants" in notes
    assert "A100, L4 and RTX 4090 take the registers of the sm_86 compile" in notes
    assert "In all, 5 lowerings beyond the page's own" in notes


def test_latex_and_text_builders_write_the_table(tmp_path: Path) -> None:
    page = "GPUs\n====\n\n" + SEED
    for name, suffix in (("latex", "tests.tex"), ("text", "index.txt")):
        src = tmp_path / name / "src"
        result = build_once(src, _project(src, page), buildername=name,
                            confoverrides={"tlstages_snapshots": "off"})
        assert result.warnings == ""
        text = re.sub(r"\s+", " ", (result.outdir / suffix).read_text(encoding="utf-8"))
        assert "Which depth fits which GPU" in text
        # Nine GPUs split across the line's width, each table titled by those it holds.
        dash = r"\textendash{}" if name == "latex" else "–"
        assert f"GPUs 1{dash}5 of 9" in text and f"GPUs 6{dash}9 of 9" in text
        assert "misses by 29,696" in text and "12 lowerings beyond the page" in text


def test_a_false_fit_claim_fails_at_its_line(tmp_path: Path) -> None:
    page = "GPUs\n====\n\n" + SEED.replace('fit["H100"].deepest == 4',
                                           'fit["H100"].deepest == 3')
    src = tmp_path / "src"
    result = build_once(src, _project(src, page), confoverrides={"tlstages_snapshots": "off"})
    assert result.app.statuscode == 1
    assert "fit[\"H100\"].deepest = 4" in result.warnings


def test_tlstages_lower_prints_the_table(tmp_path: Path) -> None:
    kernel = tmp_path / "gemm.py"
    kernel.write_text(GEMM, encoding="utf-8")
    out = io.StringIO()
    code = lower_file(kernel, None, GEMM_PARAMS.split(), [3, 4], ["sm_80"], None, False,
                      out=out, show=["fit"])
    text = out.getvalue()
    assert code == 0, text
    assert "Which depth fits which GPU" in text
    line = next(line for line in text.splitlines() if line.startswith("num_stages=4"))
    assert "misses by 29,696 B" in line and "misses by 98,304 B" in line
    assert "In all, 12 lowerings beyond the page's own" in text


# ---- at both ends of the TileLang range ------------------------------------------------

@pytest.mark.smoke
def test_targets_of_one_family_lower_alike(tmp_path: Path) -> None:
    """What lets one lowering answer for several targets: sm_80, sm_86 and sm_89 (and
    sm_120 and sm_121) give the same result, the same passes run in the same order,
    but for the IR's digests, whose IR names the target from tirx.BindTarget on."""
    kernel = tmp_path / "gemm.py"
    kernel.write_text(GEMM, encoding="utf-8")
    out = io.StringIO()
    targets = ["sm_80", "sm_86", "sm_89", "sm_120", "sm_121"]
    assert lower_file(kernel, None, GEMM_PARAMS.split(), [3], targets, None, True,
                      out=out) == 0
    found = json.loads(out.getvalue())

    def facts(arch: str) -> dict[str, Any]:
        result: dict[str, Any] = found[f"target={arch},num_stages=3"]
        kept = {k: v for k, v in result.items()
                if k not in ("planned_ir", "pass_fingerprints", "seconds")}
        return {**kept, "runs": [run.split()[0] for run in result["pass_fingerprints"]]}

    assert facts("sm_80") == facts("sm_86") == facts("sm_89")
    assert facts("sm_120") == facts("sm_121") != facts("sm_80")


@pytest.mark.smoke
def test_the_smallest_fit_page(tmp_path: Path) -> None:
    src = tmp_path / "src"
    page = "GPUs\n====\n\n" + rst(GEMM, num_stages="3", target="sm_86", params=GEMM_PARAMS,
                                  show="fit", assert_='fit["A100"].fits')
    result = build_once(src, _project(src, page), confoverrides={"tlstages_snapshots": "off"})
    assert result.warnings == "" and result.app.statuscode == 0
    rows = result.table("tl-fit")
    assert rows[1][:3] == ["num_stages=3", "fits (59 %)", "fits (97 %)"]
    assert "5 lowerings beyond the page's own" not in _notes(result, 0)
    assert "In all, 6 lowerings beyond the page's own" in _notes(result, 0)
