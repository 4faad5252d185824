"""The cp.async figure's content, before any coordinate: lanes, boxes and sync marks.

One lane per statement of the ``T.Pipelined`` body, in the order the compiler emits them
in the steady state; loops of many statements fold runs of alike ones (same stage, no
versioned buffer, not an async producer, adjacent wherever they appear) into one lane, and
the figure says so. :func:`drawn_schedule` gives the same content as data, for tests and
for the sentence other builders print.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from .drawing import clip
from .hazard_marks import words

Json = dict[str, Any]

FOLD_OVER = 6      # fold alike statements when the loop has more statements than this
FOLD_MIN = 3       # ... and at least this many are alike in a row
LABEL_CHARS = 24   # lane label, monospace characters


@dataclass
class Lane:
    stmts: list[int]
    label: str
    title: str


@dataclass
class Slot:
    kind: str                      # "stmt" | "sync"
    lane: int = -1
    label: str = ""
    version: int | None = None
    title: str = ""
    sync: str = ""


@dataclass
class Part:
    name: str
    steps: list[list[Slot]] = field(default_factory=list)


def stmt_text(fig: Json, i: int) -> str:
    stmt = fig["statements"][i] if i < len(fig["statements"]) else {}
    return str(stmt.get("text") or f"statement {i}")


def compact(text: str) -> str:
    """A statement's text with long subscripts elided: ``T.copy(A[…], A_shared)``."""
    return re.sub(r"\[[^\[\]]{6,}\]", "[…]", text)


def stmt_line(fig: Json, i: int) -> int | None:
    line = fig["statements"][i].get("line") if i < len(fig["statements"]) else None
    return int(line) if isinstance(line, int) else None


def versioned(item: Json, dims: dict[str, int]) -> int | None:
    for v in item.get("versions", []):
        if v.get("buffer") in dims and isinstance(v.get("version"), int):
            return int(v["version"])
    return None


def _steps(fig: Json) -> list[list[Json]]:
    return [fig["body"], *fig["prologue"], *fig["epilogue"]]


def _lane_order(fig: Json) -> list[int]:
    seen: list[int] = []
    for step in _steps(fig):
        for item in step:
            if "stmt" in item and item["stmt"] not in seen:
                seen.append(item["stmt"])
    return seen


def _alike(fig: Json, i: int) -> int | None:
    """The stage of a statement that may fold with its neighbours (None: never folded)."""
    dims = fig.get("version_dims", {})
    producers = fig.get("async_producers") or []
    if i < len(producers) and producers[i]:
        return None
    for step in _steps(fig):
        for item in step:
            if item.get("stmt") == i and versioned(item, dims) is not None:
                return None
    return int(fig["stage"][i])


def _adjacent_everywhere(fig: Json, run: list[int]) -> bool:
    """Whether the statements of ``run`` stand next to each other, in this order, wherever
    they appear (so one folded box per step says the truth)."""
    for step in _steps(fig):
        positions = [k for k, item in enumerate(step) if item.get("stmt") in run]
        if not positions:
            continue
        if [step[k]["stmt"] for k in positions] != run \
                or positions != list(range(positions[0], positions[0] + len(run))):
            return False
    return True


def _label(fig: Json, i: int) -> tuple[str, str]:
    line = stmt_line(fig, i)
    prefix = f"L{line} " if line is not None else ""
    text = stmt_text(fig, i)
    short = compact(text).removeprefix("T.")  # every tile operation is T.something
    return (clip(prefix + short, LABEL_CHARS),
            f"{prefix}{text} (stage {fig['stage'][i]})")


def lanes(fig: Json) -> list[Lane]:
    order = _lane_order(fig)
    fold = len(fig["statements"]) > FOLD_OVER
    found: list[Lane] = []
    k = 0
    while k < len(order):
        run = [order[k]]
        key = _alike(fig, order[k])
        if fold and key is not None:
            while k + len(run) < len(order) and _alike(fig, order[k + len(run)]) == key \
                    and _adjacent_everywhere(fig, [*run, order[k + len(run)]]):
                run.append(order[k + len(run)])
        if len(run) < FOLD_MIN:
            run = run[:1]
        k += len(run)
        if len(run) == 1:
            found.append(Lane(run, *_label(fig, run[0])))
            continue
        lines = [x for x in (stmt_line(fig, i) for i in run) if x is not None]
        span = f"L{min(lines)}–{max(lines)}" if lines else "statements"
        found.append(Lane(run, clip(f"{span}: {len(run)} folded", LABEL_CHARS),
                          f"{len(run)} statements folded into one lane (same stage "
                          f"{fig['stage'][run[0]]}, no versioned buffer, always adjacent): "
                          + "; ".join(stmt_text(fig, i) for i in run)))
    return found


def tile(item: Json, trip: Any, var: str) -> str:
    """The tile a box works on: ``ko+2`` in the steady state, ``0`` or ``n-1`` around it."""
    if "offset" in item:
        o = int(item["offset"])
        return var if o == 0 else f"{var}{'+' if o > 0 else '−'}{abs(o)}"
    if "from_end" in item:
        return f"n−{item['from_end']}"
    t = int(item["iter"])
    if isinstance(trip, int) and t >= trip // 2 and trip - t > 0:
        return f"n−{trip - t}"
    return str(t)


def sync_label(item: Json) -> str:
    return "C" if item["sync"] == "commit" else f"W{item.get('n')}"


def sync_words(item: Json) -> str:
    return "commit" if item["sync"] == "commit" else f"wait<{item.get('n')}>"


def _sync_title(item: Json) -> str:
    if item["sync"] == "commit":
        return "tl::cp_async_commit(): closes the group of async copies issued since the last"
    return (f"tl::cp_async_wait<{item.get('n')}>(): waits until at most {item.get('n')} "
            "committed groups are still in flight")


def _slots(fig: Json, step: list[Json], found: list[Lane], var: str) -> list[Slot]:
    lane_of = {i: n for n, lane in enumerate(found) for i in lane.stmts}
    dims = fig.get("version_dims", {})
    out: list[Slot] = []
    for item in step:
        if "sync" in item:
            out.append(Slot("sync", sync=sync_label(item), title=_sync_title(item)))
            continue
        if "stmt" not in item or item["stmt"] not in lane_of:
            continue
        i = int(item["stmt"])
        lane = lane_of[i]
        label = tile(item, fig.get("trip_count"), var)
        if out and out[-1].kind == "stmt" and out[-1].lane == lane \
                and len(found[lane].stmts) > 1:
            continue  # the rest of a folded run: one box says it
        where = ", ".join(f"{v['access']}s {v['buffer']}[{v['version']}]"
                          for v in item.get("versions", []) if v.get("buffer") in dims)
        text = found[lane].title if len(found[lane].stmts) > 1 else stmt_text(fig, i)
        guard = f" (only if {item['guard']})" if item.get("guard") else ""
        title = f"{text}: tile {label}{guard}" + (f"; {where}" if where else "")
        out.append(Slot("stmt", lane=lane, label=label, version=versioned(item, dims),
                        title=title))
    return out


def parts(fig: Json) -> tuple[list[Lane], list[Part]]:
    var = str(fig.get("loop_var") or "k")
    found = lanes(fig)
    return found, [Part("prologue", [_slots(fig, s, found, var) for s in fig["prologue"]]),
                   Part("steady state", [_slots(fig, fig["body"], found, var)]),
                   Part("epilogue", [_slots(fig, s, found, var) for s in fig["epilogue"]])]


def drawn_schedule(fig: Json) -> Json:
    """What the cp.async figure draws, as data: the lanes' labels and, per part and step,
    the boxes (lane, tile, version) and sync marks (``C``, ``W2``); ``repeat`` is how often
    the steady state runs."""
    found, drawn = parts(fig)

    def slot(s: Slot) -> Json:
        if s.kind == "sync":
            return {"sync": s.sync}
        return {"lane": s.lane, "tile": s.label, "version": s.version}

    out: Json = {"lanes": [lane.label for lane in found],
                 "lane_statements": [lane.stmts for lane in found]}
    for part, key in zip(drawn, ("prologue", "body", "epilogue"), strict=True):
        out[key] = [[slot(s) for s in step] for step in part.steps]
    out["repeat"] = fig["loop"].get("extent")
    return out


def last_iteration(loop: Json) -> str:
    if isinstance(loop.get("extent"), int) and isinstance(loop.get("min"), int):
        return str(loop["min"] + loop["extent"] - 1)
    extent = str(loop.get("extent"))
    if loop.get("min") == 0 and extent.startswith("n−") and extent[2:].isdigit():
        return f"n−{int(extent[2:]) + 1}"
    return f"{loop.get('min')} + {extent} − 1"


def times(loop: Json) -> str:
    extent = loop.get("extent")
    return f"×{extent}" if isinstance(extent, int) else f"×({extent})"


def _step_words(fig: Json, step: list[Json], var: str) -> str:
    words: list[str] = []
    dims = fig.get("version_dims", {})
    for item in step:
        if "sync" in item:
            words.append(sync_words(item))
        elif "stmt" in item:
            i = int(item["stmt"])
            version = versioned(item, dims)
            v = f" (version {version})" if version is not None else ""
            words.append(f"{clip(compact(stmt_text(fig, i)), 60)} on tile "
                         f"{tile(item, fig.get('trip_count'), var)}{v}")
    return ", ".join(words)


# A synchronous pipeline's legend and sentence: why no commit or wait is drawn.
SYNCHRONOUS = ("no commits or waits: each copy is plain loads and stores into threadgroup "
               "memory, ordered by threadgroup_barrier (not drawn), not an asynchronous copy")


def describe(fig: Json, covers: list[str]) -> str:
    """The figure in words, step by step (its ``<desc>``)."""
    var = str(fig.get("loop_var") or "k")
    loop = fig["loop"]
    steps = [f"Prologue step {n + 1}: {_step_words(fig, step, var)}."
             for n, step in enumerate(fig["prologue"])]
    steps.append(f"Steady state, repeated {loop['extent']} times for {var} = {loop['min']} "
                 f"to {last_iteration(loop)}: {_step_words(fig, fig['body'], var)} "
                 f"(versions shown for {var} = {loop['min']}).")
    steps += [f"Epilogue step {n + 1}: {_step_words(fig, step, var)}."
              for n, step in enumerate(fig["epilogue"])]
    kind = "Synchronous software pipeline" if fig.get("synchronous") else "Software pipeline"
    trip = fig.get("trip_count")
    # A figure standing for variants of different trip counts says n symbolically; each
    # variant's n is in its label (see model.group_variants).
    tiles = f"n = {trip} tiles" if isinstance(trip, int) else \
        "n tiles (each variant's n is given with it under Covers)"
    return (f"{kind} of a {len(fig['statements'])}-statement loop over "
            f"{tiles}, num_stages = {fig.get('num_stages')}; "
            f"time runs left to right through the generated code. {versions_said(fig)}. "
            + " ".join(steps) + f" Covers {'; '.join(covers)}." + _synchronous(fig)
            + _hazards(fig))


def _synchronous(fig: Json) -> str:
    return f" {SYNCHRONOUS[0].upper()}{SYNCHRONOUS[1:]}." if fig.get("synchronous") else ""


def _hazards(fig: Json) -> str:
    """The findings placed on the figure, in a sentence (``""`` for none)."""
    said = words(fig, lambda i: f"L{stmt_line(fig, i)} {compact(stmt_text(fig, i))}")
    return f" {said}" if said else ""


def versions_said(fig: Json, lower: bool = False) -> str:
    dims = fig.get("version_dims", {})
    said = ("no shared buffer has a version dimension" if not dims else "shared buffers "
            + ", ".join(f"{b} ({d} versions)" for b, d in sorted(dims.items())))
    return said if lower else said[0].upper() + said[1:]


def sentence(fig: Json, covers: list[str]) -> str:
    """The figure in one sentence, for builders that show no pictures."""
    def marks(steps: list[list[Json]]) -> str:
        found = [sync_words(i) for step in steps for i in step if i.get("sync") == "wait"]
        return f" ({', '.join(found)})" if found else ""

    loop = fig["loop"]
    body = ", ".join(sync_words(i) for i in fig["body"] if "sync" in i) or "no sync"
    return (f"Schedule figure for {'; '.join(covers)}: {len(fig['prologue'])} prologue "
            f"step(s){marks(fig['prologue'])}, then the steady state {times(loop)} "
            f"({body}), then {len(fig['epilogue'])} epilogue step(s)"
            f"{marks(fig['epilogue'])}; {versions_said(fig, lower=True)}." + _synchronous(fig)
            + _hazards(fig))
