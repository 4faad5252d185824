"""Turning a directive's results into docutils nodes, the same for every builder.

The root is a container of class ``tl-pipeline`` holding a caption and the parts
``tl-summary`` (with the benchmark numbers and their chart, ``tl-bench``),
``tl-figures``, ``tl-gemm``, ``tl-annotations``, ``tl-shared``, ``tl-resources``,
``tl-sync`` and
``tl-diff``. Long texts (diffs, full CUDA) go into :class:`tl_collapsible` nodes, which
only HTML keeps; pictures into :class:`tl_figure` nodes, which each builder draws its own
way. Variants that differ in num_stages alone and lowered alike are shown as one column,
with a sentence under the caption saying so.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from docutils import nodes

from ...core.kernel.listing import Listing
from ...core.plan.spec import DirectiveSpec, VariantSpec
from ...core.plan.variants import merge_unchanged, unchanged_sentence
from ...core.records.bench_data import Attached
from ...core.results.result import Result
from .cuda import cuda_part, literal
from .tables import code


def caption(spec: DirectiveSpec, version: str | None) -> nodes.paragraph:
    first = spec.variants[0]
    para = nodes.paragraph(classes=["tl-caption"])
    para += nodes.strong(text=spec.title)
    para += nodes.Text(" — kernel ")
    para += code(first.factory)
    targets = ", ".join(t.label for t in spec.targets)
    para += nodes.Text(f", target{'s' if len(spec.targets) > 1 else ''} {targets}, "
                       f"TileLang {version or 'not installed'}")
    params = spec.params or (() if spec.sweep else first.params)
    if params:
        para += nodes.Text(", ")
        para += code(" ".join(f"{k}={v}" for k, v in params))
    if spec.sweep:
        para += nodes.Text(", sweeping ")
        para += code(" ".join(f"{k}={','.join(v)}" for k, v in spec.sweep))
    return para


def _snapshot_note(rows: list[tuple[VariantSpec, Result]]) -> nodes.Node | None:
    stored = [v.heading for v, r in rows if r.get("from_snapshot")]
    if not stored:
        return None
    return nodes.paragraph(
        text="TileLang could not lower this kernel where this page was built: "
             f"{'; '.join(stored)} are shown from the committed snapshot, "
             "unverified.", classes=["tl-from-snapshot"])


def _unchanged_note(merged: list[VariantSpec]) -> nodes.Node | None:
    if not merged:
        return None
    return nodes.paragraph(text=" ".join(unchanged_sentence(v) for v in merged),
                           classes=["tl-unchanged"])


def _written_note(spec: DirectiveSpec, factory: str) -> nodes.Node | None:
    if not spec.written_depth:
        return None
    several = len(spec.written_depth) > 1
    para = nodes.paragraph(classes=["tl-note", "tl-as-written"])
    para += nodes.Text(f"The kernel fixes its pipeline depth{'s' if several else ''} (")
    for i, (line, said) in enumerate(spec.written_depth):
        para += nodes.Text("; " if i else "")
        para += code(said) if said.startswith("num_stages=") and " " not in said \
            else nodes.Text(said)
        # Numbered as the kernel listing numbers it (document lines for an inline kernel).
        para += nodes.Text(f", line {(spec.kernel_line or 1) + line - 1}")
    para += nodes.Text("), so it is lowered as written. To compare depths, give ")
    para += code(factory)
    para += nodes.Text(" a ")
    para += code("num_stages")
    para += nodes.Text(f" parameter and pass it to {'its loops' if several else 'that loop'}.")
    return para


def kernel_listing(spec: DirectiveSpec) -> nodes.Element:
    """The kernel as listed: whole, or the part the listing options cut, each line
    numbered as the tables number statements (document lines, or the file's own)."""
    listing = spec.listing or Listing(spec.variants[0].source)
    block = literal(listing.text, "python")
    block["linenos"] = True
    block["highlight_args"] = {"linenostart": (spec.kernel_line or 1) + listing.start - 1}
    if listing.emphasize:
        block["highlight_args"]["hl_lines"] = list(listing.emphasize)
    if not listing.caption:
        return block
    # What literalinclude's :caption: makes: every writer captions such a container.
    # An id, which writers of numbered code blocks require of a captioned one.
    wrapper = nodes.container("", literal_block=True, classes=["literal-block-wrapper"],
                              ids=[f"{spec.node_id}-listing"])
    wrapper += nodes.caption(listing.caption, listing.caption)
    wrapper += block
    return wrapper


def _part(cls: str, title: str, *body: nodes.Node) -> nodes.container:
    part = nodes.container(classes=[cls])
    part += nodes.rubric(text=title)
    for node in body:
        part += node
    return part


@dataclass(frozen=True)
class Context:
    """What rendering needs besides the results: versions, limits, links, numbers."""

    version: str | None
    max_lines: int
    # variant label -> URI of its CUDA file (and "<label>:sass" -> its SASS listing)
    downloads: dict[str, str] | None = None
    bench: list[Attached] = field(default_factory=list)  # each GPU's numbers, stale ids
    bench_stale: str = "mark"


def render(spec: DirectiveSpec, rows: list[tuple[VariantSpec, Result]],
           context: Context) -> nodes.container:
    """The whole directive as nodes."""
    root = render_head(spec, rows, context)
    root.extend(render_parts(spec, rows, context))
    return root


def render_head(spec: DirectiveSpec, rows: list[tuple[VariantSpec, Result]],
                context: Context) -> nodes.container:
    """The root (class ``tl-pipeline``, the ``:ref:`` target) and its caption."""
    root = nodes.container(classes=["tl-pipeline"], ids=[spec.node_id])
    root += caption(spec, context.version)
    note = _snapshot_note(rows)
    if note is not None:
        root += note
    unchanged = _unchanged_note(merge_unchanged(rows)[1])
    if unchanged is not None:
        root += unchanged
    written = _written_note(spec, spec.variants[0].factory)
    if written is not None:
        root += written
    if spec.asserts:
        claims = nodes.paragraph(classes=["tl-asserts"])
        claims += nodes.Text("Checked on every build, for every variant: ")
        for i, (_, expression) in enumerate(spec.asserts):
            claims += nodes.Text("; " if i else "")
            claims += code(expression)
        claims += nodes.Text(".")
        root += claims
    return root


def render_parts(spec: DirectiveSpec, rows: list[tuple[VariantSpec, Result]],
                 context: Context) -> list[nodes.Node]:
    """The parts below the caption, in page order."""
    # The parts' modules (and the drawing code under them) are imported here: a build
    # whose parts all come from the fragment cache never writes one.
    from .annotations import annotation_part
    from .bench import bench_table
    from .figure_nodes import schedule_figures
    from .gemm import gemm_part
    from .passes import passes_part
    from .resources import resources_part
    from .shared import has_tensor_memory, shared_table
    from .summary import code_name, hazards_table, summary_table
    from .sync import sync_part

    rows = merge_unchanged(rows)[0]
    root: list[nodes.Node] = []
    if "source" in spec.show:
        root.append(_part("tl-source", "Kernel", kernel_listing(spec)))
    numbers = [node for data, entry, stale in context.bench
               for node in bench_table(spec, data, entry, stale, context.bench_stale,
                                   context.version)]
    verdicts = hazards_table(spec, rows)
    hazards = [verdicts] if verdicts is not None else []
    root.append(_part("tl-summary", "Summary", summary_table(spec, rows), *hazards, *numbers))
    any_ok = any(r.get("ok") for _, r in rows)
    if "figure" in spec.show and any_ok:
        root.append(_part("tl-figures", "Schedule figure", *schedule_figures(spec, rows)))
    gemm = gemm_part(spec, rows) if "gemm" in spec.show else None
    if gemm is not None:
        root.append(_part("tl-gemm", "Matrix multiply instructions", *gemm))
    if "annotations" in spec.show and any_ok:
        root.append(_part("tl-annotations", "Pipeline annotations", annotation_part(spec, rows)))
    if "shared" in spec.show and any_ok:
        title = "Shared buffers" + (" and tensor memory" if has_tensor_memory(rows) else "")
        root.append(_part("tl-shared", title, shared_table(rows)))
    if "resources" in spec.show and any_ok:
        found = resources_part(spec, rows, context.max_lines, context.downloads)
        if found:
            root.append(_part("tl-resources", "Registers, spills and occupancy", *found))
    if "sync" in spec.show and any_ok:
        root.append(_part("tl-sync", "Synchronisation and async operations", *sync_part(rows)))
    if "passes" in spec.show or spec.passes:
        found = passes_part(spec, rows, context.max_lines)
        if found:
            root.append(_part("tl-passes", "Compiler passes", *found))
    if ("diff" in spec.show and spec.diff != "none") or "cuda" in spec.show:
        parts = cuda_part(spec, rows, context.max_lines, context.downloads)
        if parts:
            cuda = _part("tl-diff", f"Generated {code_name(spec.targets)}", *parts)
            # Thousands of CUDA tokens per page would swamp the search index (and cost
            # more than the rest of a warm build); the tables above carry the spellings.
            cuda["classes"].append("no-search")
            root.append(cuda)
    return root
