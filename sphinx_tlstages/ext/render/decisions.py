"""What TileLang decided for each pipelined loop of a variant, in words: warp-specialised,
software-pipelined or left as it was, on which kernel line, and a depth the loop cannot
reach (fewer iterations than num_stages). The summary's schedule cell and the note under
it both read here."""

from __future__ import annotations

from collections.abc import Callable

from docutils import nodes

from ...core.plan.spec import DirectiveSpec, VariantSpec
from ...core.results.result import Result
from .tables import doc_line


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def unreached(stages: object, trips: object) -> str:
    """``; the loop runs 2 times: num_stages=4 allocates 4 slots and fills 2`` where a
    loop runs fewer times than it has slots (empty otherwise, or when unknown)."""
    if not isinstance(stages, int) or not isinstance(trips, int) or not 0 < trips < stages:
        return ""
    return (f"; the loop runs {_plural(trips, 'time')}: num_stages={stages} allocates "
            f"{_plural(stages, 'slot')} and fills {trips}")


def loop_words(spec: DirectiveSpec, result: Result) -> list[tuple[int | None, str]]:
    """(kernel line, what TileLang made of the loop) for each pipelined loop, in line
    order: the warp-specialised one and the software-pipelined ones."""
    found: list[tuple[int | None, str]] = []
    ws = result.get("warp_specialized")
    if ws:
        count = sum(b["shape"][0] for b in ws["barriers"])
        slots = ws.get("slots")
        words = "warp-specialised, " + (f"{_plural(slots, 'slot')}, " if slots else "") \
            + _plural(count, "barrier")
        found.append((ws.get("line"), words + unreached(slots, ws.get("trips"))))
    for loop in result.get("pipeline") or []:
        words = f"pipelined, depth {loop['num_stages']}"
        found.append((loop.get("line"), words + unreached(loop["num_stages"],
                                                          loop.get("trips"))))
    return sorted(found, key=lambda item: item[0] or 0)


def schedule_cell(spec: DirectiveSpec, result: Result,
                  keep: Callable[[int | None], bool] | None = None) -> str:
    """The summary's schedule cell: one loop's words, or each loop's with its line
    (``keep``: which loops, by kernel line: those of one kernel of several)."""
    found = [(line, words) for line, words in loop_words(spec, result)
             if keep is None or keep(line)]
    if not found:
        return "not pipelined"
    if len(found) == 1:
        return found[0][1]
    return "; ".join(f"line {doc_line(spec, line) or '?'}: {words}" for line, words in found)


def split_note(spec: DirectiveSpec, rows: list[tuple[VariantSpec, Result]]
               ) -> nodes.Node | None:
    """Where TileLang warp-specialised one loop and software-pipelined another, which
    and where, grouped by the variants it holds for; None when no variant has both."""
    said: dict[str, list[str]] = {}
    for variant, result in rows:
        ws = result.get("warp_specialized") if result.get("ok") else None
        others = [loop for loop in (result.get("pipeline") or []) if ws]
        if not ws or not others:
            continue
        lines = ", ".join(f"line {doc_line(spec, loop.get('line')) or '?'}"
                          for loop in others)
        text = (f"TileLang warp-specialised the loop at line "
                f"{doc_line(spec, ws.get('line')) or '?'} (producer and consumer warps, "
                f"a barrier ring) and software-pipelined the loop"
                f"{'s' if len(others) > 1 else ''} at {lines} inside the consumer warps, "
                "as cp.async copies; TileLang gives no reason for the choice in its IR "
                "or its log.")
        said.setdefault(text, []).append(variant.heading)
    if not said:
        return None
    para = nodes.paragraph(classes=["tl-note", "tl-loop-split"])
    para += nodes.Text(" ".join(f"{', '.join(labels)}: {text}"
                                for text, labels in said.items()))
    return para
