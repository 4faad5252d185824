"""Sweeps beyond num_stages (``:sweep:``) and several targets: a matrix of variants."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .conftest import Built, build_once
from .kernels import GEMM, rst

BASE = "M=1024 N=1024 K=1024 block_M=128 block_N=128 threads=128"

SWEEP = rst(GEMM, "Sweep", num_stages="2 3", sweep="block_K=32,64", params=BASE,
            name="sweep", assert_='shared["A_shared"].shape == (num_stages, 128, '
                                  'params["block_K"])')
TARGETS = rst(GEMM, "Targets", num_stages="2 3", target="sm_80 sm_90a",
              params=BASE + " block_K=64", name="targets", show="annotations sync diff cuda")
PAGE = "Matrix\n======\n\n" + SWEEP + "\n" + TARGETS


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, shared_cache: Path) -> Built:
    return build_once(tmp_path_factory.mktemp("matrix") / "src", {"index.rst": PAGE},
                      confoverrides={"tlstages_snapshots": "update"})


def test_builds_clean_and_the_assertion_holds_in_every_cell(built: Built) -> None:
    assert built.warnings == ""


def test_an_assertion_false_in_some_cells_names_each(build) -> None:
    page = "T\n=\n\n" + rst(GEMM, num_stages="2", sweep="block_K=32,64", params=BASE,
                            name="claims", assert_='shared["A_shared"].shape[2] == 64')
    result = build({"index.rst": page})
    assert "index.rst:9: ERROR: claims: block_K=32, num_stages=2: assertion " \
           "'shared[\"A_shared\"].shape[2] == 64' is false" in result.warnings
    assert "block_K=64" not in result.warnings


def test_sweep_gives_one_row_per_combination_num_stages_fastest(built: Built) -> None:
    rows = built.table("tl-summary")
    assert rows[0][0] == "variant"
    assert [r[0] for r in rows[1:]] == ["block_K=32, num_stages=2", "block_K=32, num_stages=3",
                                        "block_K=64, num_stages=2", "block_K=64, num_stages=3"]
    # 2 buffers x num_stages x block_M x block_K halves.
    assert [r[3].split(" B")[0] for r in rows[1:]] == ["32,768", "49,152", "65,536", "98,304"]


def test_swept_values_reach_the_compiler(built: Built) -> None:
    rows = built.table("tl-shared")
    assert rows[0][1:] == ["block_K=32, num_stages=2", "block_K=32, num_stages=3",
                           "block_K=64, num_stages=2", "block_K=64, num_stages=3"]
    assert rows[1][1:] == ["(2, 128, 32) float16, 16,384 B", "(3, 128, 32) float16, 24,576 B",
                           "(2, 128, 64) float16, 32,768 B", "(3, 128, 64) float16, 49,152 B"]


def test_caption_names_the_sweep(built: Built) -> None:
    caption = built.part("tl-caption").astext()
    assert f"{BASE}, sweeping block_K=32,64" in caption


def test_diffs_run_along_num_stages_within_each_group(built: Built) -> None:
    page = built.part("tl-pipeline")
    titles = [s.astext() for s in page.iter("summary")]
    assert titles[0].startswith("block_K=32: num_stages 2 → 3: +")
    assert titles[1].startswith("block_K=64: num_stages 2 → 3: +")
    assert "block_K=64, num_stages=3: full CUDA, 136 lines" in titles


def test_several_targets(built: Built) -> None:
    rows = built.table("tl-annotations", index=1)
    assert rows[0][2:] == ["sm_80, num_stages=2", "sm_80, num_stages=3",
                           "sm_90a, num_stages=2", "sm_90a, num_stages=3"]
    copy_a = rows[1]
    assert copy_a[2:] == ["stage 0, order 0", "stage 0, order 0", "producer", "producer"]
    caption = built.part("tl-caption", index=1).astext()
    assert "targets sm_80, sm_90a" in caption
    sync = {r[0]: r[1:] for r in built.table("tl-sync", index=1)}
    assert sync["tl::cp_async_gs<N>"] == ["4", "6", "0", "0"]
    assert sync["tl::tma_load"] == ["0", "0", "2", "2"]
    titles = [s.astext() for s in built.part("tl-pipeline", index=1).iter("summary")]
    assert titles[0].startswith("sm_80: num_stages 2 → 3")
    assert titles[1].startswith("sm_90a: num_stages 2 → 3")


def test_downloads_and_snapshot_keys_name_each_cell(built: Built) -> None:
    names = sorted(p.name for p in (built.outdir / "_tlstages").rglob("*.cu"))
    assert "sweep-block_K32-ns2.cu" in names and "targets-sm_90a-ns3.cu" in names
    snapshot = json.loads(Path(built.app.srcdir, "_tlstages/snapshots/sweep.json").read_text())
    assert sorted(snapshot["variants"]) == ["block_K=32,num_stages=2", "block_K=32,num_stages=3",
                                            "block_K=64,num_stages=2", "block_K=64,num_stages=3"]
    assert snapshot["sweep"] == {"block_K": ["32", "64"]}
    assert "block_K" not in snapshot["params"]
    targets = json.loads(Path(built.app.srcdir, "_tlstages/snapshots/targets.json").read_text())
    assert targets["target"] == [{"arch": "sm_80", "kind": "cuda"},
                                 {"arch": "sm_90a", "kind": "cuda"}]


def test_drift_in_a_cell_is_reported_by_its_coordinates(build, tmp_path) -> None:
    src = tmp_path / "src"
    page = "T\n=\n\n" + rst(GEMM, num_stages="2", sweep="block_K=32,64", params=BASE,
                            name="drift")
    build({"index.rst": page}, srcdir=src, confoverrides={"tlstages_snapshots": "update"})
    changed = build({"index.rst": page.replace("block_K=32,64", "block_K=32,128")}, srcdir=src,
                    confoverrides={"tlstages_snapshots": "check"})
    assert "block_K=128,num_stages=2: new" in changed.warnings
    assert "block_K=64,num_stages=2: no longer lowered" in changed.warnings
    assert "sweep {'block_K': ['32', '64']} -> {'block_K': ['32', '128']}" in changed.warnings


# Lines: 1-3 title, 4 the directive, then :params: and the options in the order given.
@pytest.mark.parametrize(("options", "message", "line"), [
    ({"sweep": "num_stages=1,2"}, ":sweep: num_stages is swept by :num-stages:", 6),
    ({"sweep": "block_K=32,32"}, ":sweep: block_K lists a value twice", 6),
    ({"sweep": "block_K="}, ":sweep: block_K has no value", 6),
    ({"sweep": "block_K=32, nope"}, ":sweep: the values of block_K, '32, nope', are not", 6),
    ({"sweep": "threads=128,256", "params": BASE + " block_K=64"},
     ":sweep: threads is also given in :params:", 6),
    ({"sweep": "nope=1,2", "params": BASE + " block_K=64"},
     "factory 'matmul' takes no parameter nope", 4),
    ({"target": "sm_80 sm_80", "params": BASE + " block_K=64"},
     ":target: target 'sm_80' is listed twice", 6),
    ({"passes": "Simplify#0", "params": BASE + " block_K=64"},
     ":passes: 'Simplify#0' is not a pass name (NAME or NAME#RUN, e.g. Simplify#3)", 6),
    ({"num_stages": "0 1 2 3 4 5 6", "sweep": "block_K=16,32,64,128",
      "target": "sm_80 sm_90a"},
     ":sweep: 56 variants (2 targets x 4 swept combinations x 7 num_stages); "
     "at most 48", 7),
])
def test_bad_matrix_options_are_errors_at_their_line(build, options, message, line) -> None:
    page = "T\n=\n\n" + rst(GEMM, **{"params": BASE, **options})
    result = build({"index.rst": page})
    assert message in result.warnings
    assert f"index.rst:{line}: WARNING" in result.warnings
    assert "tl-error" in result.html()
