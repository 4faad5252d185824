"""The fit part's pure rules: the GPUs and their targets, the kernel's own tuning list
read from its text, which lowering each column reads (the page's own, or one per target
family), and the table made of results. No TileLang, no Sphinx build."""

from __future__ import annotations

import ast
from typing import Any

import pytest

from sphinx_tlstages.core.claims import NAMES
from sphinx_tlstages.core.errors import OptionError
from sphinx_tlstages.core.hardware import resources
from sphinx_tlstages.core.hardware.fit import fit_names, fit_table
from sphinx_tlstages.core.kernel.tuning import Tuning, tried
from sphinx_tlstages.core.parts import DEFAULT_SHOW, PRINTED, parse_show
from sphinx_tlstages.core.plan.fit import FitPlan
from sphinx_tlstages.core.plan.gpus import COLUMNS, LOWERED_ALIKE
from sphinx_tlstages.core.plan.spec import DirectiveSpec, VariantSpec
from sphinx_tlstages.core.plan.targets import parse_target
from sphinx_tlstages.core.planner import Defaults, Kernel, plan
from sphinx_tlstages.core.results.result import RESULT_SCHEMA, Result, failure

from .kernels import GEMM, GEMM_PARAMS, read

TUNED = read("fit/tuned_gemm.py")
STYLES = read("fit/config_styles.py")


def _plan(source: str = GEMM, **options: str) -> DirectiveSpec:
    given = {key.replace("_", "-"): value for key, value in options.items()}
    return plan(given, Kernel(source, "gemm.py"), Defaults(targets=(parse_target("sm_80"),)),
                name="doc-1", docname="doc", lineno=10)


def _fit(spec: DirectiveSpec) -> FitPlan:
    assert spec.fit is not None
    return spec.fit


# ---- the GPUs --------------------------------------------------------------------------

def test_each_column_names_its_gpus_target_and_limit() -> None:
    assert [c.heading for c in COLUMNS] == [
        "A100 (sm_80)", "A10, RTX 3090 (sm_86)", "L4, RTX 4090 (sm_89)",
        "H100, H200 (sm_90a)", "B200 (sm_100a)", "RTX 5090 (sm_120), GB10 (sm_121)",
        "MI300X, MI325X (gfx942)", "MI350X, MI355X (gfx950)", "Apple M-series (metal)"]
    # The limits are the targets' own table's, one per column.
    assert [c.limit for c in COLUMNS] == [166912, 101376, 101376, 232448, 232448, 101376,
                                          65536, 163840, 32768]
    # Every column's targets are lowered by one family, and every family serves a column.
    assert {arch for group in LOWERED_ALIKE for arch in group} == \
        {arch for c in COLUMNS for arch in c.archs}


def test_the_part_is_opt_in_and_named_by_its_aliases() -> None:
    assert "fit" not in DEFAULT_SHOW and "fit" not in PRINTED
    assert parse_show("gpus") == ("fit",)
    # A page that does not show it lowers nothing for it.
    assert _plan(params=GEMM_PARAMS, show="gemm").fit is None


# ---- the kernel's own tuning list ------------------------------------------------------

@pytest.mark.parametrize(("factory", "depths", "lines", "autotune"), [
    ("from_a_grid", (0, 1, 2, 3), (13,), True),  # a product bound to a name, by position
    ("by_position", (2, 3), (18,), True),  # c[1] of a product: the list bound to the name
    ("from_iter_params", (3, 4, 7), (24,), True),  # dict(num_stages=[...]) zipped
    ("from_a_literal", (1, 2), (46,), True),  # a literal list of dicts
    ("under_another_name", (2, 3, 4), (52,), True),  # a lambda, the loops' own name
    # Configurations that do not name the depth: the file's own loop over depths in main.
    ("tiles_only", (1, 2), (65,), False),
])
def test_the_depths_a_kernel_file_tries(factory: str, depths: tuple[int, ...],
                                       lines: tuple[int, ...], autotune: bool) -> None:
    keys = ("num_stages", "stages")
    assert tried(ast.parse(STYLES), factory, STYLES, keys) == Tuning(depths, lines, autotune)


def test_a_kernel_that_lists_no_depth_has_no_tuning_list() -> None:
    plain = read("fit/plain_copy.py")  # num_stages=3 in a call is the depth it runs
    assert tried(ast.parse(plain), "staged_copy", plain, ("num_stages",)) is None
    assert tried(ast.parse(TUNED), "tuned_matmul", TUNED, ("num_stages",)) == \
        Tuning((3, 4), (11,), True)


# ---- which lowering each column reads --------------------------------------------------

def _reads(fit: FitPlan) -> dict[str, tuple[str, int]]:
    """Column heading -> (the target it reads, how many of its lowerings are extra)."""
    return {COLUMNS[c].heading: (low.arch, sum(low.extra))
            for low in fit.lowerings for c in low.columns}


def test_one_lowering_per_family_the_page_does_not_lower() -> None:
    fit = _fit(_plan(params=GEMM_PARAMS, show="fit"))
    assert [row.heading for row in fit.rows] == [f"num_stages={d}" for d in (1, 2, 3, 4)]
    reads = _reads(fit)
    # Ampere and Ada read the page's own sm_80 variants: TileLang lowers them alike.
    assert reads["A10, RTX 3090 (sm_86)"] == reads["L4, RTX 4090 (sm_89)"] == ("sm_80", 0)
    assert reads["RTX 5090 (sm_120), GB10 (sm_121)"] == ("sm_120", 4)
    assert reads["Apple M-series (metal)"] == ("metal", 4)
    assert len(fit.extra) == 24 and {v.target.label for v in fit.extra} == {
        "sm_90a", "sm_100a", "sm_120", "gfx942", "gfx950", "metal"}
    # An extra variant is the page's own but for its target: named by it, no pass records.
    extra = fit.extra[0]
    assert extra.heading == "sm_90a, num_stages=1" and not extra.record_passes


def test_a_column_reads_the_pages_own_target_first_then_its_family() -> None:
    fit = _fit(_plan(params=GEMM_PARAMS, show="fit", num_stages="3",
                     target="sm_89 sm_86 sm_90a"))
    reads = _reads(fit)
    assert reads["A100 (sm_80)"] == ("sm_86", 0)  # the family's first the page lowers
    assert reads["A10, RTX 3090 (sm_86)"] == ("sm_86", 0)
    assert reads["L4, RTX 4090 (sm_89)"] == ("sm_89", 0)
    assert reads["H100, H200 (sm_90a)"] == ("sm_90a", 0)
    assert len(fit.extra) == 5  # sm_100a, sm_120, gfx942, gfx950, metal at one depth


def test_the_tuning_lists_depths_are_rows_too() -> None:
    fit = _fit(_plan(TUNED, params="M=1024 N=1024 K=1024", num_stages="2 3", show="fit"))
    assert [(r.num_stages, r.on_page, r.tried) for r in fit.rows] == [
        (2, True, False), (3, True, True), (4, False, True)]
    # Depth 4 is lowered for the page's own target too, and for every other family.
    assert _reads(fit)["A100 (sm_80)"] == ("sm_80", 1)
    assert len(fit.extra) == 1 + 6 * 3


def test_a_claim_on_fit_plans_the_table_and_too_many_lowerings_are_refused() -> None:
    spec = _plan(params=GEMM_PARAMS, num_stages="3", **{"assert": 'fit["H100"].fits'})
    assert spec.fit is not None and spec.show == DEFAULT_SHOW
    with pytest.raises(OptionError, match=r":show: the fit part needs 72 lowerings"):
        _plan(params=GEMM_PARAMS.replace(" block_K=64", ""), show="fit",
              sweep="block_K=16,32,64")


# ---- the table -------------------------------------------------------------------------

# What ptxas --verbose says of a small kernel.
_PTXAS = ("ptxas info    : Compiling entry function 'k' for 'sm_80'\n"
          "ptxas info    : Function properties for k\n"
          "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
          "ptxas info    : Used 128 registers, used 1 barriers\n")


def _result(variant: VariantSpec, compiled: bool = False) -> Result:
    """A lowering needing 32 KiB per stage, as the seed GEMM does (64 B of barriers from
    sm_90 on), compiled by NVIDIA's compiler where ``compiled``."""
    if variant.target.label == "gfx942" and variant.num_stages == 4:
        return failure("exception", "TVMError: no\nmore", 3)
    dynamic = 32768 * variant.num_stages
    found: dict[str, Any] = {
        "schema": RESULT_SCHEMA, "ok": True, "dynamic_shared_bytes": dynamic,
        "static_shared_bytes": 64 if variant.target.compute_capability not in (None, 80)
        else 0, "threads": 128}
    if compiled and variant.target.label == "sm_80":
        found["resources"] = resources.resources(_PTXAS, None, "sm_80", 128, dynamic)
    return found  # type: ignore[return-value]


def test_each_cell_fits_or_misses_by_so_much() -> None:
    spec = _plan(params=GEMM_PARAMS, show="fit")
    table = fit_table(_fit(spec), _result)
    a10, b200, mi300, apple = 1, 4, 6, 8
    four = table.cells[3]
    assert four[a10].state == "misses" and four[a10].misses == 131072 - 101376
    assert four[b200].state == "fits" and four[b200].used == 131072 + 64
    assert four[mi300].state == "failed" and four[mi300].error == "TVMError: no"
    assert table.cells[0][apple].state == "fits"  # 32 KiB exactly: within the limit
    assert [table.deepest(c, ()) for c in range(table.columns)] == [4, 3, 3, 4, 4, 3, 2, 4, 1]
    assert table.extra == 24 and table.complete
    assert all(cell.blocks_per_sm is None for row in table.cells for cell in row)


def test_blocks_per_sm_where_the_compiler_has_the_numbers() -> None:
    spec = _plan(params=GEMM_PARAMS, show="fit", num_stages="1 3")
    table = fit_table(_fit(spec), lambda v: _result(v, compiled=True))
    # 128 threads at 128 registers: 4 blocks by registers; shared memory decides.
    one, three = table.cells
    assert [one[0].blocks_per_sm, three[0].blocks_per_sm] == [4, 1]  # A100's own compile
    # Ampere's 100 KiB per SM on sm_86 and sm_89, from the sm_80 compile's registers.
    assert [one[1].blocks_per_sm, three[1].blocks_per_sm] == [3, 1]
    assert table.borrowed == ((1, "sm_80"), (2, "sm_80"))
    assert one[3].blocks_per_sm is None  # no compile for sm_90a here


def test_a_page_built_without_tilelang_has_the_pages_own_cells_only() -> None:
    spec = _plan(params=GEMM_PARAMS, show="fit", num_stages="3")
    page = set(spec.variants)
    table = fit_table(_fit(spec), lambda v: _result(v) if v in page
                      else failure("unavailable", "not lowered", None))
    assert [cell.state for cell in table.cells[0]] == ["fits"] * 3 + ["missing"] * 6
    assert not table.complete


def test_fit_names_each_gpu_and_target_for_a_claim() -> None:
    spec = _plan(params=GEMM_PARAMS, show="fit")
    table = fit_table(_fit(spec), _result)
    names = fit_names(table, spec.variants[3])  # num_stages=4
    assert names["RTX 4090"] is names["L4"] is names["sm_89"]
    assert (names["RTX 4090"].fits, names["RTX 4090"].misses) == (False, 29696)
    assert names["RTX 4090"].deepest == 3 and names["H100"].deepest == 4
    assert names["GB10"].target == "sm_120" and names["sm_121"] is names["GB10"]
    assert names["H100"].tried is None  # the seed GEMM lists no depths
    example = next(n.example for n in NAMES if n.name == "fit")
    assert eval(example, {}, {"fit": names})  # the reference's example holds
