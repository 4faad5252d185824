"""One declaration per fact: what the result type, the snapshots and the assertions derive
from core.results.fact_table, and the table's own rules (no real lowering here)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sphinx_tlstages.core import claims as assertions
from sphinx_tlstages.core.hardware import resources
from sphinx_tlstages.core.parts import SHOW_PARTS
from sphinx_tlstages.core.plan.spec import DirectiveSpec, VariantSpec
from sphinx_tlstages.core.plan.targets import parse_target
from sphinx_tlstages.core.records import snapshot_compare, snapshots
from sphinx_tlstages.core.results import fact_table
from sphinx_tlstages.core.results.result import RESULT_SCHEMA, Result, validate

FIXTURES = Path(__file__).parent / "fixtures"


def _spec(show: tuple[str, ...] = (), asserts: tuple[str, ...] = (),
          passes: tuple[str, ...] = ()) -> DirectiveSpec:
    target = parse_target("sm_80")
    variant = VariantSpec(source="", source_name="k.py", factory="f", params=(),
                          num_stages=2, target=target)
    return DirectiveSpec(name="d", docname="index", lineno=3, kernel_line=None,
                         kernel_path=None, title="", targets=(target,), variants=(variant,),
                         show=show, diff="consecutive", passes=passes,
                         asserts=tuple((10 + i, e) for i, e in enumerate(asserts)))


def _lowered() -> Result:
    """A result with every fact declared kept, as the worker would give it."""
    return {"schema": RESULT_SCHEMA, "ok": True, "seconds": 1.5, "num_stages": 2,
            "pipeline": [{"num_stages": 2, "stage": [0, 1], "order": [0, 1],
                          "statements": []}],
            "warp_specialized": None,
            "shared": [{"name": "A_shared", "shape": [2, 8], "dtype": "float16",
                        "bytes": 32, "scope": "shared.dyn"}],
            "tmem": [], "gemm": [{"text": "T.gemm(A, B, C)", "line": 3, "operands": [],
                                  "instruction": "mma_sync", "form": "ss"}],
            "planned_ir": "abc", "dynamic_shared_bytes": 32, "static_shared_bytes": 0,
            "threads": 128, "sync": {"syncthreads": 1}, "cuda_lines": 2, "cuda": "a\nb\n",
            "passes": [{"name": "tl.Simplify", "run": 1, "position": 1, "added": 2,
                        "removed": 1, "digest": "", "input": ""}],
            "pass_diffs": {}, "pass_fingerprints": ["(input) 000000000000",
                                                    "tl.Simplify#1 0123456789ab"],
            "imports": [], "templates": "t",
            "schedule": {"loops": []},
            "hazards": {"verdict": "none", "text": "none found", "findings": []},
            "unneeded_sync": [],
            "resources": resources.resources(_PTXAS, "", "sm_80", 128, 32), "sass": "",
            "sass_lines": {"lines": {"3": {"mma": 1, "total": 1}}, "inferred": {},
                           "templates": {}, "unattributed": {"mma": 0, "total": 0},
                           "unattributed_files": {}}}


# What ptxas --verbose says of a small kernel.
_PTXAS = ("ptxas info    : Compiling entry function 'k' for 'sm_80'\n"
          "ptxas info    : Function properties for k\n"
          "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
          "ptxas info    : Used 32 registers, used 1 barriers\n")


def test_every_fact_is_a_field_of_the_result_type_and_every_field_is_declared() -> None:
    fields = set(Result.__annotations__)
    facts = {fact.name for fact in fact_table.FACTS} - {"pass_counts"}
    assert facts <= fields
    assert fields == facts | {"pass_counts"} | set(fact_table.BOOKKEEPING)
    assert len(fact_table.BY_NAME) == len(fact_table.FACTS)  # one entry per fact


def test_the_table_speaks_of_parts_that_exist_and_schemas_that_do() -> None:
    for fact in fact_table.FACTS:
        assert set(fact.parts) <= {fact_table.ALWAYS, *SHOW_PARTS}, fact.name
        assert 1 <= fact.since <= RESULT_SCHEMA, fact.name
        # A kept fact is read by some part or claim: nothing kept that nobody reads.
        assert not fact.kept or fact.parts or fact.names, fact.name
        assert not fact.compared or fact.kept, fact.name


def test_required_fields_come_from_the_table() -> None:
    result = _lowered()
    assert validate(result) is result
    for name in fact_table.REQUIRED:
        broken: dict[str, Any] = {**result}
        del broken[name]
        assert validate(broken) is None, name
    not_required = {**result}
    del not_required["gemm"]
    assert validate(not_required) is not None


def test_a_fact_declared_shown_is_kept_and_compared() -> None:
    # Every part (and the summary every page has) keeps the facts it is declared to show.
    for fact in fact_table.FACTS:
        if not fact.kept:
            continue
        for part in fact.parts:
            show = () if part == fact_table.ALWAYS else (part,)
            assert fact.name in snapshots.kept(_spec(show=show)), (fact.name, part)
        for name in fact.names:
            assert fact.name in snapshots.kept(_spec(asserts=(f"{name} is not None",)))
        assert (fact.name in fact_table.COMPARED) == fact.compared


def test_nothing_is_kept_that_is_not_declared_or_not_read() -> None:
    spec = _spec(show=("shared",))
    recorded = snapshots.build(spec, {"2": _lowered()}, "0.1.15")
    assert recorded is not None
    variant = recorded["variants"]["2"]
    assert set(variant) <= fact_table.KEPT
    assert set(variant) == set(snapshots.kept(spec))
    # Not shown: no gemm part, no claim on it; the pass records are never kept.
    assert "gemm" not in variant and "passes" not in variant and "schedule" not in variant
    shown = snapshots.build(_spec(show=("gemm",)), {"2": _lowered()}, "0.1.15")
    assert shown is not None and shown["variants"]["2"]["gemm"][0]["instruction"] == "mma_sync"


def test_a_passes_claim_keeps_the_counts_it_names_and_no_other_run() -> None:
    spec = _spec(asserts=('passes["tl.Simplify#1"] == 3', 'passes["tl.Gone#2"] == 0'))
    recorded = snapshots.build(spec, {"2": _lowered()}, "0.1.15")
    assert recorded is not None
    assert recorded["variants"]["2"]["pass_counts"] == {"tl.Simplify#1": 3, "tl.Gone#2": None}
    # Read back, the claim is checked against the kept count.
    back = snapshots.as_result(recorded["variants"]["2"], 2)
    assert back is not None and "passes" not in back
    names = assertions.namespace(back, spec.variants[0])
    assert assertions.check('passes["tl.Simplify#1"] == 3', names) is None
    assert assertions.check('passes["tl.Simplify#1"] == 4', names) == \
        'is false\n  passes["tl.Simplify#1"] = 3\n  passes has \'tl.Simplify#1\''


def test_assertion_names_are_the_tables() -> None:
    names = assertions.namespace(_lowered(), _spec().variants[0])
    declared = set(fact_table.ASSERT_NAMES)
    assert declared <= set(names)
    assert set(names) - declared == {"num_stages", "params", "target"}
    # The reference's table (claims.NAMES) lists each name once, in none more; ``fit``
    # is the fit part's whole table, which the checks add to a directive that names it.
    assert [n.name for n in assertions.NAMES] == list(dict.fromkeys(
        n.name for n in assertions.NAMES))
    assert {n.name for n in assertions.NAMES} == set(names) | {"fit"}
    # Each fact with assertion names has its reader, and no reader reads an undeclared one.
    for fact in fact_table.FACTS:
        assert set(assertions._READERS.get(fact.name, {})) == set(fact.names), fact.name


def test_a_fact_a_result_lacks_gives_no_name_and_its_claim_is_skipped() -> None:
    older = {**_lowered()}
    del older["gemm"]
    names = assertions.namespace(older, _spec().variants[0])
    assert "gemm" not in names
    assert assertions.check('gemm == ["wgmma"]', names) is None
    said = assertions.check("treads == 1", names)
    assert said is not None and said.startswith(
        "uses 'treads', which is not a name a claim can use; did you mean threads? The "
        "names: cuda_lines, dynamic_shared_bytes, fit, gemm, hazards, num_stages,")
    assert said.endswith("and the functions abs, all, any, len, list, max, min, range, "
                         "sorted, sum, tuple")


def test_a_false_claim_says_each_value_it_compared() -> None:
    names = assertions.namespace(_lowered(), _spec().variants[0])
    said = assertions.check("any(g == 'wgmma' for g in gemm) or len(gemm) == 2", names)
    assert said is not None and said.startswith("is false\n")
    lines = said.splitlines()[1:]
    # Outer first, each once; a comprehension's own variable has no value outside it.
    assert lines == ["  any(g == 'wgmma' for g in gemm) = False", "  len(gemm) == 2 = False",
                     "  len(gemm) = 1", "  gemm = ['mma_sync']"]
    assert assertions.check("len(gemm) == 1", names) is None


def test_a_failed_variant_is_kept_only_where_an_error_is_expected() -> None:
    failed = {"schema": RESULT_SCHEMA, "ok": False,
              "error": {"kind": "exception", "message": "boom", "line": None}}
    spec = _spec()
    recorded = snapshots.build(spec, {"2": failed}, "0.1.15")
    assert recorded is not None and recorded["variants"] == {}
    old = {**recorded, "variants": {}}
    new = snapshots.build(spec, {"2": _lowered()}, "0.1.15")
    assert new is not None and snapshots.added(old, new) == ["2"]
    assert snapshots.with_added(old, new, ["2"])["variants"] == new["variants"]


def test_a_snapshot_lacking_a_shown_fact_says_which_and_why() -> None:
    spec = _spec(show=("gemm", "shared"), asserts=('passes["tl.Simplify#1"] == 3',))
    recorded = snapshots.build(spec, {"2": _lowered()}, "0.1.15")
    assert recorded is not None and snapshots.lacks(recorded, spec) == []
    del recorded["variants"]["2"]["gemm"]
    recorded["variants"]["2"]["pass_counts"] = {}
    assert snapshots.lacks(recorded, spec) == ["gemm", "pass_counts"]
    said = snapshots.unguarded(spec, recorded, Path("snaps/d.json"))
    assert said is not None and said.startswith("d: snaps/d.json does not keep gemm "
                                                "(read by the gemm part)")
    # A failed variant has no facts to lack.
    failed = {**recorded, "variants": {"2": {"error": "boom"}}}
    assert snapshots.lacks(failed, spec) == []


def test_a_previous_schema_snapshot_is_still_read() -> None:
    old = json.loads((FIXTURES / "gemm-schema2.json").read_text())
    assert old["schema"] == 2 and old["schema"] < RESULT_SCHEMA
    spec = _spec(show=("gemm", "shared", "sync", "diff"))
    assert snapshots.lacks(old, spec) == ["planned_ir", "tmem", "gemm", "hazards",
                                        "unneeded_sync"]
    said = snapshots.unguarded(spec, old, Path("g.json"))
    assert said is not None and "gemm (read by the gemm part; a fact since result schema 3, " \
        "the snapshot is schema 2)" in said
    for key, variant in old["variants"].items():
        result = snapshots.as_result(variant, int(key))
        assert result is not None and result["from_snapshot"]
    # Compared with itself re-recorded, nothing visible changed.
    assert snapshot_compare.changes(old, json.loads(json.dumps(old))) == []


def test_changes_are_structured_and_only_between_facts_both_keep() -> None:
    spec = _spec(show=("gemm",))
    old = snapshots.build(spec, {"2": _lowered()}, "0.1.14")
    new_result = _lowered()
    new_result["gemm"][0]["instruction"] = "fma"
    new_result["threads"] = 256
    new = snapshots.build(spec, {"2": new_result}, "0.1.15")
    assert old is not None and new is not None
    found = snapshot_compare.changes(old, new)
    # The call that changed, by its line: the words say which gemm of the kernel.
    assert snapshot_compare.Change("2", "gemm", "T.gemm at line 3: mma_sync -> fma") in found
    assert snapshot_compare.Change("2", "threads", "threads 128 -> 256") in found
    version, said = snapshot_compare.compare(old, new)
    assert version == "TileLang 0.1.14 -> 0.1.15"
    assert said == [("2", "threads 128 -> 256; T.gemm at line 3: mma_sync -> fma")]
    # A fact the new recording does not keep (the page no longer shows it) is no change.
    unshown = snapshots.build(_spec(), {"2": new_result}, "0.1.15")
    assert unshown is not None
    assert [c.fact for c in snapshot_compare.changes(old, unshown)] == ["threads"]


@pytest.mark.parametrize("fact", sorted(fact_table.COMPARED - {"cuda"}))
def test_every_compared_fact_that_changes_is_a_change(fact: str) -> None:
    spec = _spec(show=tuple(SHOW_PARTS), asserts=('passes["tl.Simplify#1"] == 3',))
    old = snapshots.build(spec, {"2": _lowered()}, "0.1.15")
    assert old is not None
    new = json.loads(json.dumps(old))
    value = new["variants"]["2"][fact]
    other = [{"name": "X", "shape": [1], "dtype": "int8", "instruction": "wgmma",
              "stage": [9], "order": [9]}]
    new["variants"]["2"][fact] = (
        value + 1 if isinstance(value, int) else {k: 99 for k in value or {"x": 0}}
        if isinstance(value, dict) or value is None else other)
    assert {c.fact for c in snapshot_compare.changes(old, new)} == {fact}


def test_a_claim_alone_makes_a_fact_read_and_says_so() -> None:
    spec = _spec(show=("shared",), asserts=('gemm == ["mma_sync"]',))
    recorded = snapshots.build(spec, {"2": _lowered()}, "0.1.15")
    assert recorded is not None and "gemm" in recorded["variants"]["2"]
    del recorded["variants"]["2"]["gemm"]
    assert snapshots.lacks(recorded, spec) == ["gemm"]
    said = snapshots.unguarded(spec, recorded, Path("d.json"))
    assert said == ("d: d.json does not keep gemm (read by :assert: gemm), so nothing "
                    "checks what the page shows")


def test_sass_line_is_numbered_as_the_listing_numbers_the_kernel() -> None:
    """A kernel written in the page is listed with the page's line numbers: its line 3,
    written from the page's line 40 on, is ``sass_line[42]``."""
    variant = _spec().variants[0]
    assert assertions.namespace(_lowered(), variant)["sass_line"] == {3: {"mma": 1,
                                                                          "total": 1}}
    names = assertions.namespace(_lowered(), variant, first_line=40)
    assert assertions.check('sass_line[42]["mma"] == 1', names) is None
