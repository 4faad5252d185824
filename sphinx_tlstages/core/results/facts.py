"""A variant's lowering result as plain, JSON-ready data.

The worker builds results here from what it read off the IR and the normalised CUDA (the
result type itself is :mod:`.result`). Statements of a
pipelined loop are named by their Python source text where the IR and the source agree.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from ..kernel.statements import PipelinedLoop, Statement, gemm_statements, loop_over, pipelined
from . import cuda as cuda_text
from . import line_links
from .loop_match import align, readable, which_loop
from .result import (
    RESULT_SCHEMA,
    GemmCall,
    Hazards,
    NamedStatement,
    PipelineLoop,
    Result,
    Role,
    WarpSpecialization,
)

# Calls that the compiler inserts to synchronise; they have no source statement.
_SYNC_OPS = ("mbarrier", "barrier", "fence", "sync")


def _is_sync(ir: dict[str, Any]) -> bool:
    return any(word in ir["op"] for word in _SYNC_OPS)


def _kernels(ir_stmts: list[dict[str, Any]], body: Sequence[Statement]
             ) -> list[dict[str, Any]]:
    """The IR statements as the kernel can name them: each buffer no statement of the
    loop names is TileLang's own (a producer's copy of a mask, a phase counter, a
    workspace), left out of the buffers it is matched by and kept under ``theirs``."""
    names = frozenset().union(*(stmt.names for stmt in body))
    out = []
    for ir in ir_stmts:
        theirs = [b for b in ir.get("buffers", []) if b not in names]
        out.append({**ir, "buffers": [b for b in ir.get("buffers", []) if b in names],
                    "theirs": theirs, "all_buffers": ir["buffers"]} if theirs else ir)
    return out


def _serving(ir_stmts: list[dict[str, Any]], aligned: list[Statement | None]
             ) -> list[tuple[Statement | None, str]]:
    """Each IR statement's kernel statement, and what it is where TileLang added it: the
    binding that keeps a condition's value, or a statement on a buffer of TileLang's own
    (the copy of a shared tile into a fragment a reduction reads) that no kernel
    statement is, attached to the nearest statement matched that shares the buffer."""
    out: list[tuple[Statement | None, str]] = []
    for i, (ir, found) in enumerate(zip(ir_stmts, aligned, strict=True)):
        if ir.get("added"):
            out.append((found, str(ir["added"]) if found is not None else ""))
            continue
        theirs = set(ir.get("theirs", []))
        if found is not None or not theirs:
            out.append((found, ""))
            continue
        near = sorted((abs(j - i), j) for j, other in enumerate(ir_stmts)
                      if aligned[j] is not None and not other.get("added")
                      and theirs & set(other.get("theirs", [])))
        if not near:
            out.append((None, ""))
            continue
        said = readable({**ir, "buffers": ir["all_buffers"]})
        out.append((aligned[near[0][1]], f"{said}, on a buffer of TileLang's own "
                                         f"({', '.join(sorted(theirs))})"))
    return out


def _named(ir_stmts: list[dict[str, Any]], loop: PipelinedLoop | None) -> list[NamedStatement]:
    """Give each IR statement its kernel text and line (see :mod:`.loop_match`); one that
    fits none says so, with its operation and buffers in the kernel's spelling."""
    body = loop.body if loop else ()
    named: list[NamedStatement] = []
    kernels = _kernels(ir_stmts, body)
    aligned = _serving(kernels, align(kernels, body))
    for stmt, (found, added) in zip(ir_stmts, aligned, strict=True):
        if found is not None:
            entry: NamedStatement = {"text": found.text, "line": found.line}
            if added:  # TileLang's own, for the kernel statement it serves
                entry["added"] = added
            if stmt.get("replayed"):
                entry["replayed"] = list(stmt.get("reader_stages", []))
            named.append(entry)
            continue
        why = f"fits no statement of the loop at kernel line {loop.line} by its operation " \
              "and buffers" if loop else "no T.Pipelined loop of the kernel names its buffers"
        named.append({"text": readable(stmt), "line": None, "why": why})
    return named


def _rows(ws: dict[str, Any], body: Sequence[Statement]
          ) -> list[tuple[Statement, list[str] | None]]:
    """The kernel statements the roles table has a row for: each statement of the loop,
    or, for a compound one TileLang took apart (an ``if`` split per statement, a condition
    folded while tracing), the statements inside it, each with the warp groups whose
    statements were matched to it (see :mod:`.loop_match`; a statement of a branch not
    taken while tracing runs in none). None: a statement of the loop itself, whose groups
    are told by its buffers."""
    taken: dict[int, list[str]] = {}
    for role in ("producer", "consumer"):
        ir = [s for s in ws[role] if not _is_sync(s)]
        for found in align(_kernels(ir, body), body):
            if found is not None and role not in taken.setdefault(id(found), []):
                taken[id(found)].append(role)

    def inside(stmt: Statement) -> bool:
        return any(id(each) in taken or inside(each) for each in stmt.inner)

    def rows(stmt: Statement, nested: bool) -> list[tuple[Statement, list[str] | None]]:
        if id(stmt) in taken or not inside(stmt):
            return [(stmt, taken.get(id(stmt), []) if nested else None)]
        return [row for each in stmt.inner for row in rows(each, True)]

    return [row for stmt in body for row in rows(stmt, False)]


def _roles(ws: dict[str, Any], body: Sequence[Statement]) -> list[Role]:
    """Who runs each source statement once the loop is warp-specialised."""
    rows: list[Role] = []
    barriers = {b["name"] for b in ws["barriers"]}
    # What the kernel names: not a barrier (a TMA copy names its own), nor a buffer
    # TileLang made for a warp group (a phase counter, the producer's copy of a mask).
    named = frozenset().union(*(stmt.names for stmt in body)) - barriers
    known = {name for role in ("producer", "consumer") for ir in ws[role]
             for name in ir["buffers"]} & named

    def data(ir: dict[str, Any]) -> set[str]:
        # What the statement itself touches: not what the condition guarding it reads.
        return (set(ir["buffers"]) - set(ir.get("condition", []))) & named

    # The statements each group runs of the kernel's (a barrier call, guarded by the
    # kernel's condition, names the condition's buffers: it is the compiler's, below).
    runs = {role: [ir for ir in ws[role] if not _is_sync(ir)]
            for role in ("producer", "consumer")}

    def roles_of(stmt: Statement) -> list[str]:
        # The buffers a statement names must be the ones its IR touches; a mere subset
        # would let "T.copy(row_max, prev_max)" claim a loop that reads both.
        wanted = stmt.names & known
        exact = [role for role in ("producer", "consumer")
                 if any(wanted and data(ir) == wanted for ir in runs[role])]
        return exact or [role for role in ("producer", "consumer")
                         if any(data(ir) and data(ir) <= stmt.names for ir in runs[role])]

    for stmt, matched in _rows(ws, body):
        roles = matched if matched is not None else roles_of(stmt)
        rows.append({"text": stmt.text, "line": stmt.line,
                     "role": " + ".join(roles) or "none", "inserted": False})
    for role in ("producer", "consumer"):
        for ir in ws[role]:
            if _is_sync(ir):
                rows.append({"text": ir["ir"], "line": None, "role": role, "inserted": True,
                             "op": ir["op"].rsplit(".", 1)[-1]})
    return rows


def _gemms(ir_gemms: list[dict[str, Any]], source: list[Statement]) -> list[GemmCall]:
    """Each gemm call with its source text: in order when the counts agree, else by its
    operands' names, else the call as the IR names it."""
    found: list[GemmCall] = []
    unused = list(source)
    for i, gemm in enumerate(ir_gemms):
        operands = gemm["operands"]
        if len(ir_gemms) == len(source):
            match: Statement | None = source[i]
        else:
            match = next((s for s in unused if s.names == frozenset(operands)), None)
        if match is not None and match in unused:
            unused.remove(match)
        text = match.text if match else f"T.gemm({', '.join(operands)})"
        found.append({"text": text, "line": match.line if match else None,
                      "operands": operands, "instruction": gemm["instruction"],
                      "form": gemm["form"]})
    return found


def _located(hazards: Hazards, loops: list[Statement], source: str, factory: str,
             cuda: str, source_name: str | None) -> Hazards:
    """Each finding with its statements, each ``{text, line, cuda_lines}``: the lines of
    the CUDA listing (``#line`` directives left out, from 1) and the kernel lines of the two
    accesses that race (:func:`_at_cause`: a statement TileLang expands into code of its
    own, a reduction's workspace, is the kernel statement that called it); where the code
    does not say, the statements that name its buffer (the IR keeps no source spans; a
    buffer's name does survive): those of the pipelined loops, else of the loop its
    iteration names (``s=1``), each with the lines the compiler's ``#line`` directives give
    the statement and its body (see :mod:`.line_links`)."""
    findings = hazards.get("findings", [])
    if not findings:
        return hazards
    mapped = cuda_text.source_map(cuda, source_name) if source_name else []
    links = line_links.attribute(mapped, source) if source_name else []
    lines = source.splitlines()
    for finding in findings:
        at_cause = _at_cause(finding, mapped, links, lines, loops)
        if at_cause:
            finding["statements"] = at_cause
            continue
        found = [s for s in loops if finding["buffer"] in s.names]
        variable = str(finding.get("at") or "").split("=")[0]
        if not found and variable.isidentifier():
            found = [s for s in loop_over(source, factory, variable)
                     if finding["buffer"] in s.names]
        finding["statements"] = []
        for statement in found:
            region = line_links.statement_lines(lines, statement.line)
            finding["statements"].append({
                "text": statement.text, "line": statement.line,
                "cuda_lines": [i for i, link in enumerate(links, 1) if link.line in region]})
    return hazards


# How the code generator prints the calls a finding's accesses come from (numbered by the
# worker in program order: worker/hazards/verdict.py ``printed_calls``).
_ACCESSES = {"cp.async": re.compile(r"cp_async_gs|cp\.async\.ca|cp\.async\.cg"),
             "ldmatrix": re.compile(r"ptx_ldmatrix|ldmatrix\.sync"),
             "tl::AllReduce": re.compile(r"tl::AllReduce<")}


def _at_cause(finding: dict[str, Any], mapped: list[cuda_text.Mapped],
              links: list[line_links.Link], lines: list[str],
              loops: list[Statement]) -> list[dict[str, Any]]:
    """The kernel statements of a finding's two accesses, where the listing prints as many
    of each access's calls as the device code makes (the n-th call is the n-th printing
    line) and ``#line`` names a kernel line for it: the loop's statement at that line
    (the figure knows it by its text), else the line's text. Empty where either is not
    found: then the finding is placed by its buffer."""
    found: list[dict[str, Any]] = []
    for access in finding.get("accesses", []):
        pattern = _ACCESSES.get(str(access.get("call")))
        if pattern is None:
            return []
        printing = [i for i, item in enumerate(mapped, 1) if pattern.search(item.text)]
        if len(printing) != access.get("of") or not 0 <= access["n"] < len(printing):
            return []
        at = printing[access["n"]]
        line = links[at - 1].line if at - 1 < len(links) else None
        if line is None or not 0 < line <= len(lines):
            return []
        text = next((s.text for s in loops if s.line == line), lines[line - 1].strip())
        entry = next((e for e in found if e["line"] == line), None)
        if entry is None:
            found.append({"text": text, "line": line, "cuda_lines": [at]})
        elif at not in entry["cuda_lines"]:
            entry["cuda_lines"].append(at)
    return found


def _sync_lines(unneeded: list[dict[str, Any]], source: str, cuda: str,
                source_name: str | None) -> list[dict[str, Any]]:
    """Each unneeded synchronisation with its CUDA line (``cuda_lines``, the listing's
    numbering without ``#line`` directives) and the kernel line that line came from
    (``line``, relative to the kernel; None where ``#line`` names no kernel line): the
    n-th statement of its kind is the n-th line printing one, where the listing prints as
    many as the device code holds (otherwise neither is said)."""
    if not unneeded:
        return []
    mapped = cuda_text.source_map(cuda, source_name or "")
    links = line_links.attribute(mapped, source) if source_name else []
    found: dict[str, list[int]] = {op: [i for i, item in enumerate(mapped, 1)
                                        if pattern.search(item.text)]
                                   for op, pattern in cuda_text.PRINTED_SYNC.items()}
    out = []
    for entry in unneeded:
        lines = found.get(entry["op"], [])
        at = lines[entry["site"]] if len(lines) == entry.get("of") \
            and 0 <= entry["site"] < len(lines) else None
        line = links[at - 1].line if at is not None and links else None
        out.append({**entry, "cuda_lines": [at] if at is not None else [], "line": line})
    return out


def success(ir: dict[str, Any], cuda: str, source: str, factory: str, num_stages: int,
            seconds: float, source_name: str | None = None) -> Result:
    """Assemble a successful variant's result from IR facts and normalised CUDA."""
    kernel_loops = pipelined(source, factory)
    loops = [list(loop.body) for loop in kernel_loops]
    taken: set[int] = set()
    ws = ir.get("warp_specialized")
    ws_loop: int | None = None
    if ws:  # the loop the producer runs: taken first, the pipeliner's are the others
        barriers = {b["name"] for b in ws["barriers"]}
        buffers = {name for role in ("producer", "consumer") for stmt in ws[role]
                   for name in stmt["buffers"]} - barriers
        names = ws.get("vars") or [None]
        ws_loop = which_loop(names[0], buffers, kernel_loops, taken)
        if ws_loop is not None:
            taken.add(ws_loop)
    pipeline: list[PipelineLoop] = []
    for loop in ir["pipeline"]:
        found = which_loop(loop.get("var"),
                           {n for stmt in loop["statements"] for n in stmt["buffers"]},
                           kernel_loops, taken)
        if found is not None:
            taken.add(found)
        chosen = kernel_loops[found] if found is not None else None
        pipeline.append({"num_stages": loop["num_stages"], "stage": loop["stage"],
                         "order": loop["order"],
                         "statements": _named(loop["statements"], chosen),
                         "line": chosen.line if chosen else None,
                         "trips": loop.get("trips")})
    warp: WarpSpecialization | None = None
    if ws:
        warp = {
            "threads": ws.get("threads", 0),
            "producer_threads": ws["producer_threads"],
            "consumer_threads": ws.get("threads", 0) - ws["producer_threads"],
            "line": kernel_loops[ws_loop].line if ws_loop is not None else None,
            "slots": (ws.get("loops") or [{}])[0].get("slots"),
            "trips": (ws.get("loops") or [{}])[0].get("trips"),
            "roles": _roles(ws, loops[ws_loop] if ws_loop is not None else []),
            "barriers": [
                {"name": b["name"], "shape": b["shape"], "dtype": b["dtype"],
                 "init": ws.get("barrier_init", {}).get(b["name"], [])}
                for b in ws["barriers"]
            ],
        }
    merged = ir.get("merged", {})
    result: Result = {
        "schema": RESULT_SCHEMA,
        "ok": True,
        "seconds": round(seconds, 3),
        "num_stages": num_stages,
        "pipeline": pipeline,
        "warp_specialized": warp,
        "shared": [b for b in ir["shared"] if b["scope"] in ("shared", "shared.dyn")],
        "tmem": ir.get("tmem", []),
        "gemm": _gemms(ir.get("gemm", []), gemm_statements(source, factory)),
        "planned_ir": ir.get("planned_ir"),
        "dynamic_shared_bytes": merged.get("dynamic", 0),
        "static_shared_bytes": merged.get("static", 0),
        "threads": merged.get("threads", 0),
        "sync": cuda_text.sync_counts(cuda),
        "cuda_lines": cuda_text.code_lines(cuda),
        "cuda": cuda,
        "passes": ir.get("passes", []),
        "pass_diffs": ir.get("pass_diffs", {}),
    }
    if "pass_fingerprints" in ir:  # taken where a snapshot may be written from the result
        result["pass_fingerprints"] = ir["pass_fingerprints"]
    if ir.get("hazards") is not None:
        result["hazards"] = _located(ir["hazards"], [s for loop in loops for s in loop],
                                     source, factory, cuda, source_name)
    if ir.get("unneeded_sync") is not None:
        result["unneeded_sync"] = _sync_lines(ir["unneeded_sync"], source, cuda, source_name)
    if ir.get("schedule"):
        result["schedule"] = ir["schedule"]
        ws_schedule = ir["schedule"].get("warp_specialized")
        if ws_schedule and ws_loop is not None:
            _name_planned(ws_schedule["statements"], kernel_loops[ws_loop])
    return result


def _name_planned(statements: list[dict[str, Any]], loop: PipelinedLoop) -> None:
    """The warp-specialised figure's statements (the loop as planned, before the split),
    each with its kernel text and line, as the tables name them."""
    for stmt, named in zip(statements, _named(statements, loop), strict=True):
        stmt.update(named)
