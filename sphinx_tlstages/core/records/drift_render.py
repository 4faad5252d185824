"""The drift report as GitHub Markdown and as plain text.

Markdown for the places a report lands (a job summary, a pull-request comment): every
piece of kernel text, name or parameter goes into a code span (or a fenced block) whose
fence outlasts any backquotes in it, ``|`` escaped inside table cells, prose of the
project's own escaped as CommonMark says; HTML is written only for the folded CUDA
diffs, whose summary line is HTML-escaped once. The whole stays under a byte limit (a job
summary holds 1 MiB): directives that do not fit are counted, not cut in half.
"""

from __future__ import annotations

import html
import re
from urllib.parse import quote

from .drift import KINDS, MAX_BYTES, Directive, Finding, Report

__all__ = ["MAX_BYTES", "code", "markdown", "plain", "text"]
# What CommonMark reads as markup within a line (a text here never starts a line).
_PUNCTUATION = re.compile(r"([\\`*_\[\]<>!&|~#])")


def text(value: str) -> str:
    """Prose as CommonMark reads it literally, written inside a line."""
    return _PUNCTUATION.sub(r"\\\1", value.replace("\n", " "))


def code(value: str, in_table: bool = False) -> str:
    """``value`` as one code span: a fence longer than any run of backquotes in it."""
    value = value.replace("\n", " ")
    longest = max((len(run) for run in re.findall(r"`+", value)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if value.startswith("`") or value.endswith("`") or not value.strip() else ""
    span = f"{fence}{pad}{value}{pad}{fence}"
    return span.replace("|", "\\|") if in_table else span


def _fenced(lines: tuple[str, ...], info: str) -> list[str]:
    longest = max((len(run) for line in lines for run in re.findall(r"`{3,}", line)), default=0)
    fence = "`" * max(3, longest + 1)
    return [f"{fence}{info}", *lines, fence]


def _where(entry: Directive, line: int = 0) -> str:
    place = f"{entry.source}:{line or entry.line}"
    if entry.url:
        return f"[{code(place)}]({quote(entry.url, safe=':/#?=&%~+,;@')})"
    return code(place)


def _heading(report: Report) -> str:
    return f"### tl-pipeline report: {text(report.title())}"


def _changed(entry: Directive, found: list[Finding]) -> list[str]:
    lines = ["| Variant | What changed |", "| --- | --- |"]
    for f in found:
        lines.append(f"| {text(f.variant) or '(directive)'} | {code(f.words, True)} |")
    for f in found:
        if f.detail:
            summary = html.escape(f"The CUDA diff of {entry.name}, {f.variant} "
                                  f"({f.words.removeprefix('CUDA ')})")
            lines += ["", f"<details><summary>{summary}</summary>", "",
                      *_fenced(f.detail, "diff"), "", "</details>"]
    return lines


def _listed(found: list[Finding]) -> list[str]:
    lines = []
    for f in found:
        said = [p for p in (f"line {f.line}" if f.line else "", text(f.variant)) if p]
        lines.append(f"- {', '.join(said) + ': ' if said else ''}{code(f.words)}")
    return lines


def _directive(entry: Directive) -> str:
    lines = [f"#### {code(entry.name)} at {_where(entry)}", ""]
    if entry.versions:
        lines += [f"Recorded with {text(entry.versions.replace(' -> ', ', built with '))}.",
                  ""]
    found = entry.ordered()
    for kind, heading in KINDS.items():
        mine = [f for f in found if f.kind == kind]
        if not mine:
            continue
        if kind != "changed":
            lines += [f"**{text(heading)}**", ""]
        lines += [*(_changed(entry, mine) if kind == "changed" else _listed(mine)), ""]
    return "\n".join(lines) + "\n"


def _accept(report: Report) -> str:
    if report.strict:
        return (f"**Accept it** where the docs are written: {code(report.accept)} after a "
                f"local build, or build with {code('TLSTAGES_SNAPSHOTS=update')}.\n")
    return f"**Accept it** with {code(report.accept)}.\n"


def _snapshots(report: Report) -> str:
    lines = []
    if report.new_snapshots:
        lines.append("**New snapshots** (recorded by this build): "
                     + ", ".join(code(n) for n in report.new_snapshots))
    if report.unused_snapshots:
        lines.append("**Unused snapshots** (no directive has their name; "
                     f"{code('TLSTAGES_SNAPSHOTS=update')} removes them): "
                     + ", ".join(code(n) for n in report.unused_snapshots))
    return "\n\n".join(lines) + "\n" if lines else ""


def markdown(report: Report, limit: int = MAX_BYTES, marker: str = "") -> str:
    """The report as GitHub Markdown, at most ``limit`` bytes (UTF-8); ``marker`` (an
    HTML comment, not shown) goes first."""
    listed = report.listed()
    if not listed and not report.new_snapshots and not report.unused_snapshots:
        # A green build says so in one line.
        return "\n".join([*([marker] if marker else []),
                          f"**tl-pipeline, {text(report.title())}:** "
                          f"{text(report.verdict())}", ""])
    head = [*([marker] if marker else []), _heading(report), "",
            f"**{text(report.verdict())}**", ""]
    tail = [_snapshots(report), _accept(report) if report.failing() else ""]
    used = sum(len(part.encode()) + 1 for part in head + tail) + 200
    body = []
    directives, findings = report.left_out
    for i, entry in enumerate(listed):
        section = _directive(entry)
        size = len(section.encode()) + 1
        if used + size > limit:
            rest = listed[i:]
            directives += len(rest)
            findings += sum(len(d.findings) for d in rest)
            break
        body.append(section)
        used += size
    if directives:
        body.append(f"*... and {directives} more directives with {findings} findings, not "
                    "shown: the report would not fit a job summary.*\n")
    return "\n".join([*head, *(part.rstrip("\n") + "\n" for part in body + tail if part)])


def plain(report: Report) -> str:
    """The report as plain text (for a build log: Read the Docs has no job summary)."""
    lines = [f"tl-pipeline report, {report.title()}: {report.verdict()}"]
    for entry in report.listed():
        lines.append(f"{entry.source}:{entry.line}: {entry.name}"
                     + (f" ({entry.url})" if entry.url else ""))
        if entry.versions:
            lines.append(f"  recorded with {entry.versions.replace(' -> ', ', built with ')}")
        for kind, heading in KINDS.items():
            mine = [f for f in entry.ordered() if f.kind == kind]
            if mine:
                lines.append(f"  {heading}:")
            for f in mine:
                where = f"line {f.line}, " if f.line else ""
                lines.append(f"    {where}{f.variant + ': ' if f.variant else ''}{f.words}")
    if report.new_snapshots:
        lines.append(f"new snapshots: {', '.join(report.new_snapshots)}")
    if report.unused_snapshots:
        lines.append(f"unused snapshots: {', '.join(report.unused_snapshots)}")
    if report.failing():
        lines.append(f"accept it with: {report.accept}" if not report.strict else
                     f"accept it where the docs are written: {report.accept} (after a local "
                     "build) or TLSTAGES_SNAPSHOTS=update")
    return "\n".join(lines) + "\n"
