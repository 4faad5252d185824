"""The occupancy figure: blocks per SM of each variant, and what each resource allows.

One row per variant, one column per limit of ``cuda_occupancy.h`` (registers, shared
memory, threads, the blocks an SM may hold; Blackwell's tensor-memory columns where a
variant allocates any), then the blocks that run. Each cell draws a square per block that
resource would allow (up to :data:`SQUARES`, the number says the rest); the limits that
decide, the fewest, are in the accent colour and their numbers bold, so colour is never
the only cue. Data in (the ``resources`` fact's ``occupancy``), a :class:`Drawing` out.

It is drawn where the part shows two variants or more, as a ``tl_figure`` of kind
``occupancy`` placed before the table (``ext/render/resources.py``), by the same SVG and
TikZ writers as the other figures. ``tests/test_occupancy_figure.py`` draws it from the
book's committed snapshots (``gemm-sm80``, ``gemm-tmem``): recording them again can
change what it asserts.
"""

from __future__ import annotations

from typing import Any

from .drawing import Drawing, clip, digest, sans_width, wrap

Json = dict[str, Any]

MARGIN = 8.0
SQUARES = 4  # squares drawn per cell; a larger number is said, not drawn
SQUARE, GAP = 7.0, 2.0
COLUMN = 4 + SQUARES * (SQUARE + GAP) + 18  # squares, then the number
RESULT = 74.0
ROW = 20.0
# The limits, in the order of the columns, with their two-line headers.
COLUMNS = (("registers", ("registers", "")), ("shared memory", ("shared", "memory")),
           ("warps", ("threads", "")), ("blocks", ("blocks", "per SM")),
           ("tensor memory", ("tensor", "memory")))


def occupancy_input(name: str, rows: list[tuple[str, Json | None]]) -> Json | None:
    """The figure's data from ``(heading, resources fact)`` per variant, in page order;
    None when fewer than two variants have an occupancy to compare."""
    drawn = [{"heading": heading, "capability": found["occupancy"]["capability"],
              "blocks_per_sm": found["occupancy"]["blocks_per_sm"],
              "occupancy": found["occupancy"]["occupancy"],
              "limiter": list(found["occupancy"]["limiter"]),
              "limits": dict(found["occupancy"]["limits"])}
             for heading, found in rows if found and found.get("occupancy")]
    if len(drawn) < 2:
        return None
    return {"directive": name, "variants": drawn}


def _columns(data: Json) -> list[tuple[str, tuple[str, str]]]:
    return [(key, header) for key, header in COLUMNS
            if any(key in v["limits"] for v in data["variants"])]


def occupancy_drawing(data: Json, theme: str = "html", ident: str = "") -> Drawing:
    """The figure of :func:`occupancy_input`'s data."""
    columns = _columns(data)
    longest = max(sans_width(v["heading"], 11) for v in data["variants"])
    label = min(max(longest + 10, 70.0), 170.0)
    width = 2 * MARGIN + label + len(columns) * COLUMN + RESULT
    pic = Drawing("tlo-" + digest([data, theme, ident]), theme)
    title = f"{data['directive']}: blocks per SM, and what limits them"
    pic.text(MARGIN, 16, clip(title, int((width - 2 * MARGIN) / 6.6)), "fg", weight="bold")
    subtitle = ("a square per block each resource would allow; the fewest (in colour, "
                "bold) decide how many blocks share an SM")
    lines = wrap(subtitle, width - 2 * MARGIN, 10)
    for n, line in enumerate(lines):
        pic.text(MARGIN, 31 + 12 * n, line, "muted", size=10)
    top = 31.0 + 12 * len(lines) + 6
    x0 = MARGIN + label
    for c, (_, (first, second)) in enumerate(columns):
        x = x0 + c * COLUMN
        pic.text(x + 4, top + 10, first, "fg", size=10)
        if second:
            pic.text(x + 4, top + 22, second, "fg", size=10)
    result_x = x0 + len(columns) * COLUMN
    pic.text(result_x + 4, top + 10, "blocks run", "fg", size=10, weight="bold")
    pic.text(result_x + 4, top + 22, "(warps busy)", "muted", size=10)
    y = top + 30
    pic.line(MARGIN, y, width - MARGIN, y, "grid")
    for v in data["variants"]:
        mid = y + ROW / 2
        pic.text(MARGIN, mid + 4, clip(v["heading"], int(label / 6.6)), "fg",
                 title=v["heading"])
        for c, (key, _) in enumerate(columns):
            x = x0 + c * COLUMN + 4
            allowed = v["limits"].get(key)
            if allowed is None:
                pic.text(x, mid + 4, "—", "muted")
                continue
            deciding = key in v["limiter"]
            shown = min(allowed, SQUARES)
            for s in range(shown):
                pic.rect(x + s * (SQUARE + GAP), mid - SQUARE / 2, SQUARE, SQUARE,
                         "accentfill" if deciding else "neutral", rx=1)
            pic.text(x + shown * (SQUARE + GAP) + 2, mid + 4, str(allowed),
                     "fg" if deciding else "muted", size=10,
                     weight="bold" if deciding else None)
        pic.text(result_x + 4, mid + 4, f"{v['blocks_per_sm']} ({v['occupancy']:.0%})",
                 "fg", weight="bold")
        y += ROW
    pic.line(MARGIN, y, width - MARGIN, y, "grid")
    capabilities = sorted({v["capability"] for v in data["variants"]})
    note = (f"limits of compute capability {', '.join(capabilities)} (cuda_occupancy.h, "
            "default carveout); warps busy: of the most an SM holds")
    lines = wrap(note, width - 2 * MARGIN, 10)
    for n, line in enumerate(lines):
        pic.text(MARGIN, y + 14 + 12 * n, line, "muted", size=10)
    height = y + 12 * len(lines) + 8
    return pic.finish(width, height, title, describe(data), 1)


# What a limit is called in words (``warps``: the threads an SM holds, counted in warps).
NAMES = {"warps": "threads", "blocks": "the blocks an SM holds"}


def _said(v: Json) -> str:
    names = NAMES
    allows = ", ".join(f"{names.get(key, key)} {v['limits'][key]}"
                       for key, _ in COLUMNS if key in v["limits"])
    blocks = v["blocks_per_sm"]
    return (f"{v['heading']}: {blocks} block{'' if blocks == 1 else 's'} per SM "
            f"({v['occupancy']:.0%} of its warps), limited by "
            f"{' and '.join(names.get(k, k) for k in v['limiter'])} (allowed: {allows})")


def describe(data: Json) -> str:
    """The figure in words (its ``<desc>``)."""
    return (f"Blocks per SM of {data['directive']} per variant, and how many each resource "
            "would allow. " + "; ".join(_said(v) for v in data["variants"]) + ".")


def sentence(data: Json) -> str:
    """The figure in one sentence, for builders that show no pictures."""
    return "Occupancy figure: " + "; ".join(
        f"{v['heading']} {v['blocks_per_sm']} per SM "
        f"({' and '.join(NAMES.get(k, k) for k in v['limiter'])})"
        for v in data["variants"]) + "."
