"""The cp.async software-pipeline figure (sm_80 and the like): one SVG per schedule.

Time runs left to right through the generated code: the prologue's steps, one
steady-state iteration on a shaded band with a return arrow and ``xN`` (N: the loop's
extent), the epilogue's steps; a schedule wider than a page's column wraps onto further
rows, as text does, each with its lanes labelled. One lane per statement
(:mod:`.lanes`); each box names the tile (iteration) it works on and is coloured by the
shared-buffer version it uses, with ``vN`` written above it (colour is never the only
cue); commits (``C``, dashed) and waits
(``W2``, solid) are marks across every lane where they stand. ``__syncthreads`` are not
drawn: the final IR no longer says between which statements they stand. A synchronous
pipeline (Metal's: versioned buffers, copies as plain loads and stores) is drawn alike,
with no commits or waits, and its legend says why.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .drawing import Drawing, caption, digest, join_names, mono_width, sans_width, wrap
from .hazard_marks import legend, marked
from .lanes import SYNCHRONOUS, Part, Slot, describe, last_iteration, parts, times

Json = dict[str, Any]

SLOT = 27.0        # width of one statement slot
SYNC = 17.0        # width of one commit/wait slot
STEP_GAP = 4.0     # between two prologue/epilogue steps
PART_GAP = 14.0    # between prologue, body and epilogue
LANE = 22.0
BOX = 16.0
MARGIN = 8.0
READABLE = 400.0   # legends wrap to this width: they read without scrolling, even at 420 px
MIN_WIDTH = 420.0
MAX_WIDTH = 700.0  # furo's content width inside the directive's box: wider wraps to rows


@dataclass
class _Piece:
    """One step of a part, placed: its row, where it starts and each slot's x."""

    part: int
    step: int
    row: int = 0
    xs: list[float] = field(default_factory=list)


def _width(step: list[Slot]) -> float:
    return sum(SYNC if slot.kind == "sync" else SLOT for slot in step)


def _layout(drawn: list[Part], x0: float, limit: float,
            names: list[str]) -> tuple[list[_Piece], float]:
    """Place every step left to right, wrapping onto a new row (its lanes labelled again)
    where the next would pass ``limit``: between parts where a whole part fits on a row
    of its own, else between steps; a part is at least as wide as its ``names`` entry (in
    bold above it). Returns the pieces and the rightmost x."""
    pieces: list[_Piece] = []
    x, row, right = x0, 0, x0
    for p, part in enumerate(drawn):
        # Leave room for the name of the part before, if on this row (a step with nothing
        # drawn in it has no place: the name stands over the first that has one).
        began = [piece for piece in pieces
                 if piece.part == p - 1 and piece.row == row and piece.xs]
        if began:
            x = max(x, began[0].xs[0] + _name_width(names[p - 1]) - PART_GAP + 4)
        whole = sum(_width(step) for step in part.steps) + STEP_GAP * (len(part.steps) - 1)
        if not part.steps or not whole:
            continue
        if x > x0 and x + PART_GAP + whole > limit and x0 + whole <= limit:
            x, row = x0, row + 1
        for s, step in enumerate(part.steps):
            gap = 0.0 if x == x0 else (STEP_GAP if s else PART_GAP)
            if x > x0 and x + gap + _width(step) > limit:
                x, row, gap = x0, row + 1, 0.0
            x += gap
            piece = _Piece(p, s, row)
            for slot in step:
                piece.xs.append(x)
                x += SYNC if slot.kind == "sync" else SLOT
            pieces.append(piece)
            right = max(right, x)
            if piece.xs and not any(other.part == p and other.row == piece.row and other.xs
                                    for other in pieces[:-1]):
                right = max(right, piece.xs[0] + _name_width(names[p]))  # the last part's name
    return pieces, right


def _name_width(name: str) -> float:
    """A part's name in bold: wider than the average advance says."""
    return sans_width(name, 11) * 1.1


def cp_async_drawing(fig: Json, covers: list[str], theme: str = "html",
                     ident: str = "") -> Drawing:
    """The figure of one cp.async schedule (``fig``: :mod:`.model`'s cp_async data;
    ``covers``: the variants it stands for; ``ident``: what makes its ids unique on a
    page, e.g. the directive's name)."""
    found, drawn = parts(fig)
    dims = fig.get("version_dims", {})
    versions = max(dims.values(), default=0)
    pic = Drawing("tlf-" + digest([fig, covers, theme, ident]), theme)

    label_w = max((mono_width(lane.label, 11) for lane in found), default=60) + 10
    x0 = MARGIN + label_w
    loop = fig["loop"]
    names = ["prologue", f"steady state {times(loop)}", "epilogue"]
    pieces, end = _layout(drawn, x0, MAX_WIDTH - MARGIN, names)
    right = max(end + MARGIN, MIN_WIDTH)
    top = 20.0 + caption(pic, fig.get("num_stages"), covers, right, MARGIN)
    lanes_h = LANE * len(found)
    row_h = 48 + lanes_h + 16  # part names, sync marks, lanes, the repeat arrow
    rows = max((piece.row for piece in pieces), default=0) + 1
    for r in range(rows):
        head = top + r * row_h + 40  # the sync marks' baseline; part names above it
        for n, lane in enumerate(found):
            y = head + 8 + n * LANE
            pic.line(x0 - 4, y + LANE - 0.5, right - MARGIN, y + LANE - 0.5, "grid", 0.6)
            pic.text(MARGIN, y + 15, lane.label, "fg m", title=lane.title)
    named: set[tuple[int, int]] = set()
    hazard = marked(fig)
    for piece in pieces:
        part, step = drawn[piece.part], drawn[piece.part].steps[piece.step]
        head = top + piece.row * row_h + 40
        lanes_top = head + 8
        if piece.xs and (piece.part, piece.row) not in named:  # over its first drawn step
            named.add((piece.part, piece.row))
            more = " (continued)" if part.name != "steady state" and any(
                (piece.part, row) in named for row in range(piece.row)) else ""
            name = f"steady state {times(loop)}" if part.name == "steady state" \
                else part.name + more
            pic.text(piece.xs[0], head - 20, name, "fg", weight="bold")
        if part.name == "steady state" and piece.xs:
            start, stop = piece.xs[0], piece.xs[0] + _width(step)
            pic.rect(start - 3, head - 14, stop - start + 6, lanes_h + 26, "band", rx=4)
            # the repeat arrow under the lanes, from the end back to the start
            yb = lanes_top + lanes_h + 8
            pic.path((stop - 4, yb - 6), [(stop - 4, yb), (start + 4, yb),
                                          (start + 4, yb - 6)], "stroke", 1.2)
            pic.path((start + 1, yb - 3), [(start + 4, yb - 8), (start + 7, yb - 3)],
                     "stroke", 1.2)
        for slot, x in zip(step, piece.xs, strict=True):
            _slot(pic, slot, x, head, lanes_top, lanes_h)
            if part.name == "steady state" and slot.kind == "stmt" \
                    and hazard & set(found[slot.lane].stmts):
                y = lanes_top + slot.lane * LANE + (LANE - BOX) / 2
                pic.rect(x, y - 1, SLOT, BOX + 2, "hazard", rx=3.5, outline=2)

    y = _legend(pic, fig, dims, versions, top + rows * row_h + 6, right, theme,
                any(len(lane.stmts) > 1 for lane in found))
    title = (f"Pipeline schedule, num_stages = {fig.get('num_stages')}: "
             f"{len(fig['prologue'])} prologue step(s), steady state {times(loop)}, "
             f"{len(fig['epilogue'])} epilogue step(s)")
    return pic.finish(right, y + 4, title, describe(fig, covers), versions)


def _slot(pic: Drawing, slot: Slot, x: float, head: float, lanes_top: float,
          lanes_h: float) -> None:
    if slot.kind == "sync":
        cx = x + SYNC / 2
        commit = slot.sync == "C"
        pic.line(cx, head + 2, cx, lanes_top + lanes_h, "stroke", 1 if commit else 1.6,
                 dash=(3, 2) if commit else ())
        pic.rect(cx - 8.5, head - 10, 17, 13, "band" if commit else "neutral", rx=3,
                 title=slot.title)
        pic.text(cx, head, slot.sync, "fg m" if commit else "on-neutral m", "middle", 9.5,
                 "bold")
        return
    y = lanes_top + slot.lane * LANE + (LANE - BOX) / 2
    fill = f"v{slot.version}" if slot.version is not None else "neutral"
    ink = f"t{slot.version}" if slot.version is not None else "on-neutral"
    pic.rect(x + 1, y, SLOT - 2, BOX, fill, rx=2.5, title=slot.title)
    size = next((size for size in (10.0, 9.0) if mono_width(slot.label, size) <= SLOT - 4),
                8.0)
    pic.text(x + SLOT / 2, y + 11.5, slot.label, f"{ink} m", "middle", size)
    if slot.version is not None:
        pic.text(x + SLOT - 2, y - 1.5, f"v{slot.version}", "muted m", "end", 8.5)


def _unit(text: str) -> str:
    """Words that must stay on one line (no-break spaces)."""
    return text.replace(" ", "\u00a0")


def _legend(pic: Drawing, fig: Json, dims: dict[str, int], versions: int, y: float,
            right: float, theme: str, folded: bool) -> float:
    y = legend(pic, fig, MARGIN, y, min(right, READABLE) - 2 * MARGIN - 40)
    x = MARGIN
    if dims:
        key = f"{join_names(sorted(dims))} version (tile mod {versions}):"
        pic.text(x, y, key, "muted")
        x += sans_width(key, 11) + 6
        for v in range(versions):
            pic.rect(x, y - 10, 14, 12, f"v{v}", rx=2)
            pic.text(x + 7, y - 1, str(v), f"t{v} m", "middle", 9)
            x += 18
        x += 8
    pic.rect(x, y - 10, 14, 12, "neutral", rx=2)
    pic.text(x + 18, y, "no versioned buffer" if dims else "no version dimension: one buffer",
             "muted")
    y += 16
    trip, loop = fig.get("trip_count"), fig["loop"]
    var = str(fig.get("loop_var") or "k")
    tiles = f"n = {trip} tiles" if isinstance(trip, int) else "n tiles (per variant above)"
    # One line (or more) per item, and no break inside "ko = 0 … 13": a legend broken at
    # a fixed width elsewhere reads "ko =" at the end of one line and "0 … 13" on the next.
    first = f"{var} = {loop['min']}"
    items = [SYNCHRONOUS if fig.get("synchronous") else
             "C tl::cp_async_commit(): closes a group of copies · Wn "
             "tl::cp_async_wait<n>(): waits until at most n groups are still in flight "
             "(W0: all have landed)",
             f"each box: the tile (iteration) it works on, {_unit(tiles)}, "
             + _unit(f"{first} … {last_iteration(loop)}")]
    if dims:
        items.append(f"vN: the version it reads or writes, shown for {_unit(first)} in the "
                     "steady state")
    if folded:
        items.append("alike statements (same stage, no versioned buffer, always adjacent) "
                     "folded into one lane" + (" (hover for the list)" if theme == "html"
                                               else ""))
    for item in items:
        for line in wrap(item, min(right, READABLE) - 2 * MARGIN, 11):
            pic.text(MARGIN, y, line, "muted")
            y += 15
    return y - 9
