"""A recorded timeline read: each warp's time cut into what it did between two probes.

One variant's recording (:mod:`..records.timeline_data`) holds, per warp, its probes'
events in the order it ran them. A probe before a statement and the one after it bound
a *segment*: ``wait`` (a cp.async wait or an mbarrier wait: the warp waits for data, or
for a free slot of the ring), ``barrier`` (``__syncthreads``: it waits for the other
warps of its block), ``mma`` (a T.gemm's tensor-core work), ``issue`` (a TMA issue, or
the cp.async copies a commit closes: the time from the probe before them to the
commit). A commit or an mbarrier arrive is a *mark*: it does not block. What lies
between segments (address arithmetic, the probes themselves) is left blank.

:func:`timeline_input` gives the figure's data for one GPU's recordings of a directive:
one panel per variant, one row per role (the block's first warp, or the first warp of
each warp group of a warp-specialised block), the numbers its table shows.
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .timeline_data import order_problems, warp_role

Json = dict[str, Any]

SEGMENT_OF = {"wait": "wait", "mbarrier_wait": "wait", "sync": "barrier", "mma": "mma",
              "tma": "issue"}
MARKS = {"commit": "C", "arrive": "A"}
KINDS = ("wait", "barrier", "mma", "issue")
SHOWN_ITERATIONS = 16  # a longer loop is drawn to the start of this iteration


@dataclass
class Line:
    """One warp's time, read."""

    block: int
    warp: int
    role: str | None
    begin: int = 0
    end: int = 0
    # [kind, start, end, label, iteration] (label: W2, B, M, T, copies, sync)
    segments: list[list[Any]] = field(default_factory=list)
    marks: list[list[Any]] = field(default_factory=list)  # [C or A, cycle]
    starts: dict[int, int] = field(default_factory=dict)  # loop iteration -> first cycle
    parts: dict[str, list[int]] = field(default_factory=dict)  # part -> [start, end]


def _label(site: Json) -> str:
    kind = site["kind"]
    if kind == "wait":
        return f"W{site.get('n')}"
    return {"mbarrier_wait": "B", "sync": "sync", "mma": "M", "tma": "T"}.get(kind, str(kind))


def read_warp(entry: Json, warp: Json) -> Line:
    """``warp``'s events (one of ``entry["warps"]``) as segments and marks."""
    sites = {site["id"]: site for site in entry["sites"]}
    line = Line(warp["block"], warp["warp"], warp_role(entry, warp))
    events = warp["events"]
    if not events:
        return line
    line.begin, line.end = events[0][2], events[-1][2]
    previous: tuple[Json, int] | None = None
    for site_id, iteration, cycle in events:
        site = sites[site_id]
        part = str(site.get("part", ""))
        if part:
            span = line.parts.setdefault(part, [cycle, cycle])
            span[0], span[1] = min(span[0], cycle), max(span[1], cycle)
        if iteration >= 0 and site.get("part") == "loop":
            line.starts.setdefault(iteration, cycle)
        kind = site["kind"]
        if kind in MARKS:
            line.marks.append([MARKS[kind], cycle])
            # The copies a commit closes: since the warp's last step ended (or began).
            if kind == "commit" and previous is not None and previous[0]["kind"] != "commit" \
                    and (previous[0]["at"] == "after" or previous[0]["kind"] == "begin"):
                line.segments.append(["issue", previous[1], cycle, "copies", iteration])
        elif site["at"] == "after" and previous is not None \
                and previous[0]["at"] == "before" and previous[0]["kind"] == kind \
                and kind in SEGMENT_OF:
            line.segments.append([SEGMENT_OF[kind], previous[1], cycle, _label(site),
                                  iteration])
        previous = (site, cycle)
    return line


def shares(line: Line) -> dict[str, float]:
    """The fraction of the warp's time (its first probe to its last) in each kind."""
    total = max(line.end - line.begin, 1)
    found = dict.fromkeys(KINDS, 0.0)
    for kind, start, end, _, _ in line.segments:
        found[kind] += (end - start) / total
    return found


def iteration_cycles(line: Line) -> float | None:
    """The median time from one loop iteration's first probe to the next's."""
    ks = sorted(line.starts)
    gaps = [line.starts[b] - line.starts[a] for a, b in itertools.pairwise(ks)
            if b == a + 1]
    return float(statistics.median(gaps)) if gaps else None


def lines(entry: Json) -> list[Line]:
    return [read_warp(entry, warp) for warp in entry["warps"] if warp["events"]]


def drawn(read: Sequence[Line]) -> list[Line]:
    """The rows drawn: the first block's first warp of each role."""
    if not read:
        return []
    first = min(line.block for line in read)
    chosen: dict[str | None, Line] = {}
    for line in sorted(read, key=lambda x: x.warp):
        if line.block == first:
            chosen.setdefault(line.role, line)
    return list(chosen.values())


def clock_mhz(entry: Json) -> float | None:
    """The SM clock the recording ran at, from the cycles and the global timer between
    each warp's first and last probe (median over the warps)."""
    rates = [(w["events"][-1][2] - w["events"][0][2]) / w["ns"] * 1000
             for w in entry["warps"] if w.get("ns") and len(w["events"]) > 1]
    return round(statistics.median(rates)) if rates else None


def summary(entry: Json) -> list[Json]:
    """Per role, over every recorded warp of it (medians): each kind's share of the
    warp's time and the cycles of one loop iteration."""
    read = lines(entry)
    out = []
    for role in dict.fromkeys(line.role for line in sorted(read, key=lambda x: x.warp)):
        mine = [line for line in read if line.role == role]
        each = [shares(line) for line in mine]
        iterations = [c for c in map(iteration_cycles, mine) if c is not None]
        out.append({"role": role, "warps": len(mine),
                    **{kind: statistics.median(s[kind] for s in each) for kind in KINDS},
                    "iteration": statistics.median(iterations) if iterations else None,
                    "cycles": statistics.median(line.end - line.begin for line in mine)})
    return out


def _cut(line: Line) -> int | None:
    """Where a long loop's drawing stops: the start of iteration SHOWN_ITERATIONS."""
    return line.starts.get(SHOWN_ITERATIONS)


def _row(line: Line, until: int | None) -> Json:
    def keep(start: int) -> bool:
        return until is None or start < until

    def clip(end: int) -> int:
        return end if until is None else min(end, until)

    label = f"warp {line.warp}" if line.role is None else f"{line.role} (warp {line.warp})"
    return {"label": label, "role": line.role,
            "segments": [[k, s, clip(e), lab, i] for k, s, e, lab, i in line.segments
                         if keep(s)],
            "marks": [m for m in line.marks if keep(m[1])],
            "starts": sorted([k, c] for k, c in line.starts.items() if keep(c)),
            "parts": [[name, s, clip(e)] for name, (s, e) in line.parts.items() if keep(s)],
            "end": clip(line.end), "iterations": len(line.starts)}


def timeline_input(data: Json, entry: Json, stale: tuple[str, ...], stale_mode: str,
                   variants: list[Json], directive: str) -> Json | None:
    """The figure's data: ``data`` a timeline file, ``entry`` its recordings for
    ``directive``, ``variants`` the page's recorded ones in page order (``{"id",
    "heading"}``). None when nothing is left to draw."""
    panels = []
    for variant in variants:
        recording = entry["variants"].get(variant["id"])
        if recording is None or (variant["id"] in stale and stale_mode == "hide"):
            continue
        rows = drawn(lines(recording))
        if not rows:
            continue
        cuts = [c for c in map(_cut, rows) if c is not None]
        until = max(cuts) if cuts else None
        loop_var = next((s.get("loop_var") for s in recording["sites"]
                         if s.get("loop_var")), None)
        panels.append({"id": variant["id"], "heading": variant["heading"],
                       "stale": variant["id"] in stale, "loop_var": loop_var,
                       "plain_ms": recording["plain"]["median_ms"],
                       "probed_ms": recording["probed"]["median_ms"],
                       "rows": [_row(line, until) for line in rows],
                       "summary": summary(recording),
                       "compared": bool(recording.get("plan")),
                       "problems": order_problems(recording)})
    if not panels:
        return None
    rates = [r for r in (clock_mhz(entry["variants"][p["id"]]) for p in panels) if r]
    return {"gpu": data["gpu"]["name"], "directive": directive, "panels": panels,
            "mhz": round(statistics.median(rates)) if rates else None}
