"""What changed between a snapshot and the lowering, fact by fact, in words.

:func:`changes` gives each visible difference as a :class:`Change` (which variant, which
fact, before -> after in words); :func:`compare` groups them per variant for the build's
message. Only facts both sides keep are compared: one the snapshot lacks is reported as
not guarded (:func:`.snapshots.lacks`), one the page no longer shows is not kept.

Snapshots guard the compiler's facts, not this extension's sentences. The hazard check's
verdict and the synchronisation it finds unneeded are facts about the code, kept with the
words that explain them: what is compared of them (:data:`CHECK_FACTS`) is the verdict,
each finding's kind and buffer and how many there are, and what each unneeded statement
is (``__syncthreads``, ``cp_async_wait<1>``) and what would suffice. A change only in the
words, the statements they locate or the explanation (a better sentence, a regrouping, a
renumbering in an upgrade of this extension) is :func:`reworded`: reported, re-recorded
by ``update``, never a failure.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ..plan.variants import alike_group, alike_groups
from ..results.cuda import visible_cuda
from ..results.fact_table import COMPARED


@dataclass(frozen=True)
class Change:
    """One visible difference: in which variant (its snapshot id; "" for the directive
    as a whole), which fact (as the snapshot spells it, or ``params``, ``target``,
    ``factory``, ``sweep``, ``variants``), and what changed in words, ``before -> after``."""

    variant: str
    fact: str
    words: str


def _shape(buffer: dict[str, Any]) -> str:
    return f"{tuple(buffer['shape'])} {buffer['dtype']}"


def _change(name: str, before: str, after: str) -> str:
    """``A_shared (3, 128, 64) -> (4, 128, 64)``: a shared trailing word said once."""
    a, b = before.rsplit(" ", 1), after.rsplit(" ", 1)
    if len(a) == len(b) == 2 and a[1] == b[1]:
        return f"{name} {a[0]} -> {b[0]} {a[1]}"
    return f"{name} {before} -> {after}"


def _list(values: Iterable[object]) -> str:
    return ",".join(str(v) for v in values) or "none"


def _count(value: object) -> str:
    return _list(value) if isinstance(value, list) else str(value)


def _pipeline(old: Any, new: Any) -> list[str]:
    found = []
    for key in ("stage", "order"):
        before = " ".join(_list(loop[key]) for loop in old) or "none"
        after = " ".join(_list(loop[key]) for loop in new) or "none"
        if before != after:
            found.append(f"{key} {before} -> {after}")
    return found


# The words of a change that is only a kernel line moving (an edit above it, a comment
# added): the compiler's output is otherwise the same. ``only_moved`` reads them.
MOVED = " moved from line "


def _call(entry: dict[str, Any]) -> str:
    """``T.gemm(A_shared, B_shared, ...)``: a statement by its call and first operands."""
    text = str(entry.get("text") or "")
    name = text.split("(", 1)[0] or "the statement"
    operands = entry.get("operands")
    return f"{name}({', '.join(operands[:2])}, ...)" if operands else name


def _moved(old: dict[str, Any], new: dict[str, Any], what: str) -> str | None:
    """``T.gemm(...) moved from line 40 to 39`` where two entries differ by their line
    alone; None otherwise."""
    if {k: v for k, v in old.items() if k != "line"} != \
            {k: v for k, v in new.items() if k != "line"} or old.get("line") == new.get("line"):
        return None
    return f"{what}{MOVED}{old.get('line')} to {new.get('line')}"


def _roles(old: list[Any], new: list[Any]) -> list[str]:
    """A warp-specialised loop's rows, compared: each statement that moved, and each
    role that gained or lost one, with its line."""
    def key(row: dict[str, Any]) -> tuple[Any, ...]:
        return row.get("role"), row.get("text"), row.get("inserted")

    said: list[str] = []
    matcher = difflib.SequenceMatcher(a=[key(r) for r in old], b=[key(r) for r in new],
                                      autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            said += [moved for a, b in zip(old[i1:i2], new[j1:j2], strict=True)
                     if (moved := _moved(a, b, str(a.get("text") or "a row"))) is not None]
            continue
        said += [f"the {r.get('role')}'s role lost its row at line {r.get('line')}: "
                 f"{r.get('text')}" for r in old[i1:i2]]
        said += [f"the {r.get('role')}'s role gained a row at line {r.get('line')}: "
                 f"{r.get('text')}" for r in new[j1:j2]]
    return said


def _warp(old: Any, new: Any) -> list[str]:
    """A split that changed: its rows (statements moved, a role's row gained or lost),
    else what else changed; keys one side did not record (``line``, ``slots`` and
    ``trips`` came with result schema 6) are not a change."""
    if isinstance(old, dict) and isinstance(new, dict):
        both = old.keys() & new.keys()
        if all(old[key] == new[key] for key in both):
            return []
        said = _roles(old.get("roles") or [], new.get("roles") or []) \
            if "roles" in both and old["roles"] != new["roles"] else []
        if old.get("line") != new.get("line") and "line" in both:
            said.append(f"the warp-specialised loop{MOVED}{old['line']} to {new['line']}")
        rest = sorted(k for k in both - {"roles", "line"} if old[k] != new[k])
        said += [f"warp specialisation's {key} changed" for key in rest]
        return said or ["warp specialisation changed"]
    return ["warp specialisation changed"]


def _buffers(old: Any, new: Any) -> list[str]:
    before = {buf["name"]: _shape(buf) for buf in old}
    after = {buf["name"]: _shape(buf) for buf in new}
    return [_change(name, before.get(name, "absent"), after.get(name, "absent"))
            for name in sorted(before.keys() | after.keys())
            if before.get(name) != after.get(name)]


def _sync(old: Any, new: Any) -> list[str]:
    # A counter the snapshot does not have was not recorded then: not a change.
    return [f"{key} {_count(old.get(key))} -> {_count(new.get(key))}"
            for key in sorted(old.keys()) if old.get(key) != new.get(key)]


def _gemm(old: Any, new: Any) -> list[str]:
    """Each gemm call that moved or became another instruction, where the calls pair up;
    else the instructions as a list."""
    if len(old) == len(new):
        said = []
        for a, b in zip(old, new, strict=True):
            if a == b:
                continue
            moved = _moved(a, b, _call(a))
            if moved is not None:
                said.append(moved)
            elif a.get("instruction") != b.get("instruction"):
                said.append(f"{_call(b)} at line {b.get('line')}: {a.get('instruction')} -> "
                            f"{b.get('instruction')}")
            else:
                fields = sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
                said.append(f"{_call(b)} at line {b.get('line')}: {', '.join(fields)} changed")
        if said:
            return said
    before = _list(g.get("instruction") for g in old)
    after = _list(g.get("instruction") for g in new)
    return [f"gemm {before} -> {after}" if before != after
            else f"gemm calls {len(old)} -> {len(new)}"]


def _pass_counts(old: Any, new: Any) -> list[str]:
    # Runs a claim no longer names are not shown; runs it names anew are not guarded yet.
    return [f'passes["{run}"] {old[run]} -> {new[run]}'
            for run in sorted(old.keys() & new.keys()) if old[run] != new[run]]


def _cuda(old: Any, new: Any) -> list[str]:
    before, after = visible_cuda(old), visible_cuda(new)
    if before == after:
        return []
    code = [[line for line in side if not line.lstrip().startswith("#line")]
            for side in (before, after)]
    if code[0] == code[1]:  # only the kernel lines its #line directives name
        return ["the CUDA's #line directives moved to other kernel lines (its code is the "
                "same)"]
    diff = list(difflib.unified_diff(before, after, lineterm="", n=0))[2:]
    added = sum(1 for line in diff if line.startswith("+"))
    removed = sum(1 for line in diff if line.startswith("-"))
    return [f"CUDA +{added} -{removed} lines"]


# How a fact's change reads; a compared fact without one reads "<fact> changed".
def _resources(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """What the compiler's numbers did: registers, spills, blocks per SM, SASS counts."""
    said = [f"{name.replace('_', ' ')} {old.get(name)} -> {new.get(name)}"
            for name in ("registers", "spill_stores", "spill_loads", "stack", "static_shared")
            if old.get(name) != new.get(name)]
    def part(found: dict[str, Any], name: str) -> dict[str, Any]:
        value = found.get(name)
        return value if isinstance(value, dict) else {}

    blocks = [part(r, "occupancy").get("blocks_per_sm") for r in (old, new)]
    if blocks[0] != blocks[1]:
        said.append(f"blocks per SM {blocks[0]} -> {blocks[1]}")
    sass = [part(r, "sass") for r in (old, new)]
    said += [f"SASS {op} {sass[0].get(op)} -> {sass[1].get(op)}"
             for op in sorted(sass[0].keys() | sass[1].keys())
             if sass[0].get(op) != sass[1].get(op)]
    return said or ["resources changed"]


def _sass_lines(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """Which kernel lines' SASS counts moved, by class (``line 20 mma 256 -> 384``); a
    part not shaped as this version records it is said to have changed, no more."""
    def part(found: Any, name: str) -> dict[str, Any]:
        value = found.get(name) if isinstance(found, dict) else None
        return value if isinstance(value, dict) else {}

    def moved(before: Any, after: Any) -> list[tuple[str, Any, Any]]:
        before = before if isinstance(before, dict) else {}
        after = after if isinstance(after, dict) else {}
        return [(name, before.get(name, 0), after.get(name, 0))
                for name in sorted(before.keys() | after.keys())
                if before.get(name, 0) != after.get(name, 0)]

    said = []
    lines = [part(old, "lines"), part(new, "lines")]
    for key in sorted(lines[0].keys() | lines[1].keys(),
                      key=lambda k: (0, int(k)) if str(k).isdigit() else (1, 0)):
        said += [f"SASS at line {key} {name} {a} -> {b}"
                 for name, a, b in moved(lines[0].get(key), lines[1].get(key))]
    said += [f"SASS on no kernel line {name} {a} -> {b}"
             for name, a, b in moved(part(old, "unattributed"), part(new, "unattributed"))]
    return said or ["SASS by kernel line changed"]


def _findings(value: Any) -> list[tuple[str, str]]:
    """Each finding's (kind, buffer); one not shaped as recorded, by what it is."""
    found = value.get("findings") if isinstance(value, dict) else None
    if not isinstance(found, list):
        return [("?", repr(found))] if found is not None else []
    return sorted((str(f.get("kind")), str(f.get("buffer"))) if isinstance(f, dict)
                  else ("?", repr(f)) for f in found)


def _hazard_facts(value: Any) -> object:
    """What the hazard check found, without its words: the verdict, and each finding's
    kind and buffer (as many as there are)."""
    return (value.get("verdict") if isinstance(value, dict) else value, _findings(value))


def _unneeded_facts(value: Any) -> object:
    """Each synchronisation statement the check found unneeded, without its words: what
    it is (``__syncthreads``, ``cp_async_wait<0>``) and the weaker wait that suffices."""
    if not isinstance(value, list):
        return value
    return sorted((str(e.get("op")), str(e.get("what")), str(e.get("suffices")))
                  for e in value if isinstance(e, dict))


# The facts the hazard check gives: compared by what they say of the code (each its
# reading), their words and located statements never.
CHECK_FACTS: dict[str, Callable[[Any], object]] = {
    "hazards": _hazard_facts,
    "unneeded_sync": _unneeded_facts,
}


def _hazards(old: Any, new: Any) -> list[str]:
    said = [f"hazards {old.get('verdict')!r} -> {new.get('verdict')!r}"] \
        if old.get("verdict") != new.get("verdict") else []
    before, after = _findings(old), _findings(new)
    if before != after:
        said.append("hazard findings " + (", ".join(f"{k} on {b}" for k, b in before) or "none")
                    + " -> " + (", ".join(f"{k} on {b}" for k, b in after) or "none"))
    return said


_WORDS: dict[str, Callable[[Any, Any], list[str]]] = {
    "pipeline": _pipeline,
    "shared": _buffers,
    "dynamic_shared_bytes": lambda a, b: [f"shared memory {a:,} -> {b:,} B"],
    "static_shared_bytes": lambda a, b: [f"static shared memory {a:,} -> {b:,} B"],
    "threads": lambda a, b: [f"threads {a} -> {b}"],
    "num_stages": lambda a, b: [f"num_stages {a} -> {b}"],
    "cuda_lines": lambda a, b: [f"lines of code {a} -> {b}"],
    "sync": _sync,
    "warp_specialized": lambda a, b: _warp(a, b),
    "gemm": _gemm,
    "tmem": lambda a, b: [f"tensor memory {said}" for said in _buffers(a, b)]
    or ["tmem changed"],
    "pass_counts": _pass_counts,
    "hazards": _hazards,
    "unneeded_sync": lambda a, b: [
        "synchronisation no dependence needs: "
        f"{', '.join(e.get('what', '?') for e in a) or 'none'} -> "
        f"{', '.join(e.get('what', '?') for e in b) or 'none'}"],
    "resources": _resources,
    "sass_lines": _sass_lines,
    "cuda": _cuda,
}
# The order a variant's changes are said in: the schedule first, the code last.
_ORDER = ("pipeline", "shared", "dynamic_shared_bytes", "threads", "sync", "warp_specialized")


def variant_changes(variant: str, old: dict[str, Any], new: dict[str, Any]) -> list[Change]:
    """What changed in one variant, among the compared facts both sides keep."""
    if "error" in old or "error" in new:
        if old.get("error") == new.get("error"):
            return []
        before = f"failed ({old['error']})" if "error" in old else "lowered"
        after = f"failed ({new['error']})" if "error" in new else "lowered"
        return [Change(variant, "error", f"{before} -> {after}")]
    both = old.keys() & new.keys() & COMPARED
    rest = sorted(both - set(_ORDER) - {"cuda"})
    found = []
    for fact in [f for f in _ORDER if f in both] + rest + (["cuda"] if "cuda" in both else []):
        reading = CHECK_FACTS.get(fact)
        if old[fact] == new[fact] or (reading is not None
                                      and reading(old[fact]) == reading(new[fact])):
            continue
        words = _WORDS[fact](old[fact], new[fact]) if fact in _WORDS else [f"{fact} changed"]
        found += [Change(variant, fact, said) for said in words]
    return found


_REWORDED = {"hazards": "the hazard check's words", "unneeded_sync":
             "the words on synchronisation no dependence needs"}


def reworded(old: dict[str, Any], new: dict[str, Any]) -> list[Change]:
    """Per variant both snapshots have, the facts of the hazard check whose words changed
    while what they say of the code did not (:data:`CHECK_FACTS`): this extension's
    sentences, not the compiler's facts. Reported, re-recorded by ``update``, never a
    drift."""
    found = []
    for key in sorted(old["variants"].keys() & new["variants"].keys(), key=_order):
        before, after = old["variants"][key], new["variants"][key]
        if not isinstance(before, dict) or not isinstance(after, dict) \
                or "error" in before or "error" in after:
            continue
        for fact, reading in CHECK_FACTS.items():
            if fact in before and fact in after and before[fact] != after[fact] \
                    and reading(before[fact]) == reading(after[fact]):
                found.append(Change(key, fact, f"{_REWORDED[fact]} changed (what they "
                                    "say of the code did not)"))
    return found


def check_changed_alone(old: dict[str, Any], new: dict[str, Any]) -> str | None:
    """Where a variant's only changes are the hazard check's while TileLang's output is
    the same as recorded (the same CUDA, and the same pass fingerprints where both have
    them), the words that say so; None otherwise (``old``, ``new``: one variant each)."""
    if "error" in old or "error" in new:
        return None
    if not (old.keys() & new.keys() & set(CHECK_FACTS)):
        return None
    changed = {c.fact for c in variant_changes("", old, new)}
    if not changed or not changed <= set(CHECK_FACTS):
        return None
    if "cuda" not in old or "cuda" not in new \
            or visible_cuda(old["cuda"]) != visible_cuda(new["cuda"]):
        return None
    prints = [old.get("pass_fingerprints"), new.get("pass_fingerprints")]
    if None not in prints:
        if prints[0] != prints[1]:
            return None
        return ("the check changed; the code did not (the same CUDA and pass fingerprints "
                "as recorded): this extension's hazard check, not TileLang, gives another "
                "answer")
    return ("the check changed; the code did not (the same CUDA as recorded): this "
            "extension's hazard check, not TileLang, gives another answer")


def _order(variant_id: str) -> tuple[int, str]:
    return (int(variant_id), "") if variant_id.isdigit() else (-1, variant_id)


def _alike(variants: dict[str, Any], ids: Sequence[str]) -> str | None:
    """The variants the page shows as one (``1,2,3,4``-style groups, by the page's own
    rule, :func:`..plan.variants.alike_groups`), or None when the snapshot did not record
    it."""
    if any("error" not in variants[i] and "planned_ir" not in variants[i] for i in ids):
        return None
    groups = alike_groups([(alike_group(i), variants[i]) for i in ids])
    merged = [[ids[j] for j in group.members] for group in groups if group.merged]
    return "; ".join(",".join(g) for g in sorted(merged, key=lambda g: _order(g[0]))) or "none"


def input_changes(old: dict[str, Any], new: dict[str, Any]) -> list[Change]:
    """The directive's own inputs that changed: its targets, factory, sweep and params
    (which decide which variants there are)."""
    found: list[Change] = []
    for key in ("target", "factory", "sweep"):
        if old.get(key) != new.get(key):
            found.append(Change("", key, f"{key} {old.get(key)} -> {new.get(key)}"))
    old_params, new_params = old.get("params", {}), new.get("params", {})
    for name in sorted(old_params.keys() | new_params.keys()):
        if old_params.get(name) != new_params.get(name):
            found.append(Change("", "params",
                                f"params {name}={old_params.get(name, '(unset)')} -> "
                                f"{name}={new_params.get(name, '(unset)')}"))
    return found


def changes(old: dict[str, Any], new: dict[str, Any]) -> list[Change]:
    """Every visible change from snapshot ``old`` to snapshot ``new``: the directive's
    inputs, then each variant's facts, then which variants are shown as one. The TileLang
    version, ``#line`` numbers into TileLang's files, a result-schema bump and facts one
    side did not keep are provenance, never a change."""
    found = input_changes(old, new)
    old_v, new_v = old["variants"], new["variants"]
    for key in sorted(old_v.keys() | new_v.keys(), key=_order):
        if key not in new_v:
            found.append(Change(key, "variants", "no longer lowered"))
        elif key not in old_v:
            found.append(Change(key, "variants", "new"))
        else:
            found += variant_changes(key, old_v[key], new_v[key])
    both = sorted(old_v.keys() & new_v.keys(), key=_order)
    before, after = _alike(old_v, both), _alike(new_v, both)
    if before is not None and after is not None and before != after:
        found.append(Change("", "planned_ir",
                            f"variants shown as one (lowered alike) {before} -> {after}"))
    return found


def version_change(old: dict[str, Any], new: dict[str, Any]) -> str | None:
    """``TileLang 0.1.14 -> 0.1.15`` when the snapshots were recorded with different
    releases (provenance: said, never failed)."""
    said = [f"{name} {old.get(key)} -> {new.get(key)}"
            for key, name in (("tilelang", "TileLang"), ("toolkit", "NVIDIA's compiler"))
            if old.get(key) != new.get(key) and (key == "tilelang" or key in old)]
    return ", ".join(said) or None


def compare(old: dict[str, Any], new: dict[str, Any]) -> tuple[str | None, list[tuple[str, str]]]:
    """(TileLang versions when they differ, [(variant id or "", its changes in words,
    joined by "; "), ...]): :func:`changes` as the build says them."""
    said: list[tuple[str, str]] = []
    for change in changes(old, new):
        if change.variant and said and said[-1][0] == change.variant:
            said[-1] = (change.variant, f"{said[-1][1]}; {change.words}")
        else:
            said.append((change.variant, change.words))
    return version_change(old, new), said


def only_moved(changes: list[tuple[str, str]]) -> bool:
    """Whether every change said is a kernel line that moved (the compiler's output is
    otherwise the same)."""
    return bool(changes) and all(MOVED in change or "#line directives moved" in change
                                 for _, change in changes)
