"""Turning a directive's results into docutils nodes, the same for every builder.

The root is a container of class ``tl-pipeline`` holding a caption and the parts
``tl-summary``, ``tl-annotations``, ``tl-shared``, ``tl-sync`` and ``tl-diff``. Long
texts (diffs, full CUDA) go into :class:`tl_collapsible` nodes, which only HTML keeps.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from docutils import nodes

from ...core.result import Result, shared_bytes
from ...core.spec import DirectiveSpec, VariantSpec
from .bench import bench_table
from .cuda import cuda_part, literal
from .passes import passes_part
from .tables import Cell, Span, code, table


def _n(value: int) -> str:
    return f"{value:,}"


def _doc_line(spec: DirectiveSpec, line: int | None) -> str:
    if line is None:
        return ""
    if spec.kernel_line is None:
        return f"{spec.variants[0].source_name}:{line}"
    return str(spec.kernel_line + line - 1)


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


def _part(cls: str, title: str, *body: nodes.Node) -> nodes.container:
    part = nodes.container(classes=[cls])
    part += nodes.rubric(text=title)
    for node in body:
        part += node
    return part


def _schedule(result: Result) -> str:
    ws = result.get("warp_specialized")
    if ws:
        count = sum(b["shape"][0] for b in ws["barriers"])
        return f"warp-specialised, {count} barriers"
    loops = result.get("pipeline") or []
    if loops:
        return ", ".join(f"pipelined, depth {loop['num_stages']}" for loop in loops)
    return "not pipelined"


def _shared_cell(result: Result, limit: int | None) -> Cell:
    used = shared_bytes(result)
    if limit is None:
        return f"{_n(used)} B"
    text = f"{_n(used)} B ({100 * used / limit:.0f} %)"
    if used > limit:
        return nodes.strong(text=f"{text}: over the limit", classes=["tl-over"])
    return text


def summary_table(spec: DirectiveSpec, rows: list[tuple[VariantSpec, Result]]) -> nodes.Node:
    one_target = len(spec.targets) == 1
    limit = spec.target.shared_memory_limit
    shared = "shared memory / block" + (f" (of {_n(limit)} B)" if limit and one_target
                                        else "")
    matrix = not all(v.only_num_stages for v, _ in rows)
    headers = ["variant" if matrix else "num_stages", "schedule", "threads", shared,
               "__syncthreads", "async copies", "waits", "CUDA lines"]
    body: list[list[Cell | Span]] = []
    for variant, result in rows:
        name = variant.heading if matrix else str(variant.num_stages)
        if not result.get("ok"):
            error = result["error"]
            expected = variant.num_stages in spec.expect_error
            text = f"failed{', as expected' if expected else ''} ({error['kind']}): " \
                   f"{error['message']}"
            body.append([name,
                         Span(nodes.strong(text=text, classes=["tl-failed"]), len(headers) - 1)])
            continue
        sync = result["sync"]
        if sync["tma_load"]:
            copies = f"{sync['tma_load']} TMA loads"
        else:
            copies = f"{sync['cp_async']} cp_async"
        if sync["cp_async_wait"]:
            waits = " ".join(f"<{n}>" for n in sync["cp_async_wait"])
        else:
            waits = f"{sync['mbarrier_wait']} mbarrier"
        body.append([name, _schedule(result), str(result["threads"]),
                     _shared_cell(result, variant.target.shared_memory_limit),
                     str(sync["syncthreads"]), copies, waits, str(result["cuda_lines"])])
    return table(headers, body, ["tl-table"], widths=[8, 18, 7, 20, 10, 12, 14, 8])


def _stage_cell(loop: dict[str, Any], i: int) -> str:
    order = loop["order"][i] if i < len(loop["order"]) else "?"
    return f"stage {loop['stage'][i]}, order {order}"


def _schedule_rows(rows: list[tuple[VariantSpec, Result]]) -> dict[tuple[str, str], dict[str, Any]]:
    """Per statement, per variant: stage and order, or the warp group that runs it.

    Rows are keyed by the statement's source text; statements the compiler inserted are
    keyed by their operation and warp group, since their IR text differs per variant.
    """
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for variant, result in rows:
        if not result.get("ok"):
            continue
        for loop in result["pipeline"]:
            for i, stmt in enumerate(loop["statements"]):
                row = found.setdefault(("", stmt["text"]), {"line": stmt["line"]})
                row[variant.label] = _stage_cell(loop, i)
        for role in (result.get("warp_specialized") or {}).get("roles", []):
            key = (role["role"], role["op"]) if role["inserted"] else ("", role["text"])
            row = found.setdefault(key, {"line": role["line"]})
            row[variant.label] = role["role"]
    return found


def _ring(ws: dict[str, Any]) -> str:
    return "; ".join(f"{b['name']} {tuple(b['shape'])}, arrivals "
                     + " ".join(str(c) for c in b["init"]) for b in ws["barriers"]) or "none"


def annotation_part(spec: DirectiveSpec, rows: list[tuple[VariantSpec, Result]]) -> nodes.Node:
    ok = [(v, r) for v, r in rows if r.get("ok")]
    headers: list[Cell] = ["statement", "line", *(v.heading for v, _ in ok)]
    body: list[list[Cell | Span]] = []
    for (role, text), row in _schedule_rows(rows).items():
        label: Cell = code(text)
        if role:
            label = [nodes.emphasis(text="inserted "), code(f"T.{text}"),
                     nodes.emphasis(text=f" ({role})")]
        missing = "not pipelined" if not role else "—"
        body.append([label, _doc_line(spec, row["line"]),
                     *(row.get(v.label, missing) for v, _ in ok)])
    warp = [r.get("warp_specialized") for _, r in ok]
    if any(warp):
        body.append([nodes.emphasis(text="producer + consumer threads"), "",
                     *(f"{w['producer_threads']} + {w['consumer_threads']}" if w else "—"
                       for w in warp)])
        body.append([nodes.emphasis(text="barrier ring"), "",
                     *(_ring(w) if w else "—" for w in warp)])
    if not body:
        return nodes.paragraph(text="No variant has a pipelined loop.")
    return table(headers, body, ["tl-table"], widths=[34, 8, *[14] * len(ok)])


def shared_table(rows: list[tuple[VariantSpec, Result]]) -> nodes.Node:
    ok = [(v, r) for v, r in rows if r.get("ok")]
    names: list[str] = []
    for _, result in ok:
        names += [b["name"] for b in result["shared"] if b["name"] not in names]
    body: list[list[Cell | Span]] = []
    for name in names:
        cells: list[Cell | Span] = [code(name)]
        for _, result in ok:
            buf = next((b for b in result["shared"] if b["name"] == name), None)
            cells.append(f"{tuple(buf['shape'])} {buf['dtype']}, {_n(buf['bytes'])} B"
                         if buf else "—")
        body.append(cells)
    body.append([nodes.strong(text="total"),
                 *(f"{_n(sum(b['bytes'] for b in r['shared']))} B" for _, r in ok)])
    body.append(["merged dynamic allocation", *(f"{_n(r['dynamic_shared_bytes'])} B"
                                                 for _, r in ok)])
    if any(r["static_shared_bytes"] for _, r in ok):
        body.append(["static shared (barriers)",
                     *(f"{_n(r['static_shared_bytes'])} B" for _, r in ok)])
    headers: list[Cell] = ["buffer", *(v.heading for v, _ in ok)]
    return table(headers, body, ["tl-table"], widths=[20, *[20] * len(ok)])


SYNC_ROWS = (
    ("syncthreads", "__syncthreads()"),
    ("cp_async", "tl::cp_async_gs<N>"),
    ("cp_async_commit", "tl::cp_async_commit()"),
    ("cp_async_wait", "tl::cp_async_wait<N>()"),
    ("mbarrier_init", "mbarrier[i].init()"),
    ("mbarrier_wait", "mbarrier[i].wait()"),
    ("mbarrier_arrive", "mbarrier[i].arrive()"),
    ("mbarrier_expect_tx", "mbarrier[i].expect_transaction()"),
    ("mbarrier_arrive_expect_tx", "mbarrier[i].arrive_and_expect_tx()"),
    ("tma_load", "tl::tma_load"),
    ("tma_store", "tl::tma_store"),
    ("mma", "tl::mma_sync"),
    ("wgmma", "tl::wgmma_ss / _rs"),
)


def sync_part(rows: list[tuple[VariantSpec, Result]]) -> list[nodes.Node]:
    ok = [(v, r) for v, r in rows if r.get("ok")]
    body: list[list[Cell | Span]] = []
    omitted = []
    for key, spelling in SYNC_ROWS:
        values = [r["sync"][key] for _, r in ok]
        if not any(values):
            omitted.append(spelling)
            continue
        cells = [" ".join(f"<{n}>" for n in v) if isinstance(v, list) else str(v) for v in values]
        body.append([code(spelling), *cells])
    headers: list[Cell] = ["in the CUDA", *(v.heading for v, _ in ok)]
    result: list[nodes.Node] = [table(headers, body, ["tl-table"], widths=[30, *[14] * len(ok)])]
    if omitted:
        result.append(nodes.paragraph(
            text="Absent from every variant: " + ", ".join(omitted) + ".", classes=["tl-note"]))
    return result


@dataclass(frozen=True)
class Context:
    """What rendering needs besides the results: versions, limits, links, numbers."""

    version: str | None
    max_lines: int
    downloads: dict[str, str] | None = None  # variant label -> URI of its CUDA file
    bench: list[tuple[dict[str, Any], dict[str, Any]]] = field(default_factory=list)
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
    root: list[nodes.Node] = []
    if "source" in spec.show:
        source = spec.variants[0].source
        block = literal(source, "python")
        # Numbered as the tables number statements: document lines, or the file's own.
        block["linenos"] = True
        block["highlight_args"] = {"linenostart": spec.kernel_line or 1}
        root.append(_part("tl-source", "Kernel", block))
    numbers = [node for data, entry in context.bench
               for node in bench_table(spec, data, entry, context.version, context.bench_stale)]
    root.append(_part("tl-summary", "Summary", summary_table(spec, rows), *numbers))
    any_ok = any(r.get("ok") for _, r in rows)
    if "annotations" in spec.show and any_ok:
        root.append(_part("tl-annotations", "Pipeline schedule", annotation_part(spec, rows)))
    if "shared" in spec.show and any_ok:
        root.append(_part("tl-shared", "Shared buffers", shared_table(rows)))
    if "sync" in spec.show and any_ok:
        root.append(_part("tl-sync", "Synchronisation and async operations", *sync_part(rows)))
    if "passes" in spec.show or spec.passes:
        found = passes_part(spec, rows, context.max_lines)
        if found:
            root.append(_part("tl-passes", "Compiler passes", *found))
    if ("diff" in spec.show and spec.diff != "none") or "cuda" in spec.show:
        parts = cuda_part(spec, rows, context.max_lines, context.downloads)
        if parts:
            cuda = _part("tl-diff", "Generated CUDA", *parts)
            # Thousands of CUDA tokens per page would swamp the search index (and cost
            # more than the rest of a warm build); the tables above carry the spellings.
            cuda["classes"].append("no-search")
            root.append(cuda)
    return root
