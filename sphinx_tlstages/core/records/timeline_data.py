"""Measured timelines: what ``tlstages timeline`` writes on a GPU machine and the docs read.

One JSON file per GPU in ``tlstages_timeline_dir``, kept as benchmark numbers are: each
variant's recording carries the fingerprints of :mod:`.bench_data` (the kernel's inputs,
and the code as the page lists it), so a CPU-only build draws it while the code is the
one recorded and marks it stale once the code changes. It is never a snapshot fact.

The recording is of the code the page lists, for its own target (``sm_80`` code runs
compiled for the GPU's arch): one build with probes at each wait, commit, barrier and
tensor-core call of the pipelined loops (:mod:`..results.probes`), one without, timed
against each other; the uninstrumented time is the kernel's time, the ratio the probes'
cost. Each file::

    {"schema": 1, "gpu": {"name", "sm", "driver", "cuda", "torch", "tilelang"},
     "command": "...", "date": "...", "method": "...",
     "directives": {NAME: {"variants": {ID: ENTRY}}}}
    ENTRY = {"fingerprint", "code", "cuda",          # as a bench file's numbers
             "target": "sm_80", "compiled_for": "sm_90a", "threads": 128,
             "same_code": bool,     # the code probed is the code the page lists
             "same_output": bool,   # the probed kernel wrote what the plain one wrote
             "plain": TIMING, "probed": TIMING,      # median_ms, p20_ms, p80_ms
             "sites": [SITE],       # results.probes.Site.as_json()
             "warps": [{"block", "warp", "events": [[site, iteration, cycle]],
                        "ns": N, "lost": N}],  # cycles from the block's first probe
             "plan": [PLAN] | None} # the order the schedule plans, per role
    PLAN = {"role": None | "producer" | "consumer", "before": [TOKEN], "body": [TOKEN],
            "extent": N, "after": [TOKEN]}

A TOKEN names one synchronisation step as the plan and the probes both can say it:
``C`` a cp.async commit, ``W2`` a wait<2>, ``M`` the tensor-core work of a T.gemm, ``B``
an mbarrier wait, ``T`` a TMA issue, ``A`` an mbarrier arrive. :func:`order_problems`
compares the tokens each warp recorded, in the order it ran them, with the plan, and the
cycles with the order they were read in (a probe the compiler moved reads the clock out of
turn): what the page says where the measured kernel is not the planned one.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from ..plan.spec import DirectiveSpec, VariantSpec
from ..results.result import Result
from .bench_data import (
    Attached,
    BenchFileError,
    BenchSet,
    benched,
    code_fingerprint,
    cuda_fingerprint,
    entries,
    fingerprint,
    is_stale,
    load_all,
)

TIMELINE_SCHEMA = 1
Json = dict[str, Any]

_GEMM = re.compile(r"\bgemm\b")
# Tokens a run of which is one step: two TMA copies issued in one elected block, two
# T.gemm calls with nothing between them.
_RUNS = {"M", "T"}


def _collapse(tokens: Sequence[str]) -> list[str]:
    out: list[str] = []
    for token in tokens:
        if not (out and token in _RUNS and out[-1] == token):
            out.append(token)
    return out


def _cp_async_token(fig: Json, item: Json) -> str | None:
    if item.get("sync") == "commit":
        return "C"
    if item.get("sync") == "wait":
        return f"W{item.get('n')}"
    if "stmt" in item:
        statements = fig.get("statements") or []
        i = int(item["stmt"])
        text = str(statements[i].get("text", "")) if i < len(statements) else ""
        return "M" if _GEMM.search(text) else None
    return None


def _ws_token(item: Json) -> str | None:
    if item.get("barrier_op") == "wait":
        return "B"
    if item.get("barrier_op") == "arrive":
        return "A"
    op = str(item.get("op", ""))
    if op.startswith("tma"):
        return "T"
    if "gemm" in op:
        return "M"
    return None


def plan_of(figures: Sequence[Json]) -> list[Json] | None:
    """The planned order of one pipelined loop (:func:`..figures.model.schedule_figures`'
    data), per role; None where there is not exactly one loop to compare with, or a step
    only some iterations run."""
    if len(figures) != 1:
        return None
    fig = figures[0]
    if fig.get("kind") == "warp_specialized":
        plans = []
        for role in ("producer", "consumer"):
            part = fig.get(role) or {}
            if any("when" in item for item in part.get("body", [])):
                return None
            tokens = {key: [t for t in map(_ws_token, part.get(key, [])) if t]
                      for key in ("before", "body", "after")}
            plans.append({"role": role, **tokens,
                          "extent": (part.get("loop") or {}).get("extent")})
        return plans

    def steps(key: str) -> list[str]:
        return [t for step in fig.get(key, []) for t in
                (_cp_async_token(fig, item) for item in step) if t]

    body = [t for t in (_cp_async_token(fig, item) for item in fig.get("body", [])) if t]
    return [{"role": None, "before": steps("prologue"), "body": body,
             "extent": (fig.get("loop") or {}).get("extent"), "after": steps("epilogue")}]


def site_token(site: Json) -> str | None:
    """What a probe says in the plan's words (its "after" probe; None: not planned)."""
    if site.get("at") != "after":
        return None
    kind = site.get("kind")
    if kind == "wait":
        return f"W{site.get('n')}"
    return {"commit": "C", "mma": "M", "mbarrier_wait": "B", "tma": "T",
            "arrive": "A"}.get(str(kind))


def warp_role(entry: Json, warp: Json) -> str | None:
    """The role of the sites a warp recorded (None: the block is not split)."""
    roles = {site["id"]: site.get("role") for site in entry["sites"]}
    seen = [roles.get(site) for site, _, _ in warp["events"] if roles.get(site)]
    return max(set(seen), key=seen.count) if seen else None


def _planned(plan: Json) -> list[str] | None:
    extent = plan.get("extent")
    if not isinstance(extent, int):
        return None
    return _collapse([*plan["before"], *plan["body"] * extent, *plan["after"]])


def _who(warp: Json) -> str:
    return f"warp {warp['warp']} of block {warp['block']}"


def order_problems(entry: Json) -> list[str]:
    """Where the recorded kernel ran otherwise than planned, in words (empty: as
    planned): its code not the page's, its output not the plain kernel's, clock reads
    out of order, or the steps of a warp in another order than the schedule's."""
    problems = []
    if entry.get("same_code") is False:
        problems.append("the code probed is not the code the page lists")
    if entry.get("same_output") is False:
        problems.append("the probed kernel's output differs from the plain kernel's")
    tokens = {site["id"]: site_token(site) for site in entry["sites"]}
    plans = {plan.get("role"): plan for plan in entry.get("plan") or []}
    for warp in entry["warps"]:
        cycles = [cycle for _, _, cycle in warp["events"]]
        back = next((i for i in range(1, len(cycles)) if cycles[i] < cycles[i - 1]), None)
        if back is not None:
            problems.append(f"{_who(warp)} read the clock out of order at its event {back}: "
                            "the compiler moved a probe")
        if warp.get("lost"):
            problems.append(f"{_who(warp)}: {warp['lost']} events past the buffer's end "
                            "were not recorded")
            continue
        plan = plans.get(warp_role(entry, warp)) if plans else None
        expected = _planned(plan) if plan else None
        if expected is None:
            continue
        seen = _collapse([t for t in (tokens.get(site) for site, _, _ in warp["events"])
                          if t])
        repeats = len(seen) // len(expected) if expected else 0
        if repeats >= 1 and seen == expected * repeats:
            continue
        at = next((i for i, (a, b) in enumerate(zip(seen, expected, strict=False))
                   if a != b), min(len(seen), len(expected)))
        ran = " ".join(seen[max(at - 2, 0):at + 3]) or "nothing"
        planned = " ".join(expected[max(at - 2, 0):at + 3]) or "nothing"
        problems.append(f"{_who(warp)} ran {ran} at its step {at + 1} where the schedule "
                        f"plans {planned} ({len(seen)} steps recorded, {len(expected)} "
                        "planned)")
    return problems


def cost(entry: Json) -> float:
    """The probes' cost: the probed kernel's median time over the plain one's, minus 1."""
    return float(entry["probed"]["median_ms"]) / float(entry["plain"]["median_ms"]) - 1


def make_entry(variant: VariantSpec, lowered: Result, *, compiled_for: str, same_code: bool,
               same_output: bool, plain: Json, probed: Json, sites: Sequence[Json],
               warps: Sequence[Json], plan: list[Json] | None) -> Json:
    """One variant's recording (see the module's docstring)."""
    return {"fingerprint": fingerprint(variant), "code": code_fingerprint(lowered),
            "cuda": cuda_fingerprint(lowered), "target": variant.target.label,
            "compiled_for": compiled_for, "threads": lowered.get("threads"),
            "same_code": same_code, "same_output": same_output, "plain": plain,
            "probed": probed, "sites": list(sites), "warps": list(warps), "plan": plan}


def _timing(value: object, where: str) -> None:
    if not isinstance(value, dict) or not all(
            isinstance(value.get(k), (int, float)) and value[k] > 0
            for k in ("median_ms", "p20_ms", "p80_ms")):
        raise BenchFileError(f"{where}: needs positive median_ms, p20_ms, p80_ms")


def _entry(entry: object, where: str) -> None:
    if not isinstance(entry, dict) or not isinstance(entry.get("fingerprint"), str):
        raise BenchFileError(f"{where}: no fingerprint")
    _timing(entry.get("plain"), f"{where}: plain")
    _timing(entry.get("probed"), f"{where}: probed")
    sites = entry.get("sites")
    if not isinstance(sites, list) or not all(
            isinstance(s, dict) and isinstance(s.get("id"), int)
            and isinstance(s.get("kind"), str) for s in sites):
        raise BenchFileError(f"{where}: 'sites' must list each probe's id and kind")
    ids = {s["id"] for s in sites}
    warps = entry.get("warps")
    if not isinstance(warps, list):
        raise BenchFileError(f"{where}: 'warps' must be a list")
    for warp in warps:
        events = warp.get("events") if isinstance(warp, dict) else None
        if not isinstance(events, list) or not isinstance(warp.get("block"), int) \
                or not isinstance(warp.get("warp"), int):
            raise BenchFileError(f"{where}: each warp needs its block, warp and events")
        for event in events:
            if not (isinstance(event, list) and len(event) == 3
                    and all(isinstance(x, int) for x in event) and event[0] in ids):
                raise BenchFileError(f"{where}: an event must be [site, iteration, cycle] "
                                     "of a listed site")


def validate(data: object, name: str) -> dict[str, Any]:
    """``data`` if it is a timeline file of this schema; raises BenchFileError."""
    for directive, _, ident, recorded in entries(data, name, "timeline file",
                                                 TIMELINE_SCHEMA):
        _entry(recorded, f"{name}: {directive} {ident}")
    assert isinstance(data, dict)  # as entries() checked
    return data


def load_timelines(folder: Any, chosen: list[str] | None) -> BenchSet:
    """Every timeline file of ``folder`` (see :func:`.bench_data.load_all`)."""
    return load_all(folder, chosen, validate)


def recorded(spec: DirectiveSpec) -> list[VariantSpec]:
    """The variants ``:timeline:`` asks to record."""
    return [v for v in spec.variants if spec.wants_timeline(v)]


def attach(spec: DirectiveSpec, files: BenchSet,
           result_of: Callable[[VariantSpec], Result]) -> list[Attached]:
    """Each GPU's recordings for ``spec``, with the ids of those gone stale. A recording
    is of the code the page lists, for the page's own target: this build's lowering of
    the variant is always the one to compare with."""
    attached: list[Attached] = []
    for data, entry in files.for_directive(spec.name):
        measured = data["gpu"].get("tilelang")
        stale = tuple(v.id for v in spec.variants if v.id in entry["variants"]
                      and is_stale(v, entry["variants"][v.id], measured, result_of(v)))
        attached.append((data, entry, stale))
    return attached


__all__ = ["TIMELINE_SCHEMA", "attach", "benched", "cost", "load_timelines", "make_entry",
           "order_problems", "plan_of", "recorded", "site_token", "validate", "warp_role"]
