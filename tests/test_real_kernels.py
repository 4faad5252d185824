"""Kernels in every style TileLang's authors write, used as their authors wrote them.

The kernels in ``tests/kernels/styles`` are our own, one per style: names used only in the
prim_func's annotations, a helper module beside the kernel, an eager ``T.const`` GEMM,
``T.macro`` helpers, ``@autotune`` over ``@tilelang.jit`` with ``out_idx`` and dtype
objects, a ``__main__`` block that would need a GPU. Each must lower through ``:file:``
exactly as its module lowers when imported normally.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from .conftest import CONF, Built, build_once, write_project
from .kernels import read

STYLES = Path(__file__).parent / "kernels" / "styles"

# (file, factory params, num_stages): every variant must lower.
KERNELS = {
    "annot": ("annot_only.py", "M=256 N=256 K=256 blk_m=64 blk_n=64 blk_k=32", "2 3"),
    "helper": ("helper_user.py", "M=256 N=256 K=256", "2"),
    "eager": ("eager_gemm.py", "M=256 N=256 K=256 in_dtype=T.bfloat16", "2 3"),
    "macro": ("macro_kernel.py", "M=256 N=256 K=256 bm=64 bn=64 bk=32", "2"),
    "autotune": ("autotuned_bmm.py", "batch=2 M=256 N=256 K=256", "2"),
    "gemv": ("gemv_main.py", "N=256 K=512", "2"),
    "written": ("eager_written.py", "N=1024 K=1024", ""),  # its depth as written: 3
    # Two T.Kernel blocks in one prim_func (a split pass and its combine pass).
    "two": ("split_k_two_kernels.py",
            "M=256 N=256 K=256 block_M=64 block_N=64 block_K=32 splits=2", "1 2"),
}


def _page() -> str:
    parts = ["Styles\n======\n"]
    for name, (file, params, stages) in KERNELS.items():
        given = f"   :num-stages: {stages}\n" if stages else ""
        parts.append(f".. tl-pipeline:: {name}\n   :file: kernels/{file}\n   :name: {name}\n"
                     f"{given}   :params: {params}\n   :show: shared sync\n")
    return "\n".join(parts)


def _project(srcdir: Path) -> None:
    shutil.copytree(STYLES, srcdir / "kernels", dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("__pycache__"))


def _one_directive(tmp_path: Path, file: str, params: str, stages: str) -> Built:
    """The styles in a project of their own, one directive lowering ``file``."""
    src = tmp_path / "src"
    _project(src)
    return build_once(src, {"index.rst": f"T\n=\n\n.. tl-pipeline::\n   :file: kernels/{file}\n"
                                          f"   :params: {params}\n   :num-stages: {stages}\n"})


@pytest.fixture(scope="module")
def styles(tmp_path_factory: pytest.TempPathFactory) -> Built:
    srcdir = tmp_path_factory.mktemp("styles")
    _project(srcdir)
    return build_once(srcdir, {"index.rst": _page()})


def test_every_style_lowers_through_file(styles: Built) -> None:
    assert styles.warnings == ""
    for index, name in enumerate(KERNELS):
        rows = styles.table("tl-summary", index=index)
        # A row per kernel: the split-K's code holds its combine kernel too.
        kernels = 2 if name == "two" else 1
        assert len(rows) == 1 + kernels * (len(KERNELS[name][2].split()) or 1), name
        # Every variant's shared memory against sm_80's limit: it lowered, facts and all.
        assert all(" B (" in row[3] and row[3].endswith("%)") for row in rows[1:]), (name, rows)


def test_eager_kernel_takes_const_sizes_and_a_dtype(styles: Built) -> None:
    shared = styles.table("tl-shared", index=list(KERNELS).index("eager"))
    # a_s is (block_M, block_K) = (128, 32) bfloat16, versioned by num_stages.
    assert shared[1][1].startswith("(2, 128, 32) bfloat16"), shared
    assert shared[1][2].startswith("(3, 128, 32) bfloat16"), shared


def test_subscripted_tensors_and_a_written_depth(styles: Built) -> None:
    """``x: T.Tensor[(K,), dtype]`` marks a tensor as ``T.Tensor((K,), dtype)`` does, and
    the loop's own ``num_stages=3`` is the one variant."""
    shared = styles.table("tl-shared", index=list(KERNELS).index("written"))
    assert shared[0] == ["buffer", "num_stages=3 (as written)"]
    assert shared[1] == ["w_s", "(3, 32, 128) float16, 24,576 B"]


def test_a_guarded_loop_body_renders_every_part(tmp_path: Path) -> None:
    """A body the pipeliner schedules as fewer statements than it reads: a binding it
    evaluates again with each statement that reads it (no stage of its own), then a
    guarded block it splits into one guarded statement per statement. Each statement is
    on its line with its own stage, and the figure is drawn."""
    built = _one_directive(tmp_path, "guarded_tiles.py", "M=256 N=256 K=512 S=8", "2 3")
    assert built.warnings == ""
    schedule = {row[0]: row[1:] for row in built.table("tl-annotations")[1:]}
    assert schedule["k0 = Tiles[s] * block_K"] == [
        "guarded_tiles.py:18", "with its readers: stage 0, 1",
        "with its readers: stage 0, 2"]
    assert schedule["T.copy(A[by * block_M, k0], A_s)"] == [
        "guarded_tiles.py:20", "stage 0, order 0", "stage 0, order 0"]
    assert schedule["T.gemm(A_s, B_s, acc)"] == [
        "guarded_tiles.py:22", "stage 1, order 2", "stage 2, order 2"]
    figures = built.part("tl-figures").astext()
    assert "not drawn" not in figures and "Pipeline schedule, num_stages = 3" in figures


def test_helper_beside_the_kernel_sets_the_tile(styles: Built) -> None:
    shared = styles.table("tl-shared", index=list(KERNELS).index("helper"))
    # tile_helpers.k_tile_for(256) is 64 for 16-bit data.
    assert shared[1][1].startswith("(2, 64, 64) float16"), shared


def test_a_wrong_eager_parameter_lists_what_the_factory_takes(tmp_path: Path) -> None:
    built = _one_directive(tmp_path, "eager_gemm.py", "M=256 N=256 K=256 block_Q=64", "2")
    assert "index.rst:4" in built.warnings or "index.rst:" in built.warnings
    assert "takes no parameter block_Q" in built.warnings
    assert "M, N, K" in built.warnings and "block_K" in built.warnings


def _status_lines(built: Built, marker: str) -> list[str]:
    return [line for line in built.status.splitlines() if marker in line]


def test_editing_a_helper_relowers_exactly_its_importers(tmp_path: Path, own_cache: Path) -> None:
    src = tmp_path / "src"
    _project(src)
    page = {"index.rst": _page().split("\n.. tl-pipeline:: eager")[0]}  # annot, helper
    # The edit changes what the page shows: that is a drift, tested elsewhere.
    conf = CONF + 'tlstages_snapshots = "off"\n'
    first = build_once(src, page, conf=conf)
    assert first.warnings == ""
    helpers = src / "kernels" / "tile_helpers.py"
    helpers.write_text(helpers.read_text().replace("tile = 1024 // elem_bits",
                                                   "tile = 512 // elem_bits"))
    second = build_once(src, page, conf=conf)
    assert second.warnings == ""
    lowered = _status_lines(second, ": lowered in")
    assert lowered and all(" helper " in line for line in lowered), lowered
    assert _status_lines(second, "annot ns2") and "cached" in _status_lines(
        second, "annot ns2")[0]
    # The page shows the helper's new tile: 512 // 16 = 32.
    shared = second.table("tl-shared", index=1)
    assert shared[1][1].startswith("(2, 64, 32) float16"), shared


def test_helpers_do_not_leak_between_kernels(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Two folders, each with its own ``tiles.py``: one worker lowers both kernels."""
    kernel = read("helpers/gemm_with_tiles.py")  # imports BLOCK_K from its tiles.py
    src = tmp_path / "src"
    for folder, block_k in (("one", 32), ("two", 64)):
        write_project(src, {f"{folder}/gemm.py": kernel,
                            f"{folder}/tiles.py": f"BLOCK_K = {block_k}\n"}, CONF)
    page = "".join(f".. tl-pipeline:: {folder}\n   :file: {folder}/gemm.py\n   :name: {folder}\n"
                   "   :num-stages: 2\n   :params: M=256 N=256 K=256\n   :show: shared\n\n"
                   for folder in ("one", "two"))
    monkeypatch.setenv("TLSTAGES_JOBS", "1")  # one worker lowers both
    built = build_once(src, {"index.rst": "Leak\n====\n\n" + page})
    assert built.warnings == ""
    assert built.table("tl-shared", index=0)[1][1].startswith("(2, 64, 32) float16")
    assert built.table("tl-shared", index=1)[1][1].startswith("(2, 64, 64) float16")


def test_inline_kernels_import_from_the_python_path(build) -> None:
    conf = CONF + 'tlstages_python_path = ["helpers"]\n'
    source = (STYLES / "helper_user.py").read_text()
    files = {"helpers/tile_helpers.py": (STYLES / "tile_helpers.py").read_text(),
             "index.rst": "Inline\n======\n\n.. tl-pipeline::\n   :num-stages: 2\n"
                          "   :params: M=256 N=256 K=256\n   :show: shared\n\n"
                          + textwrap.indent(source, "   ")}
    built = build(files, conf=conf)
    assert built.warnings == ""
    assert built.table("tl-shared")[1][1].startswith("(2, 64, 64) float16")


def test_tlstages_lower_gives_the_same_facts(styles: Built) -> None:
    kernel = Path(styles.app.srcdir) / "kernels" / "eager_gemm.py"
    out = subprocess.run(
        [sys.executable, "-m", "sphinx_tlstages", "lower", str(kernel), "--params", "M=256",
         "N=256", "K=256", "in_dtype=T.bfloat16", "--num-stages", "2", "3", "--json"],
        capture_output=True, text=True, check=True).stdout
    results = json.loads(out)
    assert [b["shape"] for b in results["2"]["shared"]][:1] == [[2, 128, 32]]
    assert results["3"]["shared"][0]["dtype"] == "bfloat16"


def test_tlstages_lower_imports_from_the_kernels_folder(styles: Built) -> None:
    """As a :file: kernel does: ``helper_user.py`` imports ``tile_helpers`` beside it."""
    kernel = Path(styles.app.srcdir) / "kernels" / "helper_user.py"
    done = subprocess.run(
        [sys.executable, "-m", "sphinx_tlstages", "lower", str(kernel), "--params", "M=256",
         "N=256", "K=256", "--num-stages", "2", "--json"],
        capture_output=True, text=True, cwd=str(kernel.parent.parent.parent))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["2"]["shared"][0]["shape"] == [2, 64, 64]


def test_a_kernel_with_future_annotations_is_told_why(tmp_path: Path) -> None:
    """Such a kernel fails when imported normally too; the message says what to remove."""
    src = tmp_path / "src"
    _project(src)
    text = (STYLES / "annot_only.py").read_text()
    (src / "kernels" / "future.py").write_text(text.replace(
        "import tilelang\n", "from __future__ import annotations\n\nimport tilelang\n", 1))
    built = build_once(src, {"index.rst": "F\n=\n\n.. tl-pipeline::\n   :file: kernels/future.py\n"
                                          f"   :params: {KERNELS['annot'][1]}\n"
                                          "   :num-stages: 2\n"})
    assert "NameError" in built.warnings
    assert "from __future__ import annotations" in built.warnings
    assert "future.py:" in built.warnings  # at the kernel line that raised
