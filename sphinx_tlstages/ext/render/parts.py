"""The renderer of each part of the page, registered by its ``:show:`` word.

The parts themselves are declared in :mod:`sphinx_tlstages.core.parts`; a module of this
package registers the function that draws one with :func:`renders`, and
:func:`render_parts` draws every part a directive shows, in page order, each in a
container of the part's class under its heading. A renderer may be registered for one
builder (``renders("figure", builder="latex")``); otherwise it serves every builder.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from docutils import nodes

from ...core.hardware.fit import FitTable
from ...core.parts import BY_WORD, PARTS, Part, shown
from ...core.plan.spec import DirectiveSpec, VariantSpec
from ...core.plan.variants import merge_unchanged
from ...core.records import hardware_data
from ...core.records.bench_data import Attached
from ...core.results.result import Result

Rows = list[tuple[VariantSpec, Result]]


@dataclass(frozen=True)
class Context:
    """What rendering needs besides the results: versions, limits, links, numbers."""

    version: str | None
    max_lines: int
    # variant label -> URI of its CUDA file (and "<label>:sass" -> its SASS listing)
    downloads: dict[str, str] | None = None
    bench: list[Attached] = field(default_factory=list)  # each GPU's numbers, stale ids
    bench_stale: str = "mark"
    # The builder writes HTML, so a sentence naming a CUDA line may link to that line of
    # the listing (other builders print the number).
    links: bool = False
    # each GPU's hardware records (compute-sanitizer), stale ids
    hardware: list[hardware_data.Attached] = field(default_factory=list)
    timelines: list[Attached] = field(default_factory=list)  # each GPU's, stale ids
    fit: FitTable | None = None  # the fit part's table, where the directive has one


@dataclass(frozen=True)
class Drawn:
    """A part's body, and its heading where the renderer says more than the part's."""

    body: list[nodes.Node]
    heading: str | None = None


# None: the part has nothing to show on this page (no variant lowered, no T.gemm call).
Renderer = Callable[[DirectiveSpec, Rows, Context], Drawn | None]
_RENDERERS: dict[tuple[str, str | None], Renderer] = {}


def renders(word: str, builder: str | None = None) -> Callable[[Renderer], Renderer]:
    """Register the decorated function as the renderer of the part ``word`` (for
    ``builder`` only, or for every builder)."""
    part = BY_WORD[word]  # a KeyError here is a renderer for an undeclared part
    assert part.drawn_by is None, f"{word} is drawn by {part.drawn_by}'s renderer"

    def register(function: Renderer) -> Renderer:
        assert (word, builder) not in _RENDERERS, f"two renderers for {word}"
        _RENDERERS[word, builder] = function
        return function
    return register


def unregistered() -> list[str]:
    """Declared parts that no renderer draws (the package checks there are none)."""
    return [p.word for p in PARTS if p.drawn_by is None and (p.word, None) not in _RENDERERS]


def _wanted(part: Part, words: tuple[str, ...]) -> bool:
    """Whether the page shows ``part`` or one of the parts its renderer draws."""
    return any(p.word in words for p in PARTS if p.word == part.word or p.drawn_by == part.word)


def render_parts(spec: DirectiveSpec, rows: Rows, context: Context,
                 builder: str | None = None) -> list[nodes.Node]:
    """The parts below the caption, in page order."""
    rows = merge_unchanged(rows)[0]
    words = shown(spec)
    found: list[nodes.Node] = []
    for part in PARTS:
        if part.drawn_by is not None or not _wanted(part, words):
            continue
        draw = _RENDERERS.get((part.word, builder)) or _RENDERERS[part.word, None]
        drawn = draw(spec, rows, context)
        if drawn is None:
            continue
        container = nodes.container(classes=[part.css])
        container += nodes.rubric(text=drawn.heading or part.heading)
        container.extend(drawn.body)
        if not part.searchable:
            container["classes"].append("no-search")
        found.append(container)
    return found
