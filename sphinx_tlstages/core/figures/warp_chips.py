"""The warp-specialised figure's content: per warp group and iteration, what runs.

Each item of a warp group's loop body becomes a *chip*: a barrier wait (with the parity it
waits for) or arrive, a TMA load into a ring slot completing on a barrier, an MMA reading a
slot, or a run of other statements (folded when the loop is long). Whether a barrier is
"full" or "empty" is inferred from who waits on it and who signals it; its ring slot from
the iterations that use it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .drawing import clip, join_names
from .hazard_marks import words
from .lanes import FOLD_MIN, FOLD_OVER, stmt_line, stmt_text

Json = dict[str, Any]
ROLES = ("producer", "consumer")


@dataclass
class Chip:
    text: str
    title: str
    slot: int | None
    barrier: int | None = None
    op: str = ""          # "wait" | "arrive" | "tma" | "stmt" | "fold"
    arrives: bool = False
    stmts: tuple[int, ...] = ()  # the loop's statements it stands for


def stages(fig: Json) -> int:
    return max(int(fig["num_stages"]), 1)


def barrier_kinds(fig: Json) -> dict[int, str]:
    """Barrier -> ``full`` or ``empty``, from who waits on it and who signals it."""
    kinds: dict[int, str] = {}
    for item in fig["producer"]["body"]:
        if item.get("barrier_op") == "wait":
            for b in item.get("barrier") or []:
                kinds[b] = "empty"
        if item.get("op") == "tma_copy":
            for b in item.get("barrier") or []:
                kinds.setdefault(b, "full")
    return kinds


def barrier_slots(fig: Json) -> dict[int, int]:
    """Barrier -> the ring slot it guards, from the iterations at which each is used."""
    slots: dict[int, int] = {}
    for role in ROLES:
        for item in fig[role]["body"]:
            if item.get("barrier_op") and item.get("barrier"):
                for k, b in enumerate(item["barrier"]):
                    slots.setdefault(b, k % stages(fig))
    return slots


def ring_buffers(fig: Json) -> str:
    dims = fig.get("version_dims", {})
    if dims:
        return join_names(sorted(dims))
    shared = set(fig.get("shared_names", ()))
    names = sorted({b for item in fig["producer"]["body"] for b in item.get("buffers", [])
                    if b in shared or "shared" in b})
    return join_names(names)


def _short(fig: Json, i: int) -> str:
    text = stmt_text(fig, i)
    head = text.split("(", 1)[0].replace("T.", "")
    return clip(head or text, 16)


def _barrier_chip(item: Json, at: Callable[[Any], int | None], kinds: dict[int, str],
                  slots: dict[int, int], when: str) -> Chip:
    bar, parity = at(item.get("barrier")), at(item.get("parity"))
    kind = "other" if bar is None or bar not in slots else kinds.get(
        bar, "full" if item["barrier_op"] == "wait" else "empty")
    what = "wait" if item["barrier_op"] == "wait" else "arrive"
    text = f"{what} bar {bar}" + (f" ·p{parity}" if parity is not None else "")
    title = (f"{f'if {when}: ' if when else ''}{item['op']} on barrier {bar} ({kind})"
             + (f", parity {parity}" if parity is not None else ""))
    return Chip(f"{when} {text}" if when else text, title,
                slots.get(bar) if kind != "other" and bar is not None else None, bar, what)


def chips(fig: Json, role: str, k: int) -> list[Chip]:
    """What warp group ``role`` runs at iteration ``k``, in order."""
    found: list[Chip] = []
    slots, kinds = barrier_slots(fig), barrier_kinds(fig)
    dims = fig.get("version_dims", {})
    fold = len(fig["statements"]) > FOLD_OVER
    pending: list[int] = []

    def flush() -> None:
        if len(pending) >= FOLD_MIN and fold:
            lines = [x for x in (stmt_line(fig, i) for i in pending) if x is not None]
            span = f" (L{min(lines)}–{max(lines)})" if lines else ""
            found.append(Chip(f"{len(pending)} statements{span}", "folded: " + "; ".join(
                stmt_text(fig, i) for i in pending), None, op="fold", stmts=tuple(pending)))
        else:
            found.extend(Chip(_short(fig, i), stmt_text(fig, i), None, op="stmt", stmts=(i,))
                         for i in pending)
        pending.clear()

    def at(values: Any) -> int | None:
        return values[k % len(values)] if isinstance(values, list) and values else None

    for item in fig[role]["body"]:
        if "when" in item:
            active = item.get("active") or []
            if k < len(active) and active[k]:
                flush()
                found.extend(_barrier_chip(inner, at, kinds, slots, str(item["when"]))
                             for inner in item["items"] if inner.get("barrier_op"))
            continue
        if item.get("barrier_op"):
            flush()
            found.append(_barrier_chip(item, at, kinds, slots, ""))
            continue
        if "stmt" not in item:
            continue
        i = int(item["stmt"])
        slot = None
        for v in item.get("versions", []):
            if v.get("buffer") in dims:
                slot = at(v.get("slot"))
        # The kernel's shared buffers by name where the figure knows them (``X_s``), else
        # by TileLang's spelling of a shared allocation.
        known = set(fig.get("shared_names", ()))
        shared = [b for b in item.get("buffers", []) if b in known or "shared" in b]
        if slot is None and not dims and shared and stages(fig) == 1:
            slot = 0  # one stage, no version dimension: the one buffer is the ring's slot
        if slot is None and not item.get("barrier") and item.get("op") != "gemm":
            pending.append(i)
            continue
        flush()
        versioned = join_names([v["buffer"] for v in item.get("versions", [])
                                if v["buffer"] in dims])
        where = f"{versioned}[{slot}]" if versioned and slot is not None \
            else join_names(shared) or "shared"
        if item.get("op") == "tma_copy":
            bar = at(item.get("barrier"))
            arrives = bool(item.get("arrives"))
            title = (f"{stmt_text(fig, i)}: TMA load into {where}, completes on barrier {bar}"
                     + (", and arrives on it (expect-tx)" if arrives else ""))
            found.append(Chip(f"TMA {where}→bar {bar}", title, slot, bar, "tma", arrives,
                              (i,)))
        else:
            op = "MMA" if item.get("op") == "gemm" else _short(fig, i)
            found.append(Chip(f"{op} {where}", f"{stmt_text(fig, i)}: reads {where}", slot,
                              op="stmt", stmts=(i,)))
    flush()
    return found


def columns(fig: Json) -> int:
    """Iterations drawn: the ring's first lap and the first reuse of slot 0."""
    extent = fig["producer"]["loop"].get("extent")
    return min(stages(fig) + 1, extent if isinstance(extent, int) else stages(fig) + 1, 6)


def describe(fig: Json, drawn: dict[str, list[list[Chip]]], ks: list[int],
             covers: list[str]) -> str:
    """The figure in words, iteration by iteration (its ``<desc>``)."""
    var = str(fig.get("loop_var") or "k")
    extent = fig["producer"]["loop"].get("extent")
    said = [f"Warp-specialised loop, num_stages = {fig['num_stages']}"
            + (f", {extent} iterations" if extent else "")
            + f"; columns are iterations {var} = {', '.join(map(str, ks))} (the "
            f"producer may run up to {fig['num_stages']} iteration(s) ahead of the "
            "consumer)."]
    for role in ROLES:
        for k, col in zip(ks, drawn[role], strict=True):
            said.append(f"{role.capitalize()} at {var} = {k}: "
                        + ", ".join(c.title for c in col) + ".")
    said.append(f"Covers {'; '.join(covers)}.")
    return " ".join(said) + _hazards(fig)


def _hazards(fig: Json) -> str:
    """The findings placed on the figure, in a sentence (``""`` for none)."""
    said = words(fig, lambda i: f"L{stmt_line(fig, i)} {stmt_text(fig, i)}")
    return f" {said}" if said else ""


def sentence(fig: Json, covers: list[str]) -> str:
    """The figure in one sentence, for builders that show no pictures."""
    kinds = barrier_kinds(fig)
    full = sorted(b for b, kind in kinds.items() if kind == "full")
    empty = sorted(b for b, kind in kinds.items() if kind == "empty")
    return (f"Schedule figure for {'; '.join(covers)}: the producer warp group "
            f"({fig.get('producer_threads')} threads) waits on an empty barrier "
            f"({', '.join(map(str, empty)) or 'none'}) and TMA-loads {ring_buffers(fig)} into "
            f"ring slot {fig.get('loop_var') or 'k'} mod {stages(fig)}, completing on a full "
            f"barrier ({', '.join(map(str, full)) or 'none'}); the consumer warp group "
            f"({fig.get('consumer_threads')} threads) waits on the full barrier, computes, "
            "and arrives on the empty one." + _hazards(fig))
