"""The "Summary" part: one row per variant, the facts a reader compares first."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from docutils import nodes

from ...core.plan.spec import DirectiveSpec, VariantSpec
from ...core.plan.targets import Target
from ...core.plan.variants import set_label
from ...core.results.cuda import source_map
from ...core.results.kernels import Kernel, kernel_at, kernels, shared_of
from ...core.results.loop_waits import waits_by_loop
from ...core.results.result import Result, shared_bytes
from ...core.results.unread import configs_unread
from .bench import bench_table
from .decisions import schedule_cell, split_note
from .hazard_rows import hazards_table
from .parts import Context, Drawn, Rows, renders
from .shared import NOT_RECORDED
from .tables import Cell, Span, code, doc_line, number, table


def _calls(count: int, what: str) -> str:
    """``1 TMA load call``, ``4 cp.async calls``."""
    return f"{count} {what} call{'' if count == 1 else 's'}"


def _bytes_cell(used: int, limit: int | None, named: bool) -> Cell:
    """``98,304 B (59 %)``, or with the limit named (``of 166,912``) when the variants
    of a directive answer to different limits."""
    if limit is None:
        return f"{number(used)} B"
    text = f"{number(used)} B ({100 * used / limit:.0f} %" \
           + (f" of {number(limit)})" if named else ")")
    if used > limit:
        return nodes.strong(text=f"{text}: over the limit", classes=["tl-over"])
    return text


def _shared_cell(result: Result, limit: int | None, named: bool) -> Cell:
    return _bytes_cell(shared_bytes(result), limit, named)


# A block's on-chip memory per target kind, in each vendor's words.
_MEMORY = {"cuda": ("shared memory", "block"), "hip": ("LDS", "workgroup"),
           "metal": ("threadgroup memory", "threadgroup")}


def memory_heading(targets: Sequence[Target]) -> str:
    """What a block's on-chip memory is called on these targets: the vendor's words for
    one kind, CUDA's with the others' in parentheses for several."""
    kinds = sorted({t.kind for t in targets}, key=list(_MEMORY).index)
    if len(kinds) == 1:
        memory, unit = _MEMORY[kinds[0]]
        return f"{memory} / {unit}"
    others = ", ".join(_MEMORY[k][0] for k in kinds if k != "cuda")
    return f"shared memory ({others}) / block"


def barrier_heading(targets: Sequence[Target]) -> str:
    """The block-wide barrier as the targets' code spells it: ``__syncthreads``,
    ``threadgroup_barrier``, or both."""
    return " / ".join(dict.fromkeys(t.barrier for t in targets))


def code_name(targets: Sequence[Target]) -> str:
    """``CUDA``, ``HIP``, ``Metal``, or ``code`` when a directive has several."""
    languages = {t.language for t in targets}
    return languages.pop() if len(languages) == 1 else "code"


def _copies_cell(sync: dict[str, Any], synchronous: bool, asynchronous: bool = True) -> str:
    """``4 cp.async calls``, ``1 TMA load call, 2 cp.async calls``, ``none``."""
    # Counted in the generated code: call sites, not copies in flight (one call in a
    # loop issues a copy per iteration).
    # Both kinds where a kernel has both (a warp-specialised loop's TMA copies and a
    # second loop's cp.async pipeline in the consumer warps).
    said = [_calls(sync[key], what) for key, what in
            (("tma_load", "TMA load"), ("cp_async", "cp.async")) if sync.get(key)]
    if said and synchronous:
        # The hazard check's "not checked: cp.async on gfx950 is a synchronous store",
        # in the summary's words (see hip_note).
        said[-1] += " (synchronous stores on HIP)"
    # On Metal there is no asynchronous copy to count: the pipeline's copies are plain
    # loads and stores (see synchronous_note).
    return ", ".join(said) or ("none" if asynchronous else "none: loads and stores")


def _waits_cell(spec: DirectiveSpec, sync: dict[str, Any],
                by_loop: list[tuple[int, list[int]]] | None, loops: int) -> str:
    """Each cp_async_wait's n in code order, per loop (by the kernel line the schedule
    cell names it with) where the row has several pipelined loops; then mbarrier waits."""
    waits = sync.get("cp_async_wait") or []
    if waits and by_loop is not None and loops > 1:
        said = [f"line {doc_line(spec, line)}: " + " ".join(f"<{n}>" for n in ns)
                for line, ns in by_loop]
    else:
        said = [" ".join(f"<{n}>" for n in waits)] if waits else []
    if sync.get("mbarrier_wait"):
        said.append(_calls(sync["mbarrier_wait"], "mbarrier wait"))
    return "; ".join(said) or "none"


def synchronous_copies(variant: VariantSpec, code: str) -> bool:
    """TileLang's HIP ``cp_async_gs<16>`` and ``<8>`` are plain stores
    (``tl_templates/hip/copy.h``; ``<4>`` alone loads asynchronously): whether every
    cp.async call of this code is one."""
    sizes = re.findall(r"\btl::cp_async_gs(?:_conditional)?<(\d+)>", code)
    return variant.target.kind == "hip" and bool(sizes) and all(n in ("8", "16") for n in sizes)


def _loop_lines(result: Result) -> list[int]:
    lines = [loop.get("line") for loop in result.get("pipeline") or []]
    ws = result.get("warp_specialized")
    if ws:
        lines.append(ws.get("line"))
    return [line for line in lines if line is not None]


def _rows(spec: DirectiveSpec, variant: VariantSpec, result: Result, name: str,
          one_target: bool) -> list[list[Cell | Span]]:
    """A variant's rows: one, or one per kernel where its code holds several (each with
    its own loops, threads and counts; see :mod:`...core.results.kernels`)."""
    cuda = result["cuda"]
    found = kernels(cuda, variant.source_name)
    mapped = source_map(cuda, variant.source_name)
    loops = _loop_lines(result)
    if len(found) < 2:
        by_loop = waits_by_loop(mapped, variant.source, loops)
        loop_count = len(result.get("pipeline") or []) + bool(result.get("warp_specialized"))
        return [[name, schedule_cell(spec, result), str(result["threads"]),
                 _shared_cell(result, variant.target.shared_memory_limit, not one_target),
                 str(result["sync"].get(variant.target.barrier_key, NOT_RECORDED)),
                 _copies_cell(result["sync"], synchronous_copies(variant, cuda),
                              variant.target.asynchronous),
                 _waits_cell(spec, result["sync"], by_loop, loop_count),
                 str(result["cuda_lines"])]]
    rows: list[list[Cell | Span]] = []
    limit = variant.target.shared_memory_limit
    for i, kernel in enumerate(found):
        def mine(line: int | None, kernel: Kernel = kernel) -> bool:
            return kernel_at(found, line) is kernel
        sync = kernel.sync
        own = [line for line in loops if mine(line)]
        by_loop = waits_by_loop(mapped[kernel.first - 1:kernel.last], variant.source, own)
        if i == 0:  # the facts as recorded: TileLang's merged allocation, its threads
            threads = str(result["threads"])
            shared = _shared_cell(result, limit, not one_target)
        else:
            threads = str(kernel.threads) if kernel.threads is not None else "?"
            used, _ = shared_of(kernel, result.get("shared") or [])
            shared = _bytes_cell(used, limit, not one_target)
        label: list[nodes.Node] = [nodes.Text(f"{name} · "), code(kernel.name)]
        rows.append([label, schedule_cell(spec, result, mine), threads, shared,
                     str(sync.get(variant.target.barrier_key, NOT_RECORDED)),
                     _copies_cell(sync, synchronous_copies(variant, kernel.code),
                                  variant.target.asynchronous),
                     _waits_cell(spec, sync, by_loop, len(own)),
                     f"{kernel.length} (lines {kernel.first}–{kernel.last})"])
    return rows


def summary_table(spec: DirectiveSpec, rows: list[tuple[VariantSpec, Result]]) -> nodes.Node:
    one_target = len(spec.targets) == 1
    limit = spec.target.shared_memory_limit
    shared = memory_heading(spec.targets) + (f" (of {number(limit)} B)"
                                             if limit and one_target else "")
    matrix = not all(v.only_num_stages for v, _ in rows)
    language = code_name(spec.targets)
    headers = ["variant" if matrix else "num_stages", "schedule", "threads", shared,
               barrier_heading(spec.targets), "async copies (calls in the code)", "waits",
               f"{language} lines" if language != "code" else "lines of code"]
    body: list[list[Cell | Span]] = []
    for variant, result in rows:
        name = variant.heading if matrix else variant.stages
        if not result.get("ok"):
            error = result["error"]
            expected = spec.expects_failure(variant)
            text = f"failed{', as expected' if expected else ''} ({error['kind']}): " \
                   f"{error['message']}"
            body.append([name,
                         Span(nodes.strong(text=text, classes=["tl-failed"]), len(headers) - 1)])
            continue
        body += _rows(spec, variant, result, name, one_target)
    return table(headers, body, ["tl-table"], widths=[8, 18, 7, 20, 10, 12, 14, 8])


def kernels_note(rows: list[tuple[VariantSpec, Result]]) -> nodes.Node | None:
    """Where a variant's code holds several kernels: which they are, and which kernel
    each of the summary's numbers and the hazard check describe."""
    said: dict[tuple[str, ...], list[VariantSpec]] = {}
    for variant, result in rows:
        if not result.get("ok"):
            continue
        names = tuple(k.name for k in kernels(result["cuda"], variant.source_name))
        if len(names) > 1:
            said.setdefault(names, []).append(variant)
    if not said:
        return None
    para = nodes.paragraph(classes=["tl-note", "tl-kernels"])
    for i, (names, variants) in enumerate(said.items()):
        every = len(variants) == sum(1 for _, r in rows if r.get("ok"))
        para += nodes.Text((" " if i else "") + (
            "Each variant's code" if every else f"The code of {set_label(variants)}")
            + f" holds {len(names)} kernels, ")
        for j, kernel in enumerate(names):
            para += nodes.Text("" if not j else " and " if j == len(names) - 1 else ", ")
            para += code(kernel)
        para += nodes.Text(": a row each, with its own loops, threads (its "
                           "__launch_bounds__), counts and lines of the listing. Threads and "
                           "shared memory of the first, ")
        para += code(names[0])
        para += nodes.Text(", are TileLang's (the facts an :assert: reads as threads and "
                           "dynamic_shared_bytes), and the hazard check reads that kernel "
                           "alone; the shared memory of the other"
                           + ("s" if len(names) > 2 else "")
                           + " is the sum of the shared buffers its code names, as "
                           "declared.")
    return para


def hip_note(rows: list[tuple[VariantSpec, Result]]) -> nodes.Node | None:
    """Where HIP code calls cp.async: what those calls are there, in the words the hazard
    check's verdict uses."""
    if not any(r.get("ok") and synchronous_copies(v, r["cuda"]) for v, r in rows):
        return None
    return nodes.paragraph(classes=["tl-note", "tl-hip-copies"], text=(
        "On HIP, TileLang's cp.async calls (tl::cp_async_gs<16> and <8>) are synchronous "
        "stores in its HIP templates (tl_templates/hip/copy.h), tl::cp_async_commit() does "
        "nothing and tl::cp_async_wait<n>() waits for the wave's global loads (s_waitcnt "
        "vmcnt): the calls are counted as the code spells them, but no copy is in flight "
        "across a wait, which is why the hazard check has no asynchronous pipeline to "
        "check."))


def synchronous_note(rows: list[tuple[VariantSpec, Result]]) -> nodes.Node | None:
    """What a pipeline on Apple's GPUs is, where a variant is one: multi-buffered like
    CUDA's, but its copies are plain loads and stores."""
    metal = [v for v, r in rows if r.get("ok") and not v.target.asynchronous
             and r.get("pipeline")]
    if not metal:
        return None
    return nodes.paragraph(classes=["tl-note", "tl-synchronous"], text=(
        "On Metal a pipelined loop is synchronous: where TileLang versions a shared buffer "
        "per stage it fills a slot ahead of its use, as on CUDA, but each copy is plain "
        "loads and stores into threadgroup memory, ordered by threadgroup_barrier, never "
        "an asynchronous copy: there is nothing to commit or wait for."))


def waits_key(rows: list[tuple[VariantSpec, Result]]) -> nodes.Node | None:
    """What the waits column's ``<1> <0>`` means, where a variant has such waits; and,
    where the hazard check counts cp.async groups beside it, what that count is."""
    if not any(r.get("ok") and r["sync"].get("cp_async_wait") for _, r in rows):
        return None
    text = ("waits: each tl::cp_async_wait<n>() of the code, in order (per loop, by the "
            "line of its T.Pipelined, where a kernel has several); <n> waits until at most "
            "n committed groups of copies are still in flight (<0>: all have landed).")
    verdicts = [r.get("hazards") for _, r in rows if r.get("ok")]
    if any(h is not None and "cp.async group" in h["text"] for h in verdicts):
        text += (" The hazard check's \"N cp.async groups\" counts the groups a block "
                 "commits as it runs (one per loop iteration), not the calls in the code.")
    return nodes.paragraph(classes=["tl-note", "tl-waits-key"], text=text)


def configs_note(spec: DirectiveSpec, rows: list[tuple[VariantSpec, Result]]
                 ) -> nodes.Node | None:
    """Pass configs the kernel's text gives that its decorators kept out of TileLang's
    reach, with the variants lowered without them; None where every variant has its own."""
    said: dict[str, list[str]] = {}
    for variant, result in rows:
        configs = result.get("unapplied_configs") if result.get("ok") else None
        if configs:
            text = configs_unread(configs, lambda n: doc_line(spec, n) if spec.kernel_line
                                  is None else f"line {doc_line(spec, n)}") + "."
            said.setdefault(text, []).append(variant.heading)
    if not said:
        return None
    return nodes.paragraph(classes=["tl-note", "tl-unapplied-configs"], text=" ".join(
        f"{', '.join(labels)}: {text}" for text, labels in said.items()))


@renders("summary")
def _summary(spec: DirectiveSpec, rows: Rows, context: Context) -> Drawn:
    """The summary table, the hazard check's verdicts and each GPU's numbers (with the
    chart, where the page shows it)."""
    numbers = [node for data, entry, stale in context.bench
               for node in bench_table(spec, data, entry, stale, context.bench_stale,
                                       context.version)]
    verdicts = hazards_table(spec, rows, context)
    notes = [note for note in (kernels_note(rows), waits_key(rows), hip_note(rows),
                               synchronous_note(rows), split_note(spec, rows),
                               configs_note(spec, rows))
             if note is not None]
    return Drawn([summary_table(spec, rows), *notes, *verdicts, *numbers])
