"""The warp-specialised figure (Hopper, Blackwell): one SVG per schedule.

One band per warp group, one column per iteration of the barrier ring's first lap plus
the first reuse of slot 0; each column holds that iteration's chips (:mod:`.warp_chips`)
coloured by ring slot, waits with a bar at their left edge. Solid arrows: the TMA load
that arrives on a full barrier, to the consumer's wait on it; dashed: the consumer's
arrive on an empty barrier, to the producer's wait on it ``num_stages`` iterations later
(a stub when that is off the drawn columns). Below, the ring: one card per slot with its
buffers and barriers and their arrival counts.
"""

from __future__ import annotations

from typing import Any

from .drawing import Drawing, caption, clip, digest, wrap
from .hazard_marks import legend, marked
from .warp_chips import (
    ROLES,
    Chip,
    barrier_kinds,
    barrier_slots,
    chips,
    columns,
    describe,
    ring_buffers,
    stages,
)

Json = dict[str, Any]

LABEL = 76.0
CHIP_FONT = 9.5
SANS_CHIP = 0.6  # advance of a chip's characters, in em (DejaVu Sans: about 0.57)
CHIP = 15.0
CHIP_GAP = 3.0
MARGIN = 8.0
READABLE = 400.0  # the legend wraps to this width: it reads without scrolling at 420 px
MIN_WIDTH = 420.0
MAX_WIDTH = 700.0  # furo's content width inside the directive's box
ELIDED = 22.0  # the gap that stands for iterations left out


def _iterations(count: int, col_w: float) -> list[int]:
    """The iterations drawn: all ``count`` when the page's width holds them, else as many
    first ones as fit and the last (the first reuse of slot 0), the rest elided."""
    room = MAX_WIDTH - 2 * MARGIN - LABEL
    if count * col_w <= room:
        return list(range(count))
    fit = int((room - ELIDED) // col_w)
    return [*range(max(fit - 1, 1)), count - 1]


def warp_specialized_drawing(fig: Json, covers: list[str], theme: str = "html",
                             ident: str = "") -> Drawing:
    """The figure of one warp-specialised loop (``fig``: :mod:`.model`'s data)."""
    ring = stages(fig)
    every = {role: [chips(fig, role, k) for k in range(columns(fig))] for role in ROLES}
    longest = max((len(c.text) * CHIP_FONT * SANS_CHIP for role in every.values()
                   for col in role for c in col), default=80)
    col_w = max(longest + 24, 96.0)  # the chip (text, 7 px before, 5 after) and a gutter
    ks = _iterations(columns(fig), col_w)
    drawn = {role: [every[role][k] for k in ks] for role in ROLES}
    gap = next((i for i in range(1, len(ks)) if ks[i] != ks[i - 1] + 1), None)
    x0 = MARGIN + LABEL

    def left(i: int) -> float:
        return x0 + i * col_w + (ELIDED if gap is not None and i >= gap else 0)

    width = max(left(len(ks)) + MARGIN, MIN_WIDTH)
    prefix = "tlf-" + digest([fig, covers, theme, ident])
    pic = Drawing(prefix, theme)
    var = str(fig.get("loop_var") or "k")
    head = 44.0 + caption(pic, fig["num_stages"], covers, width, MARGIN)
    bands: dict[str, tuple[float, float]] = {}
    y = head + 8
    for role in ROLES:
        height = max(len(col) for col in drawn[role]) * (CHIP + CHIP_GAP) + 10
        bands[role] = (y, height)
        y += height + 22
    for i, k in enumerate(ks):
        pic.text(left(i) + col_w / 2, head, f"{var} = {k} (slot {k % ring})", "fg",
                 "middle", weight="bold")
    positions: dict[tuple[str, int, int], tuple[float, float]] = {}
    threads = {"producer": fig.get("producer_threads"), "consumer": fig.get("consumer_threads")}
    w = col_w - 12
    hazard = marked(fig)
    for role in ROLES:
        top, height = bands[role]
        pic.rect(x0 - 4, top, left(len(ks)) - x0 + 4, height, "band", rx=4)
        pic.text(MARGIN, top + 14, role, "fg", weight="bold")
        if threads.get(role):
            pic.text(MARGIN, top + 28, f"{threads[role]} threads", "muted", size=10)
        if gap is not None:
            hidden = ", ".join(str(k) for k in range(ks[gap - 1] + 1, ks[gap]))
            pic.text(left(gap) - ELIDED / 2 - 2, top + height / 2 + 4, "…", "muted", "middle",
                     14, title=f"{var} = {hidden}: alike, left out to fit the page")
        for i, col in enumerate(drawn[role]):
            cx = left(i) + 4
            for n, chip in enumerate(col):
                cy = top + 5 + n * (CHIP + CHIP_GAP)
                fill = f"v{chip.slot}" if chip.slot is not None else "neutral"
                ink = f"t{chip.slot}" if chip.slot is not None else "on-neutral"
                pic.rect(cx, cy, w, CHIP, fill, rx=3, title=chip.title)
                if chip.op == "wait":
                    pic.rect(cx, cy, 3.5, CHIP, "accentfill", rx=1)
                pic.text(cx + 7, cy + 11, chip.text, ink, size=CHIP_FONT)
                if hazard & set(chip.stmts):
                    pic.rect(cx - 1, cy - 1, w + 2, CHIP + 2, "hazard", rx=3.5, outline=2)
                positions[(role, i, n)] = (cx, cy)
    producer_top, producer_height = bands["producer"]
    _arrows(pic, drawn, positions, ks, ring, w, left, producer_top + producer_height)
    y = _ring(pic, fig, ring, y + 2, width, ks)
    if fig.get("hazards"):
        y = legend(pic, fig, MARGIN, y + 18, min(width, READABLE) - 2 * MARGIN - 40) - 15
    title = (f"Warp-specialised loop, num_stages = {fig['num_stages']}: producer and "
             f"consumer warp groups over a ring of {ring} slot(s)")
    return pic.finish(width, y + 4, title, describe(fig, drawn, ks, covers), ring)


def _arrows(pic: Drawing, drawn: dict[str, list[list[Chip]]],
            positions: dict[tuple[str, int, int], tuple[float, float]], ks: list[int],
            ring: int, w: float, left: Any, corridor: float) -> None:
    """Solid: each TMA load to the consumer's wait on its full barrier, down the gutter
    right of its column. Dashed: each consumer arrive on an empty barrier to the
    producer's wait on it, routed through the gutters and the corridor between the bands
    (``corridor``: the producer band's bottom), so that no arrow crosses a chip's label at
    any depth."""
    mid = CHIP / 2
    for i, k in enumerate(ks):
        for n, chip in enumerate(drawn["producer"][i]):
            if chip.op != "tma" or not chip.arrives:
                continue
            for m, other in enumerate(drawn["consumer"][i]):
                if other.op == "wait" and other.barrier == chip.barrier:
                    x1, y1 = positions[("producer", i, n)]
                    x2, y2 = positions[("consumer", i, m)]
                    pic.path((x1 + w, y1 + mid), [(x1 + w + 4, y1 + mid),
                                                  (x1 + w + 4, y2 + mid),
                                                  (x2 + w + 1, y2 + mid)],
                             "accent", 1.2, arrow=True)
        for n, chip in enumerate(drawn["consumer"][i]):
            if chip.op != "arrive":
                continue
            x1, y1 = positions[("consumer", i, n)]
            hit = None
            if k + ring in ks:
                j = ks.index(k + ring)
                for m, other in enumerate(drawn["producer"][j]):
                    if other.op == "wait" and other.barrier == chip.barrier:
                        hit = positions[("producer", j, m)]
            if hit is None:
                pic.path((x1 + w, y1 + mid), [(x1 + w + 7, y1 + mid)], "accent", 1.1,
                         (3, 2), arrow=True)
                continue
            x2, y2 = hit
            down = left(i) + w + 11  # the gutter right of the arrive's column
            up = left(j) + 1.5  # the gutter left of the wait's column
            lane = corridor + 5 + 4 * (i % 3)  # arrows of neighbouring columns apart
            pic.path((x1 + w, y1 + mid), [(down, y1 + mid), (down, lane), (up, lane),
                                          (up, y2 + mid), (x2 - 0.5, y2 + mid)],
                     "accent", 1.1, (4, 2), arrow=True)


def _ring(pic: Drawing, fig: Json, ring: int, y: float, width: float, ks: list[int]) -> float:
    kinds, slots = barrier_kinds(fig), barrier_slots(fig)
    barriers = fig.get("barriers") or []
    init = barriers[0]["init"] if barriers else []
    dims = fig.get("version_dims", {})
    names = ring_buffers(fig)
    pic.text(MARGIN, y + 10, "ring", "fg", weight="bold")
    x = MARGIN + LABEL
    card_w = min(150.0, (width - x - MARGIN) / ring - 6)
    heights = []
    for s in range(ring):
        lines = [f"{names}[{s}]" if dims else
                 (f"{names} (one buffer)" if names else f"slot {s}")]
        for b in sorted(b for b, slot in slots.items() if slot == s):
            arrivals = f" ×{init[b]}" if b < len(init) else ""
            lines.append(f"bar {b} {kinds.get(b, '?')}{arrivals}")
        height = 14 * len(lines) + 6
        heights.append(height)
        pic.rect(x, y, card_w, height, f"v{s}", rx=4, title=f"slot {s}: " + "; ".join(lines))
        for n, text in enumerate(lines):
            pic.text(x + 6, y + 14 + 14 * n, clip(text, int(card_w / 5.8)), f"t{s}", size=10)
        x += card_w + 6
    y += max(heights, default=20) + 16
    note = ("bar n ×c: mbarrier n, expecting c arrivals per phase · full: the producer's "
            "TMA loads complete it, the consumer waits on it (solid arrow) · empty: the "
            "consumer arrives when done with the slot, the producer waits on it before "
            f"reusing the slot {ring} iterations later (dashed arrow) · wait … ·pN: the phase "
            "parity waited for; the producer's first wait on each empty barrier (·p1) "
            "passes at once, since a fresh barrier counts the phase before its first as "
            "complete, so the producer fills every slot before the consumer frees one")
    left_out = [k for k in range(ks[0], ks[-1] + 1) if k not in ks] if ks else []
    if left_out:
        note += (f" · …: iterations {', '.join(map(str, left_out))}, alike, left out to fit "
                 "the page")
    others = [b for b in range(len(init)) if b not in slots]
    if others:
        note += " · other barriers: " + ", ".join(f"{b} ×{init[b]}" for b in others)
    for item in fig.get("prelude", []):
        what = " → ".join(item.get("buffers") or []) or str(item.get("op", ""))
        note += (f" · before the loop: {item.get('op', '')} {what}, completing on barrier "
                 f"{item.get('barrier')}")
    for line in wrap(note, min(width, READABLE) - 2 * MARGIN, 10):
        pic.text(MARGIN, y, line, "muted", size=10)
        y += 14
    return y - 8
