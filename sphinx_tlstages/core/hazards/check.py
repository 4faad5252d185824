"""The hazard check: does a variant's pipeline let a read of shared memory race a copy?

It reads the synchronisation trace the worker took of the final device code
(:mod:`...worker.hazards.trace`: every thread runs the same sequence of cp.async copies,
commits, waits, ``__syncthreads`` and shared reads, each access a byte interval of its
allocation bounded over all threads) and checks the model of ``cp.async`` pipelines:

- every cp.async joins the open group, each commit closes it, ``cp_async_wait<N>``
  completes all but the newest N closed groups, and ``__syncthreads`` publishes what is
  completed and ends the reads since the previous one;
- RAW: a read of bytes a cp.async wrote needs that copy completed by a wait *and* a
  ``__syncthreads`` after that wait (another thread may have issued the copy);
- WAR: a cp.async into bytes read since the last ``__syncthreads`` may land before
  another thread's read.

Intervals over all threads are conservative; a thread reading only its own completed
copy without a barrier would be flagged (TileLang does not emit that). What it does not
cover: global-memory and scalar dependences the planner moved, shared stores made by the
threads themselves (TileLang's thread-sync pass places those barriers).

The verdict is the ``hazards`` fact: ``{"verdict": "none" | "hazard" | "not checked",
"text": one line for the summary row, "findings": [...]}``.
"""

from __future__ import annotations

from typing import Any

from .rings import Unchecked, check_rings

Json = dict[str, Any]
# Findings kept per variant; the rest are counted.
_KEPT = 4


def cuda_words(lines: list[int]) -> str:
    """``CUDA lines 40-42, 45`` (``""`` for none): a statement's lines in the listing."""
    spans: list[list[int]] = []
    for line in sorted(set(lines)):
        if spans and line == spans[-1][1] + 1:
            spans[-1][1] = line
        else:
            spans.append([line, line])
    said = ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in spans)
    return f"CUDA line{'s' if len(lines) > 1 else ''} {said}" if spans else ""


def not_checked(why: str) -> Json:
    return {"verdict": "not checked", "text": f"not checked: {why}", "findings": []}


def _overlap(a: Json, b: Json) -> bool:
    return bool(a["root"] == b["root"] and a["lo"] <= b["hi"] and b["lo"] <= a["hi"])


def _slot(record: Json, buffers: dict[str, Json]) -> str:
    info = buffers.get(record["buffer"])
    if not info or not info.get("versions"):
        return ""
    size = max(info["bytes"] // info["versions"], 1)
    first = (record["lo"] - info["base"]) // size
    last = (record["hi"] - info["base"]) // size
    return f" (slot {first})" if first == last else f" (slots {first}-{last})"


def _when(record: Json) -> str:
    return f"at {record['at']}" if record.get("at") else "outside the pipelined loop"


def check_cp_async(records: list[Json], buffers: dict[str, Json]) -> list[Json]:
    """Every RAW and WAR hazard of a cp.async trace, in program order."""
    findings: list[Json] = []
    committed = 0
    writes: list[Json] = []  # copies not yet published: {record, group, done}
    reads: list[Json] = []  # reads since the last __syncthreads

    def add(kind: str, record: Json, text: str) -> None:
        findings.append({"kind": kind, "buffer": record["buffer"], "at": record.get("at", ""),
                         "text": text})

    for record in records:
        op = record["op"]
        if op == "copy":
            for read in reads:
                if _overlap(read, record):
                    add("WAR", record,
                        f"the cp.async into {record['buffer']}{_slot(record, buffers)} "
                        f"{_when(record)} overwrites what was read {_when(read)} with no "
                        "__syncthreads between: another thread may still be reading it")
                    break
            writes.append({"record": record, "group": None, "done": False})
        elif op == "commit":
            committed += 1
            for write in writes:
                if write["group"] is None:
                    write["group"] = committed
        elif op == "wait":
            for write in writes:
                if write["group"] is not None and write["group"] <= committed - record["n"]:
                    write["done"] = True
        elif op == "sync":
            writes = [w for w in writes if not w["done"]]
            reads = []
        elif op == "read":
            for write in writes:
                copy = write["record"]
                if not _overlap(copy, record):
                    continue
                what = (f"{_when(record)} reads {record['buffer']}{_slot(record, buffers)} "
                        f"while the cp.async into it {_when(copy)}")
                if write["done"]:
                    add("RAW", record, f"{what} is complete but not published: no "
                        "__syncthreads between its cp_async_wait and the read")
                else:
                    add("RAW", record, f"{what} is still in flight: no cp_async_wait "
                        "covers it")
                break
            reads.append(record)
    return findings


def verdict(records: list[Json], buffers: dict[str, Json]) -> Json:
    """The ``hazards`` fact of a trace: its cp.async copies and its mbarrier rings."""
    copies = [r for r in records if r["op"] == "copy"]
    tmas = [r for r in records if r["op"] == "tma"]
    if not copies and not tmas:
        return not_checked("no asynchronous copy into shared memory")
    findings = check_cp_async(records, buffers) if copies else []
    rings: Json = {}
    if tmas or any(r["op"] == "init" for r in records):
        try:
            found, rings = check_rings(records)
        except Unchecked as exc:
            return not_checked(str(exc))
        findings += found
    if findings:
        first: dict[tuple[str, str], Json] = {}
        for finding in findings:
            first.setdefault((finding["kind"], finding["buffer"]), finding)
        kept = list(first.values())[:_KEPT]
        names = ", ".join(sorted({f"{f['kind']} on {f['buffer']}" for f in kept}))
        more = len(findings) - len(kept)
        text = f"hazard: {names}" + (f" ({len(findings)} accesses)" if more > 0 else "")
        return {"verdict": "hazard", "text": text, "findings": kept}
    written = sorted({r["buffer"] for r in copies + tmas})
    slots = max([buffers.get(name, {}).get("versions") or 1 for name in written])
    said = [f"{groups} cp.async groups" for groups in
            [sum(1 for r in records if r["op"] == "commit")] if copies]
    if rings:
        said.append(f"{rings['barriers']} barrier{'s' if rings['barriers'] != 1 else ''}, "
                    f"phases and arrivals" + (", bytes" if rings.get("bytes") else ""))
    return {"verdict": "none",
            "text": f"none found: RAW and WAR on {', '.join(written)} over {slots} "
                    f"slot{'s' if slots != 1 else ''}; {', '.join(said)}",
            "findings": []}
