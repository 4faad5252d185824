"""What a schedule figure draws, as plain data, and which variants share one.

The worker stores ``Result["schedule"]`` (``worker/ir/schedule.py``)::

    {"schema": 1,
     "loops": [LOOP, ...],                  # one per T.Pipelined loop the pipeliner rewrote
     "warp_specialized": WS | None,         # the producer/consumer loops (Hopper, Blackwell)
     "generated": [...], "problems": [...], # the final code's loop, and where they disagree
     "error": "..."}                        # only when the IR could not be read

    LOOP = {"loop_var": "ko", "num_stages": 3, "stage": [0, 0, 2], "order": [0, 1, 2],
            "async_producers": [1, 1, 0], "statements": [{"ir": "T.copy(A, A_shared)"}],
            "version_dims": {"A_shared": 3}, "trip_count": 16 | "<IR>",
            "loop": {"min": 0, "extent": 14 | "<IR>"},
            "prologue": [[ITEM, ...], ...], "body": [ITEM, ...], "epilogue": [[ITEM, ...]],
            "replayed": [2],     # bindings evaluated again with their readers (their stage)
            "unrolled": True,    # the steady state runs once, emitted as a block: no loop
            "whole": True}       # every statement in one stage: left as it was, not drawn
    ITEM = {"stmt": 2, "iter": 14 (prologue, epilogue) | "offset": 0 (body: k + offset),
            "iter_from": "loop_var" | "version" | "stage",
            "versions": [{"buffer": "A_shared", "access": "read", "version": 2}],
            "guard": "<IR>"}
         | {"sync": "commit"} | {"sync": "wait", "n": 2} | {"other": "T.op(...)"}
    WS = {"loop_var", "num_stages", "version_dims", "statements", "producer_threads",
          "producer" | "consumer": {"loop": {"min", "extent"}, "before", "after",
              "body": [{"barrier_op": "wait" | "arrive" | ..., "op", "barrier": [per k],
                        "parity": [per k]}
                       | {"stmt", "op", "buffers", "versions": [{"buffer", "access",
                          "slot": [per k]}], "barrier": [per k], "arrives": bool}
                       | {"when": "k == 0", "active": [per k], "items": [...]}]},
          "prelude": [{"op", "buffers", "barrier"}], "barriers": [{"name", "size", "init"}]}

:func:`schedule_figures` turns one variant's result into figure data (statements named by
their source text and line, as the tables name them) or says in a sentence why there is
nothing to draw; :func:`group_variants` keeps one figure per distinct drawing. The figure
of a flagged variant also holds ``"hazards"``: the findings that could be placed on
its statements (:mod:`.hazard_marks`); a clean one has no such key.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..results.result import Result
from ..results.unread import schedule_unread
from .hazard_marks import matched

Json = dict[str, Any]


def _statements(named: Sequence[Mapping[str, Any]], read: list[Json],
                line: Callable[[int | None], int | None]) -> list[Json]:
    """Source text and document line where the tables or the reader have them, else the
    IR's label."""
    if read and all("text" in s for s in read):  # named by the worker, statement by statement
        named = read
    if len(named) != len(read):
        return [{"text": s.get("ir", "?"), "line": None} for s in read]
    return [{"text": f"{s['text']} (TileLang's: {s['added']})" if s.get("added")
             else s["text"], "line": line(s.get("line"))} for s in named]


def schedule_figures(result: Result, line: Callable[[int | None], int | None] = lambda n: n,
                     synchronous: bool = False) -> tuple[list[Json], str | None]:
    """(figure data, None), or ([], why there is nothing to draw) for one variant.
    ``line`` maps a kernel line to the line the page numbers it with; ``synchronous``:
    the target's copies are plain loads and stores (Metal), which its figures say."""
    if not result.get("ok"):
        return [], "failed to lower, so there is no schedule to draw"
    schedule = result.get("schedule")
    if schedule is None:
        if result.get("from_snapshot"):
            return [], "shown from the committed snapshot, which does not record the schedule"
        if any(loop.get("stage") for loop in result.get("pipeline") or []) \
                or result.get("warp_specialized"):
            return [], f"{schedule_unread(None)}, so it is not drawn"
        return [], ("nothing is pipelined (no software pipeline, no warp specialisation): "
                    "num_stages has no effect on this loop")
    unreadable = schedule_unread(schedule)
    if unreadable:
        return [], f"{unreadable}, so it is not drawn"
    hazards: Mapping[str, Any] = result.get("hazards") or {}
    findings = list(hazards.get("findings", [])) if hazards.get("verdict") == "hazard" else []
    figures: list[Json] = []
    ws = schedule.get("warp_specialized")
    if ws:
        warp: Mapping[str, Any] = result.get("warp_specialized") or {}
        roles = [r for r in warp.get("roles", []) if not r.get("inserted")]
        fig = {**ws, "kind": "warp_specialized",
               "statements": _statements(roles, ws["statements"], line),
               "producer_threads": warp.get("producer_threads", ws.get("producer_threads")),
               "consumer_threads": warp.get("consumer_threads")}
        if warp.get("line") is not None:  # each loop its own figure: which one this is
            fig["line"] = line(warp.get("line"))
        if not ws.get("version_dims"):  # which of the copies' buffers are the ring's
            fig["shared_names"] = sorted(str(b.get("name")) for b in result.get("shared") or [])
        marks = matched(findings, fig["statements"], line)
        figures.append({**fig, "hazards": marks} if marks else fig)
    tables = result.get("pipeline") or []
    # Another T.Pipelined loop may be software-pipelined beside the warp-specialised one
    # (TileLang splits one loop per kernel): it has its own figure.
    whole = False
    for i, loop in enumerate(schedule.get("loops", [])):
        if loop.get("whole"):  # all in one stage: TileLang left it as it was
            whole = True
            continue
        named = tables[i]["statements"] if i < len(tables) else []
        fig = {**loop, "kind": "cp_async", "loop_index": i,
               "statements": _statements(named, loop["statements"], line)}
        if synchronous:  # only then: a CUDA figure's data (and its digest) stay as they were
            fig["synchronous"] = True
        if i < len(tables) and tables[i].get("line") is not None:
            fig["line"] = line(tables[i].get("line"))
        # Only a figure with a finding placed on it gets the key: a clean one is unchanged.
        marks = matched(findings, fig["statements"], line)
        if marks:
            fig["hazards"] = marks
        figures.append(fig)
    if not figures and whole:
        return [], ("TileLang planned every statement of the loop in one stage, so the "
                    "pipeliner left it as it was: there is no schedule to draw")
    if not figures:
        return [], "nothing is pipelined, so there is no schedule to draw"
    return figures, None


def _trip(fig: Json) -> int | None:
    trip = fig.get("trip_count")
    return trip if isinstance(trip, int) and not isinstance(trip, bool) else None


def schedule_key(fig: Json) -> str:
    """What a figure draws, canonically: variants with equal keys share a figure. The
    number of tiles n is left out where the figure can say it symbolically (steady state
    x(n-S), epilogue tiles n-j); the versions the epilogue uses (which depend on n modulo
    the version count) stay in."""
    drawn = json.loads(json.dumps(fig))
    trip = _trip(drawn)
    if drawn.get("kind") == "cp_async" and trip is not None \
            and isinstance(drawn["loop"].get("extent"), int):
        drawn.pop("trip_count")
        drawn["loop"]["extent"] -= trip
        for step in drawn["epilogue"]:
            for item in step:
                if "iter" in item:
                    item["iter"] -= trip
    if drawn.get("kind") == "warp_specialized":
        for role in ("producer", "consumer"):
            drawn[role]["loop"].pop("extent", None)
    return json.dumps(drawn, sort_keys=True, separators=(",", ":"))


def group_variants(figs: list[tuple[str, Json]]) -> list[tuple[list[str], Json]]:
    """``[(variant label, figure data)]`` -> ``[(labels covered, figure data)]``, by kind
    of figure and num_stages (then in the order each first appears). Where the variants
    of a group loop over different numbers of tiles, each label says its n and the figure
    says n symbolically."""
    groups: dict[str, list[tuple[str, Json]]] = {}
    for label, fig in figs:
        groups.setdefault(schedule_key(fig), []).append((label, fig))
    out: list[tuple[list[str], Json]] = []
    for members in groups.values():
        first = members[0][1]
        trips = {_trip(f) for _, f in members}
        if len(trips) > 1 and None not in trips and first.get("kind") == "cp_async":
            fig = json.loads(json.dumps(first))
            trip = _trip(first) or 0
            for step in fig["epilogue"]:
                for item in step:
                    if "iter" in item:
                        item["from_end"] = trip - item.pop("iter")
            fig["loop"]["extent"] = f"n−{trip - first['loop']['extent']}"
            fig["trip_count"] = "n"
            labels = [f"{label} (n = {_trip(f)})" for label, f in members]
        elif first.get("kind") == "warp_specialized" \
                and len({f["producer"]["loop"].get("extent") for _, f in members}) > 1:
            fig = json.loads(json.dumps(first))
            for role in ("producer", "consumer"):
                fig[role]["loop"]["extent"] = None
            labels = [f"{label} ({f['producer']['loop'].get('extent')} iterations)"
                      for label, f in members]
        else:
            fig, labels = first, [label for label, _ in members]
        out.append((labels, fig))
    # Alike drawings together (the cp.async and the warp-specialised ones of a directive
    # with two targets), each kind by num_stages: a matrix's schedules read in order.
    kinds = list(dict.fromkeys(fig.get("kind") for _, fig in out))
    return sorted(out, key=lambda group: (kinds.index(group[1].get("kind")),
                                          int(group[1].get("num_stages") or 0)))


def group_notes(notes: list[tuple[str, str]]) -> list[tuple[list[str], str]]:
    """``[(variant label, why nothing is drawn)]`` grouped by the reason, in order."""
    grouped: dict[str, list[str]] = {}
    for label, note in notes:
        grouped.setdefault(note, []).append(label)
    return [(labels, note) for note, labels in grouped.items()]
