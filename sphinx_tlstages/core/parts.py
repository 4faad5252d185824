"""The parts of a directive's page, each declared once.

A part is one section under the caption: its ``:show:`` word, the other words people use
for it, its CSS class and heading, whether ``tlstages_show`` (and ``tlstages lower``)
shows it by default and whether it is always shown. The option parser, the renderer loop
(:mod:`sphinx_tlstages.ext.render`, which registers one renderer per word), the
reference page, the command line and the fact table all read this table. Adding a part
is one entry here and one renderer.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from .errors import OptionError


@dataclass(frozen=True)
class Part:
    """One part of the page."""

    word: str  # the ``:show:`` word, and the key its renderer is registered under
    css: str  # the class of its container
    heading: str  # its rubric (a renderer may say more: "... and tensor memory")
    about: str  # what it shows, for the reference page
    aliases: tuple[str, ...] = ()  # other words ``:show:`` accepts for it
    default: bool = True  # in the default of ``tlstages_show``
    always: bool = False  # shown on every page, whatever ``:show:`` says
    printed: bool = False  # ``tlstages lower`` prints it when ``--show`` is not given
    # Drawn by another part's renderer, inside its container (the chart sits in the
    # summary with the numbers it draws; listings and diffs share one CUDA container).
    drawn_by: str | None = None
    searchable: bool = True  # False: kept out of the HTML search index


# In page order: the listing, the summary (with the hazard check's verdicts and the
# benchmark numbers and their chart), the schedule figures right under it, the
# instruction each T.gemm became under those, then the tables and the code.
PARTS: tuple[Part, ...] = (
    Part("source", "tl-source", "Kernel", "the kernel's listing, numbered as the tables number it",
         aliases=("kernel", "listing")),
    Part("summary", "tl-summary", "Summary",
         "a table of each variant's facts and the hazard check's verdicts",
         aliases=("hazards", "hazard"), default=False, always=True),
    Part("chart", "tl-bench", "Summary", "the benchmark numbers drawn as a chart",
         aliases=("bench", "charts"), drawn_by="summary"),
    Part("figure", "tl-figures", "Schedule figure", "the pipeline schedule",
         aliases=("figures", "schedule")),
    Part("gemm", "tl-gemm", "Matrix multiply instructions",
         "the instruction each T.gemm became", aliases=("mma", "instructions"),
         printed=True),
    Part("annotations", "tl-annotations", "Pipeline annotations",
         "each statement's stage and order", aliases=("annotation", "stages"),
         printed=True),
    Part("shared", "tl-shared", "Shared buffers", "shared buffers and tensor memory",
         aliases=("buffers", "smem", "tmem"), printed=True),
    # Costs a compile with NVIDIA's compiler per variant (2-5 s): not a default.
    Part("resources", "tl-resources", "Registers, spills and occupancy",
         "registers, spills and occupancy from NVIDIA's compiler",
         aliases=("registers", "occupancy"), default=False),
    # Costs a lowering per target family the page does not lower, per row: not a default.
    Part("fit", "tl-fit", "Which depth fits which GPU",
         "each variant against the shared-memory limit of the GPUs people have, and the "
         "kernel's own tuning list", aliases=("gpus",), default=False),
    Part("sync", "tl-sync", "Synchronisation and async operations",
         "barriers, waits and async copies", aliases=("synchronisation", "synchronization"),
         printed=True),
    # Its facts cost printing the IR after every pass run (about a tenth of the lowering).
    Part("passes", "tl-passes", "Compiler passes", "the lines each pass run changed",
         aliases=("pass",), default=False),
    # Thousands of CUDA tokens per page would swamp the search index (and cost more than
    # the rest of a warm build); the tables above carry the spellings.
    Part("diff", "tl-diff", "Generated CUDA", "diffs of the generated code, per ``:diff:``",
         aliases=("diffs",), searchable=False),
    Part("cuda", "tl-diff", "Generated CUDA", "the generated code in full",
         aliases=("code", "listings"), drawn_by="diff", searchable=False),
)

BY_WORD = {part.word: part for part in PARTS}
# Every word ``:show:`` accepts -> the part it names.
WORDS = {word: part for part in PARTS for word in (part.word, *part.aliases)}
# The words a page may choose (the others are always shown), in page order.
SHOW_PARTS = tuple(part.word for part in PARTS if not part.always)
ALWAYS = tuple(part.word for part in PARTS if part.always)
DEFAULT_SHOW = tuple(part.word for part in PARTS if part.default and not part.always)
PRINTED = tuple(part.word for part in PARTS if part.printed)


class Shows(Protocol):
    """What deciding the shown parts reads of a directive."""

    @property
    def show(self) -> tuple[str, ...]: ...

    @property
    def passes(self) -> tuple[str, ...]: ...


def shown(spec: Shows) -> tuple[str, ...]:
    """The parts a directive's page shows, in page order: the always-shown ones, its
    ``:show:`` words, and ``passes`` where it names ``:passes:``."""
    words = {*ALWAYS, *spec.show, *(("passes",) if spec.passes else ())}
    return tuple(part.word for part in PARTS if part.word in words)


def shows(spec: Shows, word: str) -> bool:
    """Whether the page shows the part ``word`` (a word no part declares is a KeyError)."""
    return BY_WORD[word].word in shown(spec)


def parse_show(value: str | Iterable[str]) -> tuple[str, ...]:
    """``:show:``'s words (aliases included) -> the chosen parts' words, in page order.
    An always-shown part may be named; it is not listed (it is shown anyway)."""
    words = value.replace(",", " ").split() if isinstance(value, str) else list(value)
    unknown = [w for w in words if w not in WORDS]
    if unknown:
        raise OptionError(f"unknown part {', '.join(unknown)}; choose from "
                          f"{' '.join(SHOW_PARTS)} ({describe_always()}; {describe_aliases()})")
    chosen = {WORDS[w].word for w in words}
    return tuple(word for word in SHOW_PARTS if word in chosen)


def describe_always() -> str:
    """``summary is always shown``, for messages and the reference."""
    return f"{' and '.join(ALWAYS)} {'is' if len(ALWAYS) == 1 else 'are'} always shown"


def reference() -> str:
    """The ``:show:`` row of the reference page (reStructuredText)."""
    chosen = "; ".join(f"``{part.word}`` {part.about}" for part in PARTS if not part.always)
    always = "; ".join(f"``{part.word}`` ({part.about})" for part in PARTS if part.always)
    aliases = "; ".join(f"{', '.join(f'``{a}``' for a in part.aliases)} for ``{part.word}``"
                        for part in PARTS if part.aliases)
    return (f"Any of ``{' '.join(SHOW_PARTS)}`` (default ``tlstages_show``): {chosen}. "
            f"Always shown, whether named or not: {always}. Also accepted: {aliases}.")


def describe_aliases() -> str:
    """``figures, schedule for figure; ...``: the other words accepted."""
    return "also " + "; ".join(f"{', '.join(part.aliases)} for {part.word}"
                               for part in PARTS if part.aliases)
