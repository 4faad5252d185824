"""The "Summary" part: one row per variant, the facts a reader compares first."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from docutils import nodes

from ...core.hazards.check import cuda_words
from ...core.plan.spec import DirectiveSpec, VariantSpec
from ...core.plan.targets import Target
from ...core.results.result import Hazards, Result, shared_bytes
from ...core.results.unread import configs_unread
from .bench import bench_table
from .decisions import schedule_cell, split_note
from .parts import Context, Drawn, Rows, renders
from .tables import Cell, Span, doc_line, number, table


def _calls(count: int, what: str) -> str:
    """``1 TMA load call``, ``4 cp.async calls``."""
    return f"{count} {what} call{'' if count == 1 else 's'}"


def _shared_cell(result: Result, limit: int | None, named: bool) -> Cell:
    """``98,304 B (59 %)``, or with the limit named (``of 166,912``) when the variants
    of a directive answer to different limits."""
    used = shared_bytes(result)
    if limit is None:
        return f"{number(used)} B"
    text = f"{number(used)} B ({100 * used / limit:.0f} %" \
           + (f" of {number(limit)})" if named else ")")
    if used > limit:
        return nodes.strong(text=f"{text}: over the limit", classes=["tl-over"])
    return text


def memory_heading(targets: Sequence[Target]) -> str:
    """What a block's on-chip memory is called on these targets."""
    kinds = {t.kind for t in targets}
    if kinds == {"hip"}:
        return "LDS / workgroup"
    return "shared memory / block" if kinds == {"cuda"} else "shared memory (LDS) / block"


def code_name(targets: Sequence[Target]) -> str:
    """``CUDA``, ``HIP``, or ``code`` when a directive has both."""
    languages = {t.language for t in targets}
    return languages.pop() if len(languages) == 1 else "code"


def summary_table(spec: DirectiveSpec, rows: list[tuple[VariantSpec, Result]]) -> nodes.Node:
    one_target = len(spec.targets) == 1
    limit = spec.target.shared_memory_limit
    shared = memory_heading(spec.targets) + (f" (of {number(limit)} B)"
                                             if limit and one_target else "")
    matrix = not all(v.only_num_stages for v, _ in rows)
    language = code_name(spec.targets)
    headers = ["variant" if matrix else "num_stages", "schedule", "threads", shared,
               "__syncthreads", "async copies (calls in the code)", "waits",
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
        sync = result["sync"]
        # Counted in the generated code: call sites, not copies in flight (one call in a
        # loop issues a copy per iteration).
        # Both kinds where a kernel has both (a warp-specialised loop's TMA copies and a
        # second loop's cp.async pipeline in the consumer warps).
        copies = ", ".join(_calls(sync[key], what) for key, what in
                           (("tma_load", "TMA load"), ("cp_async", "cp.async"))
                           if sync[key]) or "none"
        said = [" ".join(f"<{n}>" for n in sync["cp_async_wait"])] \
            if sync["cp_async_wait"] else []
        if sync["mbarrier_wait"]:
            said.append(_calls(sync["mbarrier_wait"], "mbarrier wait"))
        waits = "; ".join(said) or "none"
        body.append([name, schedule_cell(spec, result), str(result["threads"]),
                     _shared_cell(result, variant.target.shared_memory_limit, not one_target),
                     str(sync["syncthreads"]), copies, waits, str(result["cuda_lines"])])
    return table(headers, body, ["tl-table"], widths=[8, 18, 7, 20, 10, 12, 14, 8])


def waits_key(rows: list[tuple[VariantSpec, Result]]) -> nodes.Node | None:
    """What the waits column's ``<1> <0>`` means, where a variant has such waits."""
    if not any(r.get("ok") and r["sync"].get("cp_async_wait") for _, r in rows):
        return None
    return nodes.paragraph(classes=["tl-note", "tl-waits-key"], text=(
        "waits: each tl::cp_async_wait<n>() of the code, in order; <n> waits until at "
        "most n committed groups of copies are still in flight (<0>: all have landed)."))


def hazards_table(spec: DirectiveSpec, rows: list[tuple[VariantSpec, Result]]
                  ) -> nodes.Node | None:
    """The *Hazards* row under the summary: the hazard check's verdict, one line per
    verdict with the variants that share it (a finding in bold, each with its words);
    None when no result holds one (a page built from a snapshot recorded before the
    check)."""
    matrix = not all(v.only_num_stages for v, _ in rows)
    groups: dict[str, list[str]] = {}
    found: dict[str, Hazards] = {}
    for variant, result in rows:
        hazards = result.get("hazards")
        if not result.get("ok") or hazards is None:
            continue
        text = hazards["text"]
        groups.setdefault(text, []).append(variant.heading if matrix else variant.stages)
        found[text] = hazards
    if not groups:
        return None
    body: list[list[Cell | Span]] = []
    for text, names in groups.items():
        cell = nodes.container()
        line = nodes.paragraph()
        if found[text]["verdict"] == "hazard":
            line += nodes.strong(text=text, classes=["tl-hazard"])
        else:
            line += nodes.Text(text)
        cell += line
        for finding in found[text]["findings"]:
            named = "; ".join(
                f"{s['text']} (line {doc_line(spec, s['line'])}"
                + (f", {cuda_words(s['cuda_lines'])})" if s.get("cuda_lines") else ")")
                for s in finding.get("statements", []))
            cell += nodes.paragraph(text=f"{finding['kind']}: {finding['text']}"
                                    + (f"; in the kernel: {named}" if named else ""),
                                    classes=["tl-hazard-finding"])
        body.append([", ".join(names), cell])
    body += _unneeded_rows(spec, rows, matrix)
    return table(["Hazards", "what the hazard check found in the final code"], body,
                 ["tl-table", "tl-hazards"], widths=[8, 92])


def unneeded_words(spec: DirectiveSpec, entry: dict[str, Any]) -> str:
    """One unneeded synchronisation in words: what, where in the CUDA and the kernel, and
    what "not needed" means."""
    where = [cuda_words(entry.get("cuda_lines") or [])]
    if entry.get("line") is not None:
        where.append(f"from kernel line {doc_line(spec, entry['line'])}")
    elif entry.get("cuda_lines"):
        where.append("no #line of the compiler names its kernel line")
    said = ", ".join(w for w in where if w)
    return f"{entry['text']}" + (f" ({said})" if said else "")


def _unneeded_rows(spec: DirectiveSpec, rows: list[tuple[VariantSpec, Result]],
                   matrix: bool) -> list[list[Cell | Span]]:
    """A row per distinct list of synchronisation no modelled dependence needs (variants
    whose verdict is "none"), its variants named as the verdicts' are."""
    groups: dict[tuple[str, ...], list[str]] = {}
    for variant, result in rows:
        found = result.get("unneeded_sync") if result.get("ok") else None
        if not found:
            continue
        said = tuple(unneeded_words(spec, entry) for entry in found)
        groups.setdefault(said, []).append(variant.heading if matrix else variant.stages)
    body: list[list[Cell | Span]] = []
    for said, names in groups.items():
        cell = nodes.container()
        cell += nodes.paragraph(text="synchronisation no dependence in the check's model "
                                     "needs:", classes=["tl-unneeded-sync"])
        for words in said:
            cell += nodes.paragraph(text=words, classes=["tl-unneeded-sync"])
        body.append([", ".join(names), cell])
    return body


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
    verdicts = hazards_table(spec, rows)
    notes = [note for note in (waits_key(rows), split_note(spec, rows),
                               configs_note(spec, rows)) if note is not None]
    return Drawn([summary_table(spec, rows), *notes,
                  *([verdicts] if verdicts is not None else []), *numbers])
