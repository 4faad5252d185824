"""The resources part: NVIDIA's compiler's registers, spills, shared memory, occupancy and
SASS counts per variant.

The parsers and the occupancy calculator are tested on compiler output recorded from the
seed GEMM (``tests/fixtures/nvcc``: nvcc 13.5.37 with TileLang 0.1.15's flags); the
Sphinx builds lower and compile for real where the ``resources`` extra is installed, and
are skipped where it is not. A missing toolkit is configured (``tlstages_toolkit =
"none"``), never faked.
"""

from __future__ import annotations

import gzip
import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from sphinx_tlstages.core.hardware import sass_lines
from sphinx_tlstages.core.hardware.occupancy import LIMITS, limits_for, occupancy
from sphinx_tlstages.core.hardware.resources import (
    ReportError,
    cuda_register_budgets,
    parse_ptxas,
    register_budgets,
    resources,
    sass_counts,
    spill_sentence,
    strip_encodings,
)
from sphinx_tlstages.core.plan.spec import VariantSpec
from sphinx_tlstages.core.plan.targets import parse_target
from sphinx_tlstages.core.plan.toolkit import Toolkit, find
from sphinx_tlstages.core.results import fact_table

from .conftest import Built, build_once
from .kernels import GEMM, GEMM_PARAMS, read, rst

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "nvcc"
TOOLKIT = find("auto")
# Where the compiler came without nvdisasm (a CUDA install may), there are no SASS counts.
SASS = TOOLKIT is not None and (Path(TOOLKIT.nvcc).with_name("nvdisasm").is_file()
                                or shutil.which("nvdisasm") is not None)
# The test extra installs cuobjdump beside nvcc: one test compares its listings.
CUOBJDUMP = TOOLKIT is not None and Path(TOOLKIT.nvcc).with_name("cuobjdump").is_file()
# Under CI the extra is installed (nox -s tests): there a missing compiler fails the
# builds below instead of skipping them, so that they cannot silently stop running.
CI = os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")
needs_toolkit = pytest.mark.skipif(TOOLKIT is None and not CI, reason="no NVIDIA compiler "
                                   "installed (pip install sphinx-tlstages[resources])")


def recorded(name: str) -> str:
    path = FIXTURES / name
    if path.suffix == ".gz":
        return gzip.decompress(path.read_bytes()).decode()
    return path.read_text(encoding="utf-8")


# -- the parsers, on recorded output --------------------------------------------------------

def test_ptxas_report_of_the_seed_gemm() -> None:
    assert parse_ptxas(recorded("sm_80-ns1.ptxas")) == {
        "registers": 225, "stack": 0, "spill_stores": 0, "spill_loads": 0,
        "static_shared": 0, "barriers": 1}
    # Hopper: the mbarrier ring is static shared memory (ptxas's figure, which the driver
    # reports too; cuobjdump's resource dump says 1 KiB more).
    hopper = parse_ptxas(recorded("sm_90a-ns3.ptxas"))
    assert (hopper["registers"], hopper["static_shared"]) == (240, 1024)


def test_ptxas_report_of_a_tile_too_large_for_the_registers() -> None:
    # 256x128 accumulator tile on 128 threads: 256 floats per thread, over the 255 limit.
    found = parse_ptxas(recorded("sm_80-256x128-ns2.ptxas"))
    assert found == {"registers": 255, "stack": 792, "spill_stores": 1212,
                     "spill_loads": 1216, "static_shared": 0, "barriers": 1}
    assert "spills 1212 bytes" in str(spill_sentence(found))
    assert spill_sentence(parse_ptxas(recorded("sm_80-ns1.ptxas"))) is None


def test_a_report_without_one_entry_function_is_refused() -> None:
    with pytest.raises(ReportError, match="no entry function"):
        parse_ptxas("ptxas info    : 0 bytes gmem\n")
    twice = recorded("sm_80-ns1.ptxas") * 2
    with pytest.raises(ReportError, match=r"holds 2 kernels \(kernel_kernel, kernel_kernel\)"):
        parse_ptxas(twice)


def test_static_sass_counts_of_the_seed_gemm() -> None:
    ampere = sass_counts(recorded("sm_80-ns1.sass.gz"))
    assert {k: ampere[k] for k in ("HMMA", "LDGSTS", "LDSM", "DEPBAR", "BAR", "HGMMA")} == {
        "HMMA": 256, "LDGSTS": 32, "LDSM": 64, "DEPBAR": 2, "BAR": 3, "HGMMA": 0}
    hopper = sass_counts(recorded("sm_90a-ns3.sass.gz"))
    assert (hopper["HGMMA"], hopper["UTMALDG"], hopper["HMMA"]) == (16, 32, 0)
    assert hopper["total"] > hopper["HGMMA"]


def test_setmaxnreg_budgets_of_the_cuda_are_those_of_the_sass() -> None:
    assert register_budgets(recorded("sm_90a-ns3.sass.gz")) == {"alloc": 240, "dealloc": 24}
    assert cuda_register_budgets(recorded("sm_90a-ns3.cu.gz")) == {"alloc": 240, "dealloc": 24}
    assert register_budgets(recorded("sm_80-ns1.sass.gz")) == {}


def test_listing_keeps_the_instructions_and_drops_the_encodings() -> None:
    raw = recorded("sm_80-ns1.sass.gz")
    shown = strip_encodings(raw)
    assert "/* 0x" not in shown
    assert sass_counts(shown) == sass_counts(raw)


# -- SASS by kernel line: nvdisasm -gi of the seed GEMM (gemm.py) on sm_80 -------------------

def _by_line(depth: int, kernel: str = "kernel_kernel") -> dict[str, Any]:
    """The recorded listing read as the worker reads it (the folder nvcc compiled in is
    where the line table says kernel.cu is)."""
    listing = recorded(f"sm_80-ns{depth}.nvdisasm-gi.gz")
    root = re.search(r'File "([^"]*)/kernel\.cu"', listing)
    assert root is not None
    places = sass_lines.cuda_places(recorded(f"sm_80-ns{depth}.cu.gz"), GEMM, "gemm.py")
    return sass_lines.by_line(listing, kernel, places, root[1])


def test_each_lines_counts_and_the_unattributed_add_up_to_the_kernels() -> None:
    """The invariant, per class, against the other tool's listing of the same cubin."""
    for depth in (1, 4):
        found = _by_line(depth)
        whole = sass_lines.class_counts(recorded(f"sm_80-ns{depth}.sass.gz"))
        assert sass_lines.summed(found) == whole
        assert whole["mma"] == sass_counts(recorded(f"sm_80-ns{depth}.sass.gz"))["HMMA"]
        assert found["unattributed"]["total"] < whole["total"] // 10


def test_instructions_land_on_the_kernel_lines_that_made_them() -> None:
    lines = _by_line(4)["lines"]
    # T.copy of A and of B (lines 18, 19): the cp.async copies, inlined from copy.h.
    assert (lines["18"]["async"], lines["19"]["async"]) == (32, 32)
    assert _by_line(4)["templates"]["18"].keys() == {"copy.h"}
    # T.gemm (line 20): every tensor-core MMA and shared load, through TileLang's MMA
    # macro, which the listing's links give to the one T.gemm of the loop (inferred).
    assert (lines["20"]["mma"], lines["20"]["shared"]) == (512, 128)
    assert _by_line(4)["inferred"]["20"]["mma"] == 512
    # The epilogue's T.copy (line 21): the global stores.
    assert lines["21"]["global"] == 64
    assert all(counts["spill"] == 0 for counts in lines.values())


def test_what_each_line_gained_from_depth_one_to_four() -> None:
    gained = dict(sass_lines.gained(_by_line(1), _by_line(4)))
    assert gained[20]["mma"] == 256 and gained[18]["async"] == 15
    assert 21 not in gained or "global" not in gained[21]
    assert sass_lines.differing([_by_line(1), _by_line(4)])[:3] == ["17", "18", "19"]


def test_a_kernel_the_cubin_lacks_is_refused() -> None:
    with pytest.raises(ValueError, match="no function 'other'"):
        _by_line(1, "other")


def test_the_classes_of_the_instructions() -> None:
    assert [sass_lines.classify(op) for op in (
        "HMMA", "HGMMA", "UTCHMMA", "LDG", "STG", "LDS", "LDSM", "LDGSTS", "UTMALDG",
        "BAR", "SYNCS", "DEPBAR", "LDL", "STL", "IMAD")] == [
        "mma", "mma", "mma", "global", "global", "shared", "shared", "async", "async",
        "sync", "sync", "sync", "spill", "spill", None]


def test_the_cuda_compiled_keeps_every_line_where_it_was() -> None:
    cuda = recorded("sm_80-ns4.cu.gz")
    compiled = sass_lines.compiled_text(cuda)
    assert "#line" not in compiled and "#line" in cuda
    assert [len(line) for line in compiled.splitlines()] == [
        0 if line.lstrip().startswith("#line") else len(line) for line in cuda.splitlines()]


# -- occupancy, cuda_occupancy.h's rules ------------------------------------------------------

def test_occupancy_of_the_seed_gemm_on_ampere() -> None:
    a100 = limits_for("sm_80")
    assert a100 is not None
    # 225 registers: 7,200 per warp, 7,424 allocated; 2 warps per sub-partition, 8 per SM.
    shallow = occupancy(a100, 128, 225, 0, 32768)
    assert (shallow["blocks_per_sm"], shallow["limiter"]) == (2, ["registers"])
    assert shallow["warps_per_sm"] == 8 and shallow["occupancy"] == 0.125
    # Three stages: 96 KiB + 1 KiB reserved per block, 164 KiB per SM.
    deep = occupancy(a100, 128, 236, 0, 98304)
    assert (deep["blocks_per_sm"], deep["limiter"]) == (1, ["shared memory"])


def test_occupancy_of_the_seed_gemm_on_hopper() -> None:
    h100 = limits_for("sm_90a")
    assert h100 is not None and h100.shared_per_sm == 233472
    found = occupancy(h100, 256, 240, 1024, 98304)
    assert (found["blocks_per_sm"], found["limiter"]) == (1, ["registers"])
    assert found["limits"]["shared memory"] == 2


def test_occupancy_limited_by_blocks_threads_and_nothing_fitting() -> None:
    h100 = LIMITS["9.0"]
    small = occupancy(h100, 32, 16, 0, 0)
    assert (small["blocks_per_sm"], small["limiter"]) == (32, ["blocks"])
    wide = occupancy(h100, 1024, 16, 0, 0)
    assert (wide["blocks_per_sm"], wide["limiter"]) == (2, ["warps"])
    # 128 registers x 1,024 threads is twice the 64K a block may have.
    assert occupancy(h100, 1024, 128, 0, 0)["blocks_per_sm"] == 0
    # More than the 227 KiB a block may opt in to.
    assert occupancy(h100, 128, 32, 0, 232449)["blocks_per_sm"] == 0
    # Shared memory is allocated in 128-byte units: 1 B more takes one more unit.
    assert occupancy(h100, 128, 32, 0, 116736 - 1024)["limits"]["shared memory"] == 2
    assert occupancy(h100, 128, 32, 0, 116736 - 1024 + 1)["limits"]["shared memory"] == 1


def test_limits_are_known_for_the_targets_the_book_uses() -> None:
    assert [limits_for(a) is not None for a in ("sm_80", "sm_86", "sm_89", "sm_90a",
                                                 "sm_100a", "sm_120")] == [True] * 6
    assert limits_for("gfx942") is None


def test_resources_assembles_the_fact() -> None:
    found = resources(recorded("sm_80-ns1.ptxas"), recorded("sm_80-ns1.sass.gz"), "sm_80",
                      128, 32768)
    assert found["occupancy"]["blocks_per_sm"] == 2
    assert found["sass"]["HMMA"] == 256 and found["dynamic_shared"] == 32768
    assert set(found) >= {"registers", "spill_stores", "spill_loads", "stack",
                          "static_shared", "barriers", "register_budgets"}


# -- declarations and keys ---------------------------------------------------------------------

def test_the_fact_is_declared_for_the_part_and_for_claims() -> None:
    fact = fact_table.BY_NAME["resources"]
    assert fact.parts == ("resources",) and fact.kept and fact.compared
    assert {"registers", "spills", "occupancy", "sass"} <= set(fact.names)
    assert "resources" not in fact_table.read_by(("shared", "sync"), ())
    assert "resources" in fact_table.read_by(("resources",), ())


def test_the_toolkit_is_part_of_the_key_and_its_path_is_not() -> None:
    variant = VariantSpec(GEMM, "gemm.py", "matmul", (), 2, parse_target("sm_80"))
    here = Toolkit("/a/nvcc", "wheel nvidia-cuda-nvcc 13.5.37")
    there = Toolkit("/b/nvcc", "wheel nvidia-cuda-nvcc 13.5.37")
    other = Toolkit("/a/nvcc", "wheel nvidia-cuda-nvcc 13.0.88")
    keyed = [VariantSpec(GEMM, "gemm.py", "matmul", (), 2, parse_target("sm_80"), toolkit=t)
             for t in (here, there, other)]
    assert keyed[0].key("tl") == keyed[1].key("tl")
    assert len({variant.key("tl"), keyed[0].key("tl"), keyed[2].key("tl")}) == 3
    assert keyed[0].task().toolkit == {"nvcc": "/a/nvcc", "origin": here.origin}


def test_none_turns_the_toolkit_off_and_a_path_that_is_no_file_finds_none(
        tmp_path: Path) -> None:
    assert find("none") is None
    assert find(str(tmp_path / "nvcc")) is None


# -- real builds -----------------------------------------------------------------------------

CLAIMS = ("spills == 0\n      registers <= 240\n      occupancy.blocks_per_sm >= 1\n"
          '      sass["HMMA"] == 128 * max(num_stages, 2) or target != "sm_80"\n'
          '      sum(line["mma"] for line in sass_line.values()) == sass["HMMA"]'
          ' or target != "sm_80"')
AMPERE_HOPPER = rst(GEMM, "Seed GEMM, what each depth costs", num_stages="1 2 3 4",
                    target="sm_80 sm_90a", params=GEMM_PARAMS, name="cost",
                    show="shared resources", assert_=CLAIMS)
SPILLS = rst(GEMM, "A tile too large for the registers", num_stages="2", target="sm_80",
             params=GEMM_PARAMS.replace("block_M=128", "block_M=256")
             .replace("block_K=64", "block_K=32"), name="spills", show="source resources cuda")
AMD = rst(GEMM, "Seed GEMM on MI300", num_stages="2", target="gfx942", params=GEMM_PARAMS,
          name="amd", show="shared resources")
PAGE = "Cost\n====\n\n" + "\n".join((AMPERE_HOPPER, SPILLS, AMD))


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, shared_cache: Path) -> Built:
    if TOOLKIT is None:
        if CI:
            pytest.fail("no NVIDIA compiler installed, and CI must build the resources part "
                        "(nox -s tests installs .[test,resources])")
        pytest.skip("no NVIDIA compiler installed")
    return build_once(tmp_path_factory.mktemp("resources") / "src", {"index.rst": PAGE},
                      confoverrides={"tlstages_snapshots": "update"})


@needs_toolkit
def test_builds_with_every_claim_true(built: Built) -> None:
    assert built.warnings == ""
    assert built.app.statuscode == 0


@needs_toolkit
def test_the_snapshot_keeps_the_numbers_and_names_the_compiler(built: Built) -> None:
    import json

    snapshot = json.loads((Path(built.app.srcdir) / "_tlstages" / "snapshots" / "cost.json")
                          .read_text(encoding="utf-8"))
    assert snapshot["toolkit"].startswith("13.")
    first = next(iter(snapshot["variants"].values()))
    assert first["resources"]["registers"] == 225 and "sass" not in first


@needs_toolkit
def test_the_table_shows_registers_and_occupancy_per_variant(built: Built) -> None:
    rows = {row[0]: row[1:] for row in built.table("tl-resources")}
    assert rows["registers per thread"][:4] == ["225", "232", "236", "232"]
    # Hopper's flat 240 is the consumer's setmaxnreg budget, and the table says so.
    assert all(cell.startswith("240 (setmaxnreg: 240") for cell in
               rows["registers per thread"][4:])
    assert rows["per SM"][0].startswith("2 blocks, 8 warps (12%), limited by registers")
    assert rows["per SM"][2].startswith("1 block, 4 warps (6%), limited by shared memory")
    text = built.part("tl-resources").astext()
    assert "No variant spills registers" in text and "nvcc 13." in text
    # Eight variants: the occupancy figure draws their blocks per SM above the table.
    (figure,) = built.part("tl-resources").iter("div", cls="tl-occupancy-figure")
    assert "num_stages=3: 1 block per SM (6% of its warps), limited by shared memory" \
        in figure.iter("desc")[0].astext()
    if SASS:
        assert rows["SASS HMMA (static)"][:4] == ["256", "256", "384", "512"]
        assert rows["SASS HGMMA (static)"][4:] == ["32", "16", "16", "16"]
        assert "SASS, " in text  # the listings, one click away
    else:
        assert "no nvdisasm" in text


@needs_toolkit
@pytest.mark.skipif(not SASS, reason="no nvdisasm: no SASS listing")
def test_each_sass_listing_is_one_click_away_and_downloadable(built: Built) -> None:
    links = [a for a in built.part("tl-resources").iter("a")
             if "tl-download" in a.classes]
    assert [a.astext() for a in links][:2] == ["download cost-sm_80-ns1.sass",
                                               "download cost-sm_80-ns2.sass"]
    listing = (built.outdir / links[0].attrs["href"]).read_text(encoding="utf-8")
    assert sass_counts(listing)["HMMA"] == 256 and "/* 0x" not in listing


@needs_toolkit
@pytest.mark.skipif(not SASS, reason="no nvdisasm: no SASS listing")
def test_sass_by_kernel_line_adds_up_and_is_kept(built: Built) -> None:
    """Per variant, per class: the kept lines plus the unattributed are the counts of the
    SASS listing offered for download (read off the same disassembly by another reader;
    ``tests/test_sass_listing.py`` holds that listing equal to cuobjdump's)."""
    import json

    snapshot = json.loads((Path(built.app.srcdir) / "_tlstages" / "snapshots" / "cost.json")
                          .read_text(encoding="utf-8"))
    links = {a.astext(): a.attrs["href"] for a in built.part("tl-resources").iter("a")
             if "tl-download" in a.classes}
    for key, variant in snapshot["variants"].items():
        named = dict(pair.split("=") for pair in key.split(","))
        label = f"{named['target']}-ns{named['num_stages']}"
        listing = (built.outdir / links[f"download cost-{label}.sass"]).read_text("utf-8")
        assert sass_lines.summed(variant["sass_lines"]) == sass_lines.class_counts(listing)


@needs_toolkit
@pytest.mark.skipif(not SASS, reason="no nvdisasm: no SASS listing")
def test_the_lines_that_changed_between_depths_are_shown_first(built: Built) -> None:
    rows = built.table("tl-sass-lines")
    assert rows[0][0] == "SASS by kernel line" and rows[0][1:3] == ["sm_80, num_stages=1",
                                                                   "sm_80, num_stages=2"]
    gemm = next(row for row in rows if "T.gemm(" in row[0])
    assert gemm[1].startswith("MMA 256,") and gemm[4].startswith("MMA 512,")
    assert "inferred" in gemm[0]
    assert rows[-1][0].startswith("not attributed to a kernel line")
    text = built.part("tl-resources").astext()
    line = int(re.search(r"line (\d+) T\.gemm", " ".join(r[0] for r in rows))[1])
    assert re.search(rf"From num_stages=1 to num_stages=4 on sm_80, these kernel lines gained "
                     rf"instructions: [^.]*line {line} \(\+256 MMA, \+64 shared", text)


@needs_toolkit
@pytest.mark.skipif(not SASS, reason="no nvdisasm: no SASS listing")
def test_the_kernel_listing_says_what_each_line_became_in_sass(built: Built) -> None:
    source = built.part("tl-linked-source")
    gemm = next(el for el in source.iter(cls="tl-src-line") if "T.gemm(" in el.astext())
    assert re.fullmatch(r"line \d+: num_stages=2: \d+ CUDA lines, [\d,]+ SASS instructions "
                        r"\(MMA 256, shared \d+, spill \d+\)", gemm.attrs["title"])
    # The SASS listing beside the CUDA listing stays SASS (it was once made a CUDA one).
    (sass,) = built.part("tl-resources", index=1).iter("details", cls="tl-sass-item")
    assert "HMMA" in sass.astext() and "#include" not in sass.astext()


@needs_toolkit
def test_spills_are_pointed_out_in_words(built: Built) -> None:
    text = built.part("tl-resources", index=1).astext()
    assert "num_stages=2 spills 1212 bytes to local memory" in text
    if SASS:  # and where: the lines the line table gives the spill loads and stores
        assert re.search(r"num_stages=2: spill loads and stores occur at line \d+ \(\d+\)",
                         text)
    # One variant: nothing to compare, no occupancy figure.
    assert built.part("tl-resources", index=1).iter("div", cls="tl-occupancy-figure") == []


def test_amd_says_why_there_is_no_such_part(build, shared_cache: Path) -> None:
    result = build({"index.rst": "AMD\n===\n\n" + AMD})
    assert "gfx942: registers, spills and occupancy come from NVIDIA's compiler; no " \
           "compiler for AMD GPUs installs from PyPI" in result.part("tl-resources").astext()
    assert "tlstages.toolkit" not in result.warnings


@needs_toolkit
def test_a_false_claim_on_the_registers_fails_the_build(build, shared_cache: Path) -> None:
    page = rst(GEMM, "Claims", num_stages="1", target="sm_80", params=GEMM_PARAMS,
               name="claims", show="resources", assert_="registers < 200")
    result = build({"index.rst": "Claims\n======\n\n" + page})
    assert "registers < 200" in result.warnings and "is false" in result.warnings
    assert result.app.statuscode == 1


@needs_toolkit
def test_a_cuda_of_two_kernels_says_why_it_has_no_figures_and_blames_no_compiler(
        build, shared_cache: Path) -> None:
    """A split pass and its combine pass in one prim_func: nvcc compiles both kernels;
    the part reads one kernel's figures and says so, rather than that nvcc failed."""
    page = rst(read("styles/split_k_two_kernels.py"), "Split-K", num_stages="2",
               target="sm_80", name="splitk", show="shared resources",
               params="M=1024 N=1024 K=1024 block_M=128 block_N=128 block_K=32 splits=4")
    result = build({"index.rst": "Two\n===\n\n" + page})
    text = result.part("tl-resources").astext()
    assert "num_stages=2: no resources figures: its CUDA holds 2 kernels" in text
    assert "compiler failed" not in text and "could not compile" not in result.warnings
    assert "splitk: no resources figures for 1 variant(s)" in result.warnings
    assert result.table("tl-shared")  # lowered all the same


def test_without_a_toolkit_one_warning_a_sentence_and_the_lowering_stands(
        build, shared_cache: Path, tmp_path: Path) -> None:
    first = rst(GEMM, "One", num_stages="1 2", target="sm_80", params=GEMM_PARAMS,
                name="one", show="shared resources", assert_="registers <= 240")
    second = rst(GEMM, "Two", num_stages="1", target="sm_80", params=GEMM_PARAMS,
                 name="two", show="resources")
    result = build({"index.rst": "None\n====\n\n" + first + "\n" + second},
                   confoverrides={"tlstages_toolkit": str(tmp_path / "no" / "nvcc")})
    assert result.warnings.count("[tlstages.toolkit]") == 1
    assert "2 directive(s) show resources" in result.warnings
    assert "built without NVIDIA's compiler" in result.part("tl-resources").astext()
    assert result.table("tl-shared")  # lowered all the same
    assert result.app.statuscode == 0


def test_without_a_toolkit_a_ci_build_fails(build, shared_cache: Path, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Under CI the part must be built: a missing compiler is an error, not a warning."""
    monkeypatch.setenv("CI", "true")
    page = rst(GEMM, "One", num_stages="2", target="sm_80", params=GEMM_PARAMS,
               name="one", show="resources")
    result = build({"index.rst": "None\n====\n\n" + page},
                   confoverrides={"tlstages_toolkit": str(tmp_path / "no" / "nvcc"),
                                  "tlstages_snapshots": "off"})
    assert "ERROR: no NVIDIA compiler found: 1 directive(s)" in result.warnings
    assert result.app.statuscode == 1


@needs_toolkit
@pytest.mark.parametrize(("builder", "output"), [("text", "index.txt"), ("latex", "tests.tex")])
def test_every_builder_shows_the_table_and_the_sentence(build, shared_cache: Path,
                                                        builder: str, output: str) -> None:
    result = build({"index.rst": "Spills\n======\n\n" + SPILLS}, buildername=builder,
                   conf="extensions = ['sphinx_tlstages']\nproject = 'tests'\n")
    text = (result.outdir / output).read_text(encoding="utf-8")
    assert "registers per thread" in text and "limited by registers" in text
    assert "spills 1212 bytes to local memory" in text


def test_a_toolkit_turned_off_is_said_on_the_page_without_a_warning(
        build, shared_cache: Path) -> None:
    page = rst(GEMM, "Off", num_stages="1", target="sm_80", params=GEMM_PARAMS, name="off",
               show="resources")
    result = build({"index.rst": "Off\n===\n\n" + page},
                   confoverrides={"tlstages_toolkit": "none"})
    assert result.warnings == ""
    assert "built without NVIDIA's compiler" in result.part("tl-resources").astext()


@needs_toolkit
def test_tlstages_lower_shows_the_part(tmp_path: Path) -> None:
    import io

    from sphinx_tlstages.cli.lower import lower_file

    kernel = tmp_path / "gemm.py"
    kernel.write_text(GEMM, encoding="utf-8")
    out = io.StringIO()
    status = lower_file(kernel, None, GEMM_PARAMS.split(), [2], ["sm_80"], None, False,
                        out=out, show=["resources"])
    text = out.getvalue()
    assert status == 0
    assert re.search(r"registers per thread +232\n", text)
    if SASS:
        assert re.search(r"line 20 T\.gemm\(.*MMA 256, shared 64", text)
    assert "limited by registers and shared memory" in text


def test_a_changed_register_count_is_drift_in_words() -> None:
    from sphinx_tlstages.core.records.snapshot_compare import variant_changes

    before = resources(recorded("sm_80-ns1.ptxas"), recorded("sm_80-ns1.sass.gz"), "sm_80",
                       128, 32768)
    after = resources(recorded("sm_80-256x128-ns2.ptxas"), recorded("sm_80-ns1.sass.gz"),
                      "sm_80", 128, 32768)
    said = [c.words for c in variant_changes("1", {"resources": before}, {"resources": after})]
    assert "registers 225 -> 255" in said and "spill stores 0 -> 1212" in said
    assert variant_changes("1", {"resources": before}, {"resources": before}) == []
    # Per kernel line: which line's counts moved, by class.
    shallow, deep = _by_line(1), _by_line(4)
    said = [c.words for c in variant_changes("1", {"sass_lines": shallow},
                                             {"sass_lines": deep})]
    assert "SASS at line 20 mma 256 -> 512" in said
    assert variant_changes("1", {"sass_lines": deep}, {"sass_lines": deep}) == []


_KEEP = """
import gzip, json, sys
from pathlib import Path
from sphinx_tlstages.worker.resources import compile_variant
cuda = gzip.decompress(Path(sys.argv[1]).read_bytes()).decode()
found = compile_variant(cuda, "sm_90a", {}, json.loads(sys.argv[2]), 256, 98304,
                        keep_cubin=Path(sys.argv[3]))
print(json.dumps(found["resources"]["registers"]))
"""


_BOTH = """
import gzip, json, subprocess, sys
from pathlib import Path
from sphinx_tlstages.core.hardware.resources import strip_encodings
from sphinx_tlstages.core.hardware.sass_lines import compiled_text
from sphinx_tlstages.worker.resources import flags, nvcc_command
cuda = gzip.decompress(Path(sys.argv[1]).read_bytes()).decode()
nvcc = json.loads(sys.argv[2])["nvcc"]
listings = []
for name, text in (("as-tilelang.cu", cuda), ("compiled.cu", compiled_text(cuda))):
    source = Path(sys.argv[3], name)
    source.write_text(text)
    cubin = source.with_suffix(".cubin")
    subprocess.run(nvcc_command(nvcc, flags("sm_90a", {}), cubin, source), check=True,
                   capture_output=True)
    listings.append(strip_encodings(subprocess.run(
        [str(Path(nvcc).with_name("cuobjdump")), "-sass", str(cubin)], check=True,
        capture_output=True, text=True).stdout))
print(json.dumps([listings[0] == listings[1], listings[0].count("HGMMA")]))
"""


@needs_toolkit
@pytest.mark.skipif(not CUOBJDUMP and not CI, reason="no cuobjdump beside nvcc")
def test_the_cuda_without_its_line_directives_compiles_to_the_same_sass(
        tmp_path: Path) -> None:
    """What lets the part read the line table by the CUDA's own lines: the directives
    change where instructions are said to come from, not the instructions."""
    import json
    import subprocess
    import sys

    assert TOOLKIT is not None
    done = subprocess.run([sys.executable, "-c", _BOTH, str(FIXTURES / "sm_90a-ns3.cu.gz"),
                           json.dumps(TOOLKIT.payload), str(tmp_path)],
                          capture_output=True, text=True, check=True)
    assert json.loads(done.stdout) == [True, 16]


@needs_toolkit
def test_the_cubin_the_figures_come_from_can_be_kept(tmp_path: Path) -> None:
    """What the GPU check loads (``verification/resources_on_gpu``): the cubin compiled,
    in a process of its own, as TileLang is not imported into this one."""
    import json
    import subprocess
    import sys

    assert TOOLKIT is not None
    cubin = tmp_path / "kernel.cubin"
    done = subprocess.run([sys.executable, "-c", _KEEP, str(FIXTURES / "sm_90a-ns3.cu.gz"),
                           json.dumps(TOOLKIT.payload), str(cubin)],
                          capture_output=True, text=True, check=True)
    assert json.loads(done.stdout) == 240
    assert cubin.read_bytes()[:4] == b"\x7fELF"
