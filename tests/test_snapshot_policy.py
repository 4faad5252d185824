"""The snapshot policy (:mod:`sphinx_tlstages.core.records.snapshot_policy`) as a pure
function: per mode and strictness, what a build writes, fails on and notes for a
directive with no snapshot, the same, a drift, an added variant, a failed variant and one
not verified here. No TileLang, no Sphinx build: the snapshots are made up here."""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path
from typing import Any

import pytest

from sphinx_tlstages.core.plan.spec import DirectiveSpec, Problem, VariantSpec
from sphinx_tlstages.core.plan.targets import parse_target
from sphinx_tlstages.core.records.snapshot_policy import (
    Action,
    Counted,
    Decision,
    Fail,
    Found,
    Note,
    Policy,
    Recorded,
    Remove,
    Sources,
    Unused,
    Write,
    accept_command,
    decide,
    leftovers,
)

pytestmark = pytest.mark.quick

FOLDER = Path("/book/_tlstages/snapshots")
GOLDEN = FOLDER / "gemm.json"
PENDING = FOLDER / "gemm.pending.json"
SHOWN = "_tlstages/snapshots/gemm.json"
ACCEPT = "tlstages snapshots accept /book"
PRINTS = ["(input) 000000000000", "tl.Simplify#1 aaaaaaaaaaaa",
          "tl.PipelinePlanning#1 bbbbbbbbbbbb"]


def _spec(stages: tuple[int, ...] = (2, 3), **change: Any) -> DirectiveSpec:
    target = parse_target("sm_80")
    variants = tuple(VariantSpec("def matmul(num_stages):\n    pass\n", "kernel.py", "matmul",
                                 (("M", "1024"),), n, target) for n in stages)
    spec = DirectiveSpec(name="gemm", docname="index", lineno=4, kernel_line=None,
                         kernel_path=None, title="", targets=(target,), variants=variants,
                         show=(), diff="")
    return dataclasses.replace(spec, **change)


def _variant(stages: int, threads: int = 128) -> dict[str, Any]:
    """A lowered variant with every fact a page that shows the summary reads."""
    return {"num_stages": stages, "pipeline": [{"stage": [0, stages - 1], "order": [0, 1]}],
            "warp_specialized": None, "dynamic_shared_bytes": 16384 * stages,
            "static_shared_bytes": 0, "threads": threads, "sync": {"syncthreads": 2},
            "cuda_lines": 2, "cuda": ["__global__ void k() {", "}"],
            "planned_ir": f"ir{stages}", "hazards": {"text": "none found"},
            "unneeded_sync": [], "pass_fingerprints": list(PRINTS)}


def _snapshot(*stages: int, version: str = "0.1.15") -> dict[str, Any]:
    return {"schema": 9, "directive": "gemm", "tilelang": version,
            "target": {"kind": "cuda", "arch": "sm_80"}, "factory": "matmul",
            "params": {"M": "1024"}, "variants": {str(n): _variant(n) for n in stages}}


def _found(old: dict[str, Any] | None, new: dict[str, Any] | None,
           spec: DirectiveSpec | None = None, unreadable: str | None = None) -> Found:
    return Found(spec or _spec(), GOLDEN, SHOWN, old, new, unreadable)


def _drifted() -> dict[str, Any]:
    new = _snapshot(2, 3)
    new["variants"]["3"]["threads"] = 256
    new["variants"]["3"]["pass_fingerprints"][2] = "tl.PipelinePlanning#1 dddddddddddd"
    return new


# Each situation: (the recorded snapshot, this build's).
SITUATIONS: dict[str, tuple[dict[str, Any] | None, dict[str, Any] | None]] = {
    "none": (None, _snapshot(2, 3)),
    "same": (_snapshot(2, 3), _snapshot(2, 3)),
    "drift": (_snapshot(2, 3), _drifted()),
    "added": (_snapshot(2), _snapshot(2, 3)),  # num_stages=3 had not lowered then
    "failed": (_snapshot(2, 3), _snapshot(2)),  # num_stages=3 failed to lower now
    "dropped": (_snapshot(2, 3), _snapshot(2)),  # num_stages=3 no longer asked for
    "unverified": (_snapshot(2, 3), None),  # TileLang could not lower every variant here
}
# The depths the directive asks for, where not the snapshots' 2 and 3.
ASKED: dict[str, tuple[int, ...]] = {"dropped": (2,)}


def _said(decision: Decision) -> list[str]:
    """A decision in short: each action as ``kind:what``, ``|`` where the fingerprints
    are taken."""
    def one(action: Action) -> str:
        if isinstance(action, Write):
            return f"write:{action.path.name}" + ("?" if action.rewritten else "")
        if isinstance(action, Remove):
            return f"remove:{action.path.name}"
        if isinstance(action, Fail):
            return "fail:" + ",".join(dict.fromkeys(f.kind for f in action.drift))
        if isinstance(action, Note):
            return "note"
        if isinstance(action, Counted):
            return f"counted:{action.variants}/{action.drifted}"
        if isinstance(action, Recorded):
            return f"recorded:{action.shown}"
        return type(action).__name__
    return [*map(one, decision.before), *(["|"] if decision.fingerprints else []),
            *map(one, decision.after)]


RECORD = ["|", "write:gemm.json", f"recorded:{SHOWN}", "note"]
MISSING = ["fail:missing"]
SAME = ["counted:2/0", "remove:gemm.pending.json"]
RERECORD = ["counted:2/0", "remove:gemm.pending.json", "|", "write:gemm.json?"]
DRIFT_LOCAL = ["|", "write:gemm.pending.json", "counted:2/1", "fail:changed,cause"]
DRIFT_CI = ["|", "counted:2/1", "fail:changed,cause"]
DROPPED_LOCAL = ["|", "write:gemm.pending.json", "counted:1/1", "fail:changed"]
DROPPED_CI = ["|", "counted:1/1", "fail:changed"]
# A variant that failed to lower keeps its record in every mode, and fails.
FAILED = ["fail:unshown", "counted:2/0", "remove:gemm.pending.json"]
UPDATE = ["|", "counted:2/0", "write:gemm.json", "remove:gemm.pending.json", "note"]
UPDATE_DROPPED = ["|", "counted:1/0", "write:gemm.json", "remove:gemm.pending.json", "note"]
ADD = ["|", "write:gemm.json", "note", "counted:2/0", "remove:gemm.pending.json"]
NOT_ADDED = ["fail:missing", "counted:2/0", "remove:gemm.pending.json"]
UNVERIFIED = ["fail:unverified"]

# mode, strict -> situation -> the decision, in short.
EXPECTED: dict[tuple[str, bool], dict[str, list[str]]] = {
    ("auto", False): {"none": RECORD, "same": SAME, "drift": DRIFT_LOCAL, "added": ADD,
                      "failed": FAILED, "dropped": DROPPED_LOCAL, "unverified": []},
    ("auto", True): {"none": MISSING, "same": SAME, "drift": DRIFT_CI, "added": NOT_ADDED,
                     "failed": FAILED, "dropped": DROPPED_CI, "unverified": UNVERIFIED},
    ("check", False): {"none": MISSING, "same": SAME, "drift": DRIFT_LOCAL,
                       "added": NOT_ADDED, "failed": FAILED, "dropped": DROPPED_LOCAL,
                       "unverified": []},
    ("check", True): {"none": MISSING, "same": SAME, "drift": DRIFT_CI, "added": NOT_ADDED,
                      "failed": FAILED, "dropped": DROPPED_CI, "unverified": UNVERIFIED},
    ("update", False): {"none": RECORD, "same": RERECORD, "drift": UPDATE, "added": UPDATE,
                        "failed": ["fail:unshown", *RERECORD], "dropped": UPDATE_DROPPED,
                        "unverified": []},
    ("update", True): {"none": RECORD, "same": RERECORD, "drift": UPDATE, "added": UPDATE,
                       "failed": ["fail:unshown", *RERECORD], "dropped": UPDATE_DROPPED,
                       "unverified": UNVERIFIED},
}


@pytest.mark.parametrize("situation", list(SITUATIONS))
@pytest.mark.parametrize(("mode", "strict"), list(EXPECTED))
def test_every_mode_and_strictness_decides_each_situation(mode: str, strict: bool,
                                                           situation: str) -> None:
    old, new = (copy.deepcopy(s) for s in SITUATIONS[situation])
    spec = _spec(ASKED.get(situation, (2, 3)))
    decision = decide(Policy(mode, strict), _found(old, new, spec), ACCEPT)
    assert _said(decision) == EXPECTED[mode, strict][situation]
    if strict and mode != "update":  # the build that publishes the docs writes nothing
        assert not any(isinstance(a, Write) for a in (*decision.before, *decision.after))


def test_what_each_policy_writes_and_fails_on() -> None:
    table = {(mode, strict): (p.checks, p.writes, p.leaves_pending, p.fails_on_missing,
                              p.fails_unguarded, p.updates)
             for mode in ("auto", "check", "update", "off") for strict in (False, True)
             for p in [Policy(mode, strict)]}
    assert table == {
        ("auto", False): (True, True, True, False, False, False),
        ("auto", True): (True, False, False, True, True, False),
        ("check", False): (True, False, True, True, False, False),
        ("check", True): (True, False, False, True, True, False),
        ("update", False): (True, True, True, False, False, True),
        ("update", True): (True, True, False, False, True, True),
        ("off", False): (False, False, True, True, False, False),
        ("off", True): (False, False, False, True, True, False),
    }


def _messages(decision: Decision) -> list[str]:
    return [a.message for a in (*decision.before, *decision.after)
            if isinstance(a, (Fail, Note))]


def test_a_drift_says_what_changed_why_and_how_to_accept() -> None:
    local = decide(Policy("auto", False), _found(_snapshot(2, 3), _drifted()), ACCEPT)
    [message] = _messages(local)
    assert message.splitlines() == [
        f"gemm: the lowering no longer matches {GOLDEN}",
        "  num_stages=3: threads 128 -> 256",
        "    why: first changed by tl.PipelinePlanning#1, after tl.Simplify#1, which still "
        "matched",
        f"  accept it with: {ACCEPT}"]
    [fail] = [a for a in local.after if isinstance(a, Fail)]
    assert [(f.kind, f.variant, f.words) for f in fail.drift] == [
        ("changed", "num_stages=3", "threads 128 -> 256"),
        ("cause", "num_stages=3", "first changed by tl.PipelinePlanning#1, after "
                                  "tl.Simplify#1, which still matched")]
    assert fail.versions is None
    [written] = [a for a in local.after if isinstance(a, Write)]
    assert written.path == PENDING and written.snapshot["variants"]["3"]["threads"] == 256
    ci = decide(Policy("auto", True), _found(_snapshot(2, 3), _drifted()), ACCEPT)
    assert _messages(ci)[0].splitlines()[-1] == (
        f"  accept it where the docs are written: {ACCEPT} (after a local build) or "
        "TLSTAGES_SNAPSHOTS=update")


def test_a_drift_under_another_tilelang_names_both() -> None:
    old = _snapshot(2, 3, version="0.1.14")
    decision = decide(Policy("check", True), _found(old, _drifted()), ACCEPT)
    [fail] = [a for a in decision.after if isinstance(a, Fail)]
    assert fail.message.splitlines()[1] == ("  recorded with TileLang 0.1.14, built with "
                                            "0.1.15; what changed for a reader:")
    assert fail.versions == "TileLang 0.1.14 -> 0.1.15"
    counted = [a for a in decision.after if isinstance(a, Counted)]
    assert counted == [Counted(2, 1, "0.1.14")]


def test_a_missing_snapshot_and_an_added_variant_are_worded_for_where_they_fail() -> None:
    [missing] = _messages(decide(Policy("check", False), _found(None, _snapshot(2)), ACCEPT))
    assert missing == (f"gemm: no snapshot at {GOLDEN}; record it with "
                       "TLSTAGES_SNAPSHOTS=update")
    added = decide(Policy("auto", True), _found(_snapshot(2), _snapshot(2, 3)), ACCEPT)
    [fail] = [a for a in added.before if isinstance(a, Fail)]
    assert fail.message == (f"gemm: {GOLDEN} has no record of num_stages=3; record it where "
                            "the docs are written: TLSTAGES_SNAPSHOTS=update, or "
                            f"{ACCEPT} after a local build")
    assert [(f.kind, f.words) for f in fail.drift] == [
        ("missing", f"no record of num_stages=3 in {SHOWN}")]
    recorded = decide(Policy("auto", False), _found(_snapshot(2), _snapshot(2, 3)), ACCEPT)
    [write, note] = recorded.after[:2]
    assert isinstance(write, Write) and sorted(write.snapshot["variants"]) == ["2", "3"]
    assert isinstance(note, Note) and note.line == 4 and note.message == (
        f"tl-pipeline: gemm: recorded num_stages=3 in {GOLDEN} (not in it before: it had "
        "not lowered, or is new)")


def test_a_variant_added_with_changed_inputs_is_part_of_the_drift() -> None:
    new = _snapshot(2, 3)
    new["params"] = {"M": "2048"}
    decision = decide(Policy("auto", False), _found(_snapshot(2), new), ACCEPT)
    assert _said(decision) == ["|", "write:gemm.pending.json", "counted:2/2", "fail:changed"]
    assert "  num_stages=3: new" in _messages(decision)[0].splitlines()


def test_an_unreadable_snapshot_fails_in_every_mode() -> None:
    why = f"{GOLDEN} is not a tl-pipeline snapshot"
    for mode in ("auto", "check", "update"):
        for strict in (False, True):
            decision = decide(Policy(mode, strict),
                              _found(None, _snapshot(2), unreadable=why), ACCEPT)
            [fail] = decision.before
            assert isinstance(fail, Fail) and fail.message == f"gemm: {why}"
            assert [(f.kind, f.words) for f in fail.drift] == [
                ("broken", f"{SHOWN} is not a tl-pipeline snapshot")]


def test_a_shown_fact_the_snapshot_lacks_is_noted_locally_and_fails_in_ci() -> None:
    old = _snapshot(2, 3)
    for variant in old["variants"].values():
        del variant["threads"]
    local = decide(Policy("auto", False), _found(old, _snapshot(2, 3)), ACCEPT)
    assert _said(local) == ["|", "write:gemm.pending.json", "counted:2/0", "note"]
    note = local.after[-1]
    assert isinstance(note, Note) and note.line == 4
    assert note.message == (f"tl-pipeline: gemm: {GOLDEN} does not keep threads (read by the "
                            f"summary), so nothing checks what the page shows; fill it in "
                            f"with: {ACCEPT}")
    assert [(f.kind, f.words) for f in note.drift] == [
        ("unguarded", f"{SHOWN} does not keep threads (read by the summary), so nothing "
                      "checks what the page shows")]
    ci = decide(Policy("auto", True), _found(old, _snapshot(2, 3)), ACCEPT)
    assert _said(ci) == ["|", "counted:2/0", "fail:unguarded"]


def test_another_tilelang_with_the_same_facts_is_a_note_not_a_failure() -> None:
    old = _snapshot(2, 3, version="0.1.0")
    old["schema"] = 1
    decision = decide(Policy("auto", True), _found(old, _snapshot(2, 3)), ACCEPT)
    assert _said(decision) == [*SAME, "note"]
    assert _messages(decision) == [
        "tl-pipeline: gemm: recorded with TileLang 0.1.0 (result schema 1), verified with "
        "TileLang 0.1.15: same facts and code"]


def test_a_run_number_that_moved_is_a_note_at_each_line_naming_it() -> None:
    spec = _spec(passes=("tl.Simplify#2",), passes_line=7,
                 asserts=((8, 'passes["tl.Simplify#2"] >= 0'),))
    old, new = _snapshot(2, 3), _snapshot(2, 3)
    old["pass_pipeline"] = ["tl.Simplify", "tl.LowerTileOp", "tl.Simplify"]
    new["pass_pipeline"] = ["tl.Simplify", "tl.Simplify", "tl.LowerTileOp", "tl.Simplify"]
    decision = decide(Policy("check", True), _found(old, new, spec), ACCEPT)
    notes = [a for a in decision.before if isinstance(a, Note)]
    assert [n.line for n in notes] == [7, 8]
    assert notes[0].message.startswith("tl-pipeline: gemm: tl.Simplify#2 now names ")


def test_deciding_again_on_the_fingerprinted_snapshot_keeps_what_came_before() -> None:
    """What is carried out before the fingerprints are taken is the same whichever
    snapshot it is decided on: the check decides again on the one that has them."""
    old = _snapshot(2)
    old["pass_pipeline"] = ["tl.Simplify", "tl.Simplify"]
    spec = _spec(passes=("tl.Simplify#2",), passes_line=7)
    bare = _drifted()
    bare["variants"]["2"]["threads"] = 256
    bare["pass_pipeline"] = ["tl.Simplify", "tl.LowerTileOp", "tl.Simplify"]
    for variant in bare["variants"].values():
        del variant["pass_fingerprints"]
    taken = copy.deepcopy(bare)
    for variant in taken["variants"].values():
        variant["pass_fingerprints"] = list(PRINTS)
    for policy in (Policy("check", True), Policy("check", False), Policy("auto", False)):
        first = decide(policy, _found(old, bare, spec), ACCEPT)
        again = decide(policy, _found(old, taken, spec), ACCEPT)
        assert first.fingerprints and again.fingerprints
        assert first.before == again.before
        # The same actions; only the one with the fingerprints says which pass it was.
        assert [type(a) for a in first.after] == [type(a) for a in again.after]
        assert "cause" not in _said(first)[-1] and _said(again)[-1] == "fail:changed,cause"
    # Where nothing may be written, the variant without a record fails before the
    # fingerprints are taken to explain the drift; where it is recorded, after them.
    check = decide(Policy("check", True), _found(old, bare, spec), ACCEPT)
    assert _said(check) == ["fail:missing", "|", "counted:2/1", "fail:changed"]
    assert _said(decide(Policy("check", True), _found(old, taken, spec), ACCEPT))[-1] \
        == "fail:changed,cause"
    auto = decide(Policy("auto", False), _found(old, bare, spec), ACCEPT)
    assert _said(auto) == ["|", "write:gemm.json", "note", "write:gemm.pending.json",
                           "counted:2/1", "fail:changed"]


def test_unused_snapshots_are_removed_by_update_and_warned_about_elsewhere() -> None:
    stored = [("gemm", GOLDEN, False), ("old", FOLDER / "old.json", False),
              ("old", FOLDER / "old.pending.json", True)]
    read = Sources(("index.rst", "other.md"))
    where = "no tl-pipeline directive of that name in the 2 sources read (index.rst, other.md)"
    assert leftovers(Policy("update", True), stored, {"gemm"}, Path("/book"), read) == [
        Remove(FOLDER / "old.json", missing_ok=False),
        Note(f"tl-pipeline: removed unused snapshot {FOLDER / 'old.json'} ({where})"),
        Remove(FOLDER / "old.pending.json", missing_ok=False),
        Note(f"tl-pipeline: removed unused snapshot {FOLDER / 'old.pending.json'} ({where})")]
    for policy in (Policy("auto", False), Policy("check", True)):
        assert leftovers(policy, stored, {"gemm"}, Path("/book"), read) == [
            Unused(f"snapshot {FOLDER / 'old.json'} belongs to no tl-pipeline directive "
                   f"({where}); TLSTAGES_SNAPSHOTS=update removes it",
                   "_tlstages/snapshots/old.json")]
    assert leftovers(Policy("auto", False), stored, {"gemm"}, Path("/elsewhere"), read)[0] \
        == Unused(f"snapshot {FOLDER / 'old.json'} belongs to no tl-pipeline directive "
                  f"({where}); TLSTAGES_SNAPSHOTS=update removes it", "old.json")


def test_no_snapshot_is_called_unused_while_a_name_is_in_error() -> None:
    """A directive whose :name: is in error may be any snapshot's: none is removed, in
    any mode, and the warning says where it stands."""
    stored = [("old", FOLDER / "old.json", False)]
    read = Sources(tuple(f"c{n}.rst" for n in range(8)), unnamed=("c3.rst:12",))
    for policy in (Policy("update", False), Policy("auto", True)):
        [unused] = leftovers(policy, stored, set(), Path("/book"), read)
        assert unused == Unused(
            f"snapshot {FOLDER / 'old.json'}: no tl-pipeline directive of that name in the 8 "
            "sources read (c0.rst, c1.rst, c2.rst, c3.rst, c4.rst, c5.rst and 2 more); it "
            "is kept, since the directive at c3.rst:12 has a :name: in error and may be its",
            "_tlstages/snapshots/old.json")


def test_the_accept_command_names_the_book_portably_in_a_report(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    book = tmp_path / "here" / "book"
    book.mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "here")
    assert accept_command(book) == accept_command(book, here=True) \
        == "tlstages snapshots accept book"
    monkeypatch.chdir(book)
    assert accept_command(book) == "tlstages snapshots accept ."
    elsewhere = tmp_path / "other" / "docs"
    # Outside the current folder: the report names it by its name, the log by its path.
    assert accept_command(elsewhere) == "tlstages snapshots accept docs"
    assert accept_command(elsewhere, here=True) == f"tlstages snapshots accept {elsewhere}"


# --- a directive in error, or unread: its snapshot is only read --------------------------

ERROR = Problem(":num-stages: 'three' is not a whole number (kept: num_stages 2)", 6)


def _every_policy() -> list[Policy]:
    return [Policy(mode, strict) for mode in ("auto", "check", "update")
            for strict in (False, True)]


def _writes(decision: Decision) -> list[Path]:
    return [a.path for a in (*decision.before, *decision.after)
            if isinstance(a, (Write, Remove)) and a.path != PENDING]


def test_an_option_in_error_writes_and_removes_nothing_and_fails_on_what_it_hides() -> None:
    """:num-stages: lost its 3 to a typo: the recorded num_stages=3 fails, naming the
    option and its line, in every mode; nothing is written, update included."""
    spec = _spec((2,), problems=(ERROR,))
    for policy in _every_policy():
        decision = decide(policy, _found(_snapshot(2, 3), _snapshot(2), spec), ACCEPT)
        assert not _writes(decision), policy
        assert not decision.fingerprints
        [fail] = [a for a in decision.before if isinstance(a, Fail)]
        assert fail.message.splitlines() == [
            f"gemm: {GOLDEN} records 1 variant(s) this build cannot show; its records are "
            f"kept: fix the option (line 6: {ERROR.message}), then build again",
            "  num_stages=3: not among what its options allow while one is in error"]
        assert [(f.kind, f.variant) for f in fail.drift] == [("unshown", "num_stages=3")]
        # A stale pending file goes: accept must not move it over the snapshot.
        assert Remove(PENDING) in decision.before


def test_an_option_in_error_says_a_drift_and_never_accepts_it() -> None:
    spec = _spec(problems=(ERROR,))
    for policy in _every_policy():
        decision = decide(policy, _found(_snapshot(2, 3), _drifted(), spec), ACCEPT)
        assert not _writes(decision)
        [fail] = [a for a in decision.before if isinstance(a, Fail)]
        assert "  num_stages=3: threads 128 -> 256" in fail.message.splitlines()
        assert fail.message.splitlines()[-1] == (
            f"  not accepted while an option is in error: fix the option (line 6: "
            f"{ERROR.message}), then build again")


def test_an_option_in_error_records_nothing_new() -> None:
    spec = _spec(problems=(ERROR,))
    local = decide(Policy("auto", False), _found(None, _snapshot(2, 3), spec), ACCEPT)
    assert _said(local) == ["note"]
    assert decide(Policy("update", False), _found(_snapshot(2), _snapshot(2, 3), spec),
                  ACCEPT).before[1:] == (Note(
                      f"tl-pipeline: gemm: num_stages=3 not recorded in {GOLDEN} while an "
                      f"option is in error: fix the option (line 6: {ERROR.message}), then "
                      "build again", 4), Counted(1, 0, "0.1.15"))
    ci = decide(Policy("auto", True), _found(None, _snapshot(2, 3), spec), ACCEPT)
    assert _said(ci) == ["fail:missing"]


def test_an_unread_directive_keeps_its_snapshot_and_fails_on_every_variant() -> None:
    why = Problem(":file: gemm.py is not a file (looked for gemm.py)", 5)
    spec = _spec((), problems=(why,))
    for policy in _every_policy():
        found = Found(spec, GOLDEN, SHOWN, _snapshot(2, 3), None, read=False)
        decision = decide(policy, found, ACCEPT)
        assert _said(decision) == ["fail:unshown"]
        [fail] = decision.before
        assert isinstance(fail, Fail)
        assert fail.message.splitlines()[0] == (
            f"gemm: {GOLDEN} records 2 variant(s) this build cannot show; the directive "
            f"could not be read (line 5: {why.message}); its snapshot is kept as it is "
            "until it can")
    assert decide(Policy("update", False), Found(spec, GOLDEN, SHOWN, None, None, read=False),
                  ACCEPT) == Decision()


def test_a_failed_variant_names_why() -> None:
    found = Found(_spec(), GOLDEN, SHOWN, _snapshot(2, 3), _snapshot(2),
                  failed={"3": "failed to lower (exception): ValueError: three"})
    [fail] = [a for a in decide(Policy("update", False), found, ACCEPT).before
              if isinstance(a, Fail)]
    assert fail.message.splitlines()[1] == "  num_stages=3: failed to lower (exception): " \
                                           "ValueError: three"
    [write] = [a for a in decide(Policy("update", False), found, ACCEPT).after
               if isinstance(a, Write)]
    assert sorted(write.snapshot["variants"]) == ["2", "3"]  # its record kept


# --- the compiler's facts, not this extension's sentences -------------------------------

def _hazardous(text: str, statement: str = "T.copy(A, S) at line 9",
               verdict: str = "hazard", kind: str = "RAW") -> dict[str, Any]:
    new = _snapshot(2, 3)
    new["variants"]["3"]["hazards"] = {
        "verdict": verdict, "text": f"{verdict}: {text}",
        "findings": [{"kind": kind, "buffer": "S", "text": text, "at": "k=0",
                      "statements": [{"text": statement, "line": 9}]}]}
    new["variants"]["3"]["unneeded_sync"] = [] if verdict == "hazard" else [
        {"op": "sync", "what": "__syncthreads", "text": text, "site": 0}]
    return new


def test_a_better_sentence_is_a_note_that_update_records() -> None:
    old = _hazardous("reads S while the cp.async is in flight")
    new = _hazardous("at k=0 reads S while the cp.async into it is still in flight",
                     "T.copy(A[k, :], S) at line 10")
    for policy in (Policy("auto", True), Policy("check", False), Policy("auto", False)):
        decision = decide(policy, _found(old, new), ACCEPT)
        assert not any(isinstance(a, Fail) for a in (*decision.before, *decision.after))
        [note] = [a for a in decision.after if isinstance(a, Note)]
        assert "the hazard check words its findings differently" in note.message
        assert [(f.kind, f.variant) for f in note.drift] == [("reworded", "num_stages=3")]
    assert _said(decide(Policy("auto", False), _found(old, new), ACCEPT)) == [
        "|", "counted:2/0", "write:gemm.pending.json", "note"]
    assert _said(decide(Policy("update", False), _found(old, new), ACCEPT)) == RERECORD
    # unneeded_sync: the same statement, explained in other words.
    old, new = (_hazardous(text, verdict="none") for text in ("not needed", "unneeded"))
    assert not any(isinstance(a, Fail) for a in decide(Policy("check", True),
                                                        _found(old, new), ACCEPT).after)


def test_a_verdict_that_moved_while_the_code_did_not_says_so() -> None:
    old, new = _hazardous("x", kind="RAW"), _hazardous("x", kind="WAR")
    decision = decide(Policy("check", True), _found(old, new), ACCEPT)
    [fail] = [a for a in decision.after if isinstance(a, Fail)]
    assert fail.message.splitlines()[1:3] == [
        "  num_stages=3: hazard findings RAW on S -> WAR on S",
        "    why: the check changed; the code did not (the same CUDA and pass fingerprints "
        "as recorded): this extension's hazard check, not TileLang, gives another answer"]
    # Unneeded synchronisation the check no longer names: the check's change too.
    old = _hazardous("x", verdict="none")
    new = copy.deepcopy(old)
    new["variants"]["3"]["unneeded_sync"] = []
    [fail] = [a for a in decide(Policy("check", True), _found(old, new), ACCEPT).after
              if isinstance(a, Fail)]
    assert "the check changed; the code did not" in fail.message
    # With other code, the pass that made it is named instead.
    new["variants"]["3"]["cuda"] = ["__global__ void k() {", "  __syncthreads();", "}"]
    new["variants"]["3"]["pass_fingerprints"][2] = "tl.PipelinePlanning#1 dddddddddddd"
    [fail] = [a for a in decide(Policy("check", True), _found(old, new), ACCEPT).after
              if isinstance(a, Fail)]
    assert "first changed by tl.PipelinePlanning#1" in fail.message
    assert "the check changed" not in fail.message
