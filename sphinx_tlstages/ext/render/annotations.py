"""The ``annotations`` part, "Pipeline annotations": each statement's stage and order as
``tl.PipelinePlanning`` annotated the loop, or its warp group."""

from __future__ import annotations

from typing import Any

from docutils import nodes

from ...core.plan.spec import DirectiveSpec, VariantSpec
from ...core.results.result import PipelineLoop, Result, WarpSpecialization
from .parts import Context, Drawn, Rows, renders
from .tables import Cell, Span, code, doc_line, table


def _stage_cell(loop: PipelineLoop, i: int) -> str:
    # The stage and order arrays hold one entry per statement the pipeliner scheduled: a
    # binding it replays with its readers has none, and says theirs.
    statements = loop["statements"]
    stmt = statements[i] if i < len(statements) else None
    if stmt is not None and "replayed" in stmt:
        stages = ", ".join(str(s) for s in stmt["replayed"]) or "none"
        return f"with its readers: stage {stages}"
    i -= sum(1 for s in statements[:i] if "replayed" in s)
    if i >= len(loop["stage"]):
        return "—"
    order = loop["order"][i] if i < len(loop["order"]) else "?"
    return f"stage {loop['stage'][i]}, order {order}"


def _schedule_rows(rows: list[tuple[VariantSpec, Result]]) -> dict[tuple[str, str], dict[str, Any]]:
    """Per statement, per variant: stage and order, or the warp group that runs it.

    Rows are keyed by the statement's kernel line and text (two loops may hold the same
    text); statements the compiler inserted are keyed by their operation and warp group,
    since their IR text differs per variant.
    """
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for variant, result in rows:
        if not result.get("ok"):
            continue
        for loop in result["pipeline"]:
            for i, stmt in enumerate(loop["statements"]):
                added = stmt.get("added")
                text = f"{added}\n{stmt['text']}" if added else stmt["text"]
                row = found.setdefault((str(stmt["line"] or ""), text),
                                       {"line": stmt["line"], "why": stmt.get("why"),
                                        "added": added, "text": stmt["text"]})
                row[variant.label] = _stage_cell(loop, i)
        warp = result.get("warp_specialized")
        for role in warp["roles"] if warp else []:
            key = (role["role"], role["op"]) if role["inserted"] \
                else (str(role["line"] or ""), role["text"])
            row = found.setdefault(key, {"line": role["line"], "inserted": role["inserted"]})
            row[variant.label] = role["role"]
    return found


def _ring(ws: WarpSpecialization) -> str:
    return "; ".join(f"{b['name']} {tuple(b['shape'])}, arrivals "
                     + " ".join(str(c) for c in b["init"]) for b in ws["barriers"]) or "none"


def annotation_part(spec: DirectiveSpec, rows: list[tuple[VariantSpec, Result]]) -> nodes.Node:
    ok = [(v, r) for v, r in rows if r.get("ok")]
    headers: list[Cell] = ["statement", "line", *(v.heading for v, _ in ok)]
    body: list[list[Cell | Span]] = []
    for (role, text), row in _schedule_rows(rows).items():
        label: Cell = code(text)
        inserted = bool(row.get("inserted"))
        if inserted:
            label = [nodes.emphasis(text="inserted by the compiler: "), code(f"T.{text}"),
                     nodes.emphasis(text=f" ({role})")]
        elif row.get("added"):  # TileLang's own statement, for the kernel's it serves
            label = [nodes.emphasis(text="added by TileLang for "), code(row["text"]),
                     nodes.emphasis(text=f": {row['added']}")]
        elif row.get("why"):
            label = [code(text), nodes.emphasis(text=f" (no kernel line: {row['why']})")]
        missing = "—" if inserted else "not pipelined"
        body.append([label, doc_line(spec, row["line"]),
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
    found = table(headers, body, ["tl-table"], widths=[34, 8, *[14] * len(ok)],
                  key_columns=2)
    if not any(loop["stage"] for _, r in ok for loop in r["pipeline"]):
        return found
    replayed = any("replayed" in stmt for _, r in ok for loop in r["pipeline"]
                   for stmt in loop["statements"])
    key = nodes.paragraph(classes=["tl-note", "tl-annotations-key"], text=(
        "stage s: the statement runs s iterations after the first statements of its "
        "iteration (stage 0 issues the copies of a tile, stage 2 uses that tile two "
        "iterations later); order: its place among the statements of one steady-state "
        "iteration." + (" with its readers: a name bound to a value that reads nothing "
                        "the loop writes; TileLang gives it no stage of its own and "
                        "evaluates it again with each statement that reads it, in those "
                        "statements' stages." if replayed else "")))
    holder = nodes.container()
    holder += found
    holder += key
    return holder


@renders("annotations")
def _annotations(spec: DirectiveSpec, rows: Rows, context: Context) -> Drawn | None:
    return Drawn([annotation_part(spec, rows)]) if any(r.get("ok") for _, r in rows) else None
