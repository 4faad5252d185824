"""Benchmark numbers on the page: per GPU under the summary (class ``tl-bench``), a chart
(``:show: chart``), the line that says where and how they were measured, and a table.

Latency with its spread, TFLOP/s, speed against the best variant and against the
reference, and a bar that reads at a glance (HTML only: other builders drop raw HTML and
keep the numbers). Numbers measured on another kernel are marked stale or left out;
numbers measured with another TileLang say so beside where they were measured.
"""

from __future__ import annotations

from typing import Any

from docutils import nodes

from ...core.parts import shows
from ...core.plan.spec import DirectiveSpec
from ...core.records.bench_data import benched, provenance
from .figure_nodes import chart_figure
from .tables import Cell, Span, code, table


def _latency(numbers: dict[str, Any]) -> str:
    return f"{numbers['median_ms']:.4f} ms ({numbers['p20_ms']:.4f}–{numbers['p80_ms']:.4f})"


def _bar(fraction: float) -> nodes.raw:
    width = max(1.0, min(100.0, 100 * fraction))
    return nodes.raw("", f'<span class="tl-bar" style="width: {width:.0f}%"></span>',
                     format="html")


def _provenance(spec: DirectiveSpec, data: dict[str, Any],
                version: str | None) -> nodes.paragraph:
    gpu = data["gpu"]
    text = (f"Measured on {gpu['name']} ({gpu.get('sm', '?')} build), "
            f"driver {gpu.get('driver', '?')}, CUDA {gpu.get('cuda', '?')}, "
            f"torch {gpu.get('torch', '?')}, TileLang {gpu.get('tilelang', '?')}, "
            f"on {data.get('date', '?')}")
    para = nodes.paragraph(classes=["tl-bench-caption"])
    para += nodes.strong(text=text)
    if data.get("command"):
        para += nodes.Text(" with ")
        para += code(str(data["command"]))
    if data.get("method"):
        para += nodes.Text(f". {data['method']}.")
    other = provenance(spec, data, version)
    if other is not None:
        para += nodes.Text(f" {other}." if data.get("method") else f". {other}.")
    return para


def bench_table(spec: DirectiveSpec, data: dict[str, Any], entry: dict[str, Any],
                stale: tuple[str, ...], stale_mode: str,
                version: str | None = None) -> list[nodes.Node]:
    """The numbers one GPU measured for this directive (``stale``: the ids of variants
    whose numbers no longer describe the kernel shown, decided by the checks; ``version``:
    this build's TileLang, said beside the one they were measured with when it differs)."""
    fresh: dict[str, dict[str, Any]] = {}
    variants = benched(spec)
    for variant in variants:
        numbers = entry["variants"].get(variant.id)
        if numbers is None or (variant.id in stale and stale_mode == "hide"):
            continue
        fresh[variant.id] = numbers
    reference = entry.get("reference")
    timed = [n["median_ms"] for s, n in fresh.items() if s not in stale]
    best = min(timed) if timed else None
    fastest = min([*timed, reference["median_ms"]] if reference else timed, default=None)
    matrix = not all(v.only_num_stages for v in variants)
    headers: list[Cell] = ["variant" if matrix else "num_stages",
                           "latency (median, 20–80th pct.)", "TFLOP/s", "vs best variant"]
    if reference:
        headers.append("vs reference")
    headers.append("")
    body: list[list[Cell | Span]] = []
    for variant in variants:
        stages = variant.id
        name = variant.heading if matrix else stages
        numbers = fresh.get(stages)
        if numbers is None:
            note = "stale, hidden" if stages in stale else "not measured"
            body.append([name, Span(note, len(headers) - 1)])
            continue
        latency: Cell = _latency(numbers)
        if numbers.get("correct") is False:
            latency = nodes.strong(text=f"wrong result (error {numbers['error']:.2g}); "
                                        + _latency(numbers), classes=["tl-failed"])
        if stages in stale:
            latency = [nodes.emphasis(text="stale: ", classes=["tl-stale"]), nodes.Text(
                _latency(numbers))]
        row: list[Cell | Span] = [name, latency, str(numbers.get("tflops", "—"))]
        row.append(f"{100 * best / numbers['median_ms']:.0f} %" if best else "—")
        if reference:
            row.append(f"{100 * reference['median_ms'] / numbers['median_ms']:.0f} %")
        row.append(_bar(fastest / numbers["median_ms"]) if fastest else "")
        body.append(row)
    if reference:
        row = [[nodes.emphasis(text="reference "), code(reference["expression"])],
               _latency(reference), str(reference.get("tflops", "—")), "—", "100 %",
               _bar(fastest / reference["median_ms"]) if fastest else ""]
        body.append(row)
    widths = [10, 30, 10, 12, *([12] if reference else []), 26]
    result = nodes.container(classes=["tl-bench"])
    drawn = chart_figure(spec, data, entry, stale, stale_mode) if shows(spec, "chart") \
        else None
    if drawn is not None:
        result += drawn
    result += _provenance(spec, data, version)
    result += table(headers, body, ["tl-table", "tl-bench-table"], widths=widths)
    return [result]
