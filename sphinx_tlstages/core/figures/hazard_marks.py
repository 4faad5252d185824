"""The hazard check's findings, placed on a schedule figure.

A finding (:mod:`..hazards.check`) names the statements of the loop that use its buffer, each
by its source text and kernel line; the figure names its statements the same way
(:mod:`.model`). :func:`matched` keeps a finding where one of its statements at least is
exactly one statement of the figure (same text, same line), and says the others by their
lines (a statement before the loop whose scratch TileLang put on a buffer's bytes): a
finding that cannot be placed draws nothing, so the figure never marks a box the finding
does not name. The
figure then outlines those statements' boxes (the cp.async figure's steady state, every
drawn iteration of a warp-specialised one) in the hazard colour and says the finding in
its legend, its description and its sentence.

``model.schedule_figures`` places each finding of a flagged variant on its cp.async
figure data as ``fig["hazards"]`` (``{kind, buffer, at, slot, stmts}``); a clean
variant's figure data, and so its digest, ids and bytes, are unchanged. The key is part
of the figure data, so a flagged and a clean variant of the same schedule get a figure
each. ``cp_async.py`` outlines the steady-state boxes, ``warp.py`` the chips in every drawn
iteration (``Chip.stmts``), both with class ``hazard`` (an outline ``Rect``, so SVG and
TikZ draw it alike) and a legend line in ``hazardfill`` (:func:`legend`); the colour is
one custom property, ``--tl-fig-hazard`` (``#E0115F`` in HTML, light and dark; ``#C2185B``
on paper). The sentences (``lanes``, ``warp_chips``) end with the finding and its
statements' lines. Tests: ``tests/test_hazard_marks.py`` (real sm_80 and sm_90a lowerings
of the #2668 loop and its twin); the book's ``consume-then-fetch`` directive (hazards
chapter) shows it.

Not done: the outlines mark the statements (the steady state's boxes, every drawn
iteration's chips), not the iterations the finding names (``at`` is the iteration of one
of the two accesses; the other's is only in the finding's words).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from .drawing import Drawing, wrap

Json = dict[str, Any]

_SLOT = re.compile(r"\((slots? [0-9]+(?:-[0-9]+)?)\)")


def matched(findings: list[Json], statements: list[Json],
            line: Callable[[int | None], int | None]) -> list[Json]:
    """``[{kind, buffer, at, slot, stmts, others}]``: each finding one of whose statements
    at least is a statement of the figure (``stmts``: their indices), in the findings'
    order; its statements at lines the figure does not draw (a reduction before the loop
    whose workspace shares a buffer's bytes) are ``others``, each ``{text, line}`` said
    by its page line. A statement at a line the figure draws with other text, or at no
    line, places nothing. ``line`` maps a kernel line to the page's, as the figure's statements are
    numbered."""
    marks: list[Json] = []
    for finding in findings:
        named = finding.get("statements") or []
        found: list[int] = []
        others: list[Json] = []
        for statement in named:
            where = [i for i, s in enumerate(statements)
                     if s.get("text") == statement.get("text")
                     and s.get("line") is not None
                     and s.get("line") == line(statement.get("line"))]
            at = line(statement.get("line"))
            if len(where) == 1:
                found.append(where[0])
            elif at is not None and not any(s.get("line") == at for s in statements):
                others.append({"text": str(statement.get("text", "")), "line": at})
            else:  # a line of the figure that holds another statement: not this finding's
                break
        else:
            if found:
                slot = _SLOT.search(str(finding.get("text", "")))
                marks.append({"kind": str(finding.get("kind", "")),
                              "buffer": str(finding.get("buffer", "")),
                              "at": str(finding.get("at") or ""),
                              "slot": slot.group(1) if slot else "",
                              "stmts": sorted(set(found)),
                              **({"others": others} if others else {})})
    return marks


def _elsewhere(mark: Json) -> str:
    """`` and T.reduce_sum(...) (line 22)``: a finding's statements outside the figure."""
    return "".join(f" and {other['text']}"
                   + (f" (line {other['line']})" if other.get("line") is not None else "")
                   for other in mark.get("others", []))


def label(mark: Json) -> str:
    """``RAW on S at k=0, slot 0``: a finding in a few words."""
    at = f" at {mark['at']}" if mark.get("at") else ""
    slot = f", {mark['slot']}" if mark.get("slot") else ""
    return f"{mark['kind']} on {mark['buffer']}{at}{slot}"


def marked(fig: Json) -> set[int]:
    """The statements whose boxes are outlined."""
    return {i for mark in fig.get("hazards", []) for i in mark["stmts"]}


def legend(pic: Drawing, fig: Json, x: float, y: float, width: float) -> float:
    """A legend line per finding, at baseline ``y``: a sample outline, then the finding in
    its colour, wrapped within ``width`` (narrower than the other legend lines: coloured
    words that must read at 420 px). Returns the next line's baseline."""
    for mark in fig.get("hazards", []):
        pic.rect(x + 1, y - 10, 14, 12, "hazard", rx=2.5, outline=2)
        said = (label(mark).replace(" ", "\u00a0") + ": a race the hazard check found "
                + (f"between the outlined statement{_elsewhere(mark)}" if mark.get("others")
                   else "between the outlined statements"))
        for line in wrap(said, width - 20, 11):
            pic.text(x + 20, y, line, "hazardfill")
            y += 15
        y += 2
    return y


def words(fig: Json, text: Callable[[int], str]) -> str:
    """The findings in a sentence (``""`` for none): what the outlines mean."""
    said = [f"{label(mark)} between " + " and ".join(text(i) for i in mark["stmts"])
            + _elsewhere(mark) for mark in fig.get("hazards", [])]
    if not said:
        return ""
    boxes = "steady-state boxes" if fig.get("kind") == "cp_async" else "boxes"
    return f"The hazard check flags {'; '.join(said)}: their {boxes} are outlined."
