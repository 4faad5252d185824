"""The "Registers, spills and occupancy" part: what NVIDIA's compiler made of each
variant's CUDA, one column per variant, and its SASS one click away."""

from __future__ import annotations

from typing import Any

from docutils import nodes

from ...core.figures import occupancy as occupancy_figure
from ...core.hardware import sass_lines
from ...core.hardware.resources import FAMILIES, spill_sentence
from ...core.plan.spec import DirectiveSpec, VariantSpec
from ...core.results.result import Result
from .cuda import _capped, _collapsible, literal
from .figure_nodes import figure_node
from .parts import Context, Drawn, Rows, renders
from .tables import Cell, code, number, table

_NO_TOOLKIT = ("This page was built without NVIDIA's compiler, so registers, spills and "
               "occupancy are not shown (pip install sphinx-tlstages[resources]).")
_NOT_NVIDIA = ("{targets}: registers, spills and occupancy come from NVIDIA's compiler; "
               "no compiler for {what} installs from PyPI, so this part has no numbers "
               "for {it}.")


def _occupancy_cell(occupancy: dict[str, Any] | None) -> str:
    if not occupancy:
        return "—"
    blocks = occupancy["blocks_per_sm"]
    return (f"{blocks} block{'' if blocks == 1 else 's'}, {occupancy['warps_per_sm']} warps "
            f"({occupancy['occupancy']:.0%}), limited by {' and '.join(occupancy['limiter'])}")


def _registers(found: dict[str, Any]) -> str:
    budgets = found.get("register_budgets") or {}
    if "alloc" in budgets:
        # setmaxnreg: the launch reserves the report's count for every warp, then the
        # consumer warp groups take this budget and the producers give theirs back.
        return (f"{found['registers']} (setmaxnreg: {budgets['alloc']} per consumer, "
                f"{budgets.get('dealloc', '—')} per producer thread)")
    return str(found["registers"])


def _rows(ok: list[tuple[VariantSpec, dict[str, Any] | None]]) -> list[list[Cell]]:
    def row(label: str, read: Any) -> list[Cell]:
        return [label, *(read(found) if found else "—" for _, found in ok)]

    rows = [
        row("registers per thread", _registers),
        row("spill stores / loads", lambda f: f"{number(f['spill_stores'])} B / "
                                              f"{number(f['spill_loads'])} B"),
        row("stack frame", lambda f: f"{number(f['stack'])} B"),
        row("static shared (ptxas)", lambda f: f"{number(f['static_shared'])} B"),
        row("dynamic shared", lambda f: f"{number(f['dynamic_shared'])} B"),
        row("barriers", lambda f: str(f["barriers"])),
        row("per SM", lambda f: _occupancy_cell(f.get("occupancy"))),
    ]
    families = [name for name in FAMILIES
                if any(found and (found.get("sass") or {}).get(name) for _, found in ok)]
    for name in families:
        rows.append(row(f"SASS {name} (static)",
                        lambda f, n=name: number((f.get("sass") or {}).get(n, 0))))
    if any(found and found.get("sass") for _, found in ok):
        rows.append(row("SASS instructions (static)",
                        lambda f: number((f.get("sass") or {}).get("total", 0))))
    return rows


def _sentences(ok: list[tuple[VariantSpec, dict[str, Any] | None]]) -> list[str]:
    said = []
    for variant, found in ok:
        sentence = spill_sentence(found) if found else None
        if sentence:
            said.append(f"{variant.heading} {sentence}.")
    if not said and ok:
        said.append("No variant spills registers or uses a stack frame.")
    return said


def resources_part(spec: DirectiveSpec, rows: list[tuple[VariantSpec, Result]],
                   max_lines: int, downloads: dict[str, str] | None = None
                   ) -> list[nodes.Node]:
    """The table (class ``tl-resources``), sentences, and the SASS listings (each
    downloadable whole where ``downloads`` has ``<label>:sass``)."""
    cuda = [(v, r) for v, r in rows if v.target.kind == "cuda" and r.get("ok")]
    found: list[nodes.Node] = []
    others = sorted({v.target.label for v, _ in rows if v.target.kind != "cuda"})
    if others:
        hip = any(v.target.kind == "hip" for v, _ in rows)
        found.append(nodes.paragraph(text=_NOT_NVIDIA.format(
            targets=", ".join(others), what="AMD GPUs" if hip else "this target",
            it="them" if len(others) > 1 else "it"), classes=["tl-note"]))
    if not cuda:
        return found
    if any(v.toolkit is None for v, _ in cuda):
        found.append(nodes.paragraph(text=_NO_TOOLKIT, classes=["tl-note"]))
        return found
    shown = [(v, r.get("resources")) for v, r in cuda]
    failed = [(v, r["resources_error"]) for v, r in cuda if r.get("resources_error")]
    for variant, why in failed:
        # The reason says what failed: nvcc, its group's compile, or the part's reading
        # of what nvcc printed (a CUDA of several kernels compiles fine).
        found.append(nodes.paragraph(text=f"{variant.heading}: no resources figures: "
                                          f"{why.splitlines()[0]}", classes=["tl-note"]))
    if not any(f for _, f in shown):
        return found
    drawn = occupancy_figure.occupancy_input(spec.name, [(v.heading, f) for v, f in shown])
    if drawn is not None:  # several variants: their blocks per SM side by side
        found.append(figure_node("occupancy", drawn, [], f"{spec.name}-occupancy",
                                 occupancy_figure.sentence(drawn)))
    headers: list[Cell] = ["", *(v.heading for v, _ in shown)]
    found.append(table(headers, _rows(shown), ["tl-table"],
                       widths=[24, *[20] * len(shown)], key_columns=1))
    versions = sorted({str(r.get("toolkit")) for _, r in cuda if r.get("toolkit")})
    intro = nodes.paragraph(classes=["tl-note"])
    intro += nodes.Text(" ".join(_sentences(shown)) + " Compiled with "
                        f"NVIDIA's nvcc {', '.join(versions) or ''} and TileLang's own flags "
                        "(")
    intro += code("--cubin -O3 -lineinfo -std=c++20")
    listed = any(r.get("sass") for _, r in cuda)
    intro += nodes.Text("); " + ("SASS counts are static (instructions in the code, not "
                                 "executed)" if listed else "no SASS counts: no nvdisasm was "
                                 "found beside nvcc")
                        + "; occupancy follows cuda_occupancy.h with the default carveout.")
    found.append(intro)
    found.extend(lines_part(spec, [(v, r.get("sass_lines")) for v, r in cuda
                                   if r.get("resources")]))
    for variant, result in cuda:
        if result.get("sass"):
            text, hidden = _capped(result["sass"], max_lines)
            body: list[nodes.Node] = []
            uri = (downloads or {}).get(f"{variant.label}:sass")
            if uri:
                link = nodes.reference("", f"download {spec.name}-{variant.label}.sass",
                                       refuri=uri, classes=["tl-download"])
                body.append(nodes.paragraph("", "", link))
            body.append(literal(text, "text"))
            if hidden:
                body.append(nodes.paragraph(text=f"{hidden} more lines not shown.",
                                            classes=["tl-hidden-lines"]))
            found.append(_collapsible(f"{variant.heading}: SASS, "
                                      f"{result['resources']['sass']['total']} instructions",
                                      "tl-sass-item", *body, variant=variant.label))
    return found


@renders("resources")
def _resources(spec: DirectiveSpec, rows: Rows, context: Context) -> Drawn | None:
    if not any(r.get("ok") for _, r in rows):
        return None
    found = resources_part(spec, rows, context.max_lines, context.downloads)
    return Drawn(found) if found else None


# Rows of the by-line table: the lines that differ between variants come first, and a
# page shows at most this many (the rest are counted in a sentence).
MAX_LINE_ROWS = 12
_SHORT = sass_lines.SHORT


def _line_counts(counts: dict[str, int] | None) -> str:
    """``MMA 256, shared 64 (412 in all)``: the counted classes that are not zero."""
    if not counts or not counts.get("total"):
        return "—"
    said = [f"{_SHORT[c]} {number(counts[c])}" for c in sass_lines.CLASSES if counts.get(c)]
    return ", ".join([*said, f"{number(counts['total'])} in all"]) if said \
        else f"{number(counts['total'])} in all"


def _source_line(spec: DirectiveSpec, line: int) -> str:
    lines = spec.variants[0].source.splitlines()
    text = lines[line - 1].strip() if 0 < line <= len(lines) else ""
    return text if len(text) <= 48 else text[:47] + "…"


def _heading(spec: DirectiveSpec, key: str,
             per: list[tuple[VariantSpec, dict[str, Any] | None]]) -> list[nodes.Node]:
    """``line 30`` (numbered as the listing numbers it), its code, and the templates
    its instructions come through."""
    line = int(key)
    cell: list[nodes.Node] = [nodes.Text(f"line {line + (spec.kernel_line or 1) - 1} ")]
    text = _source_line(spec, line)
    if text:
        cell.append(code(text))
    templates = sorted({name for _, f in per if f
                        for name in f.get("templates", {}).get(key) or {}})
    inferred = any(key in (f.get("inferred") or {}) for _, f in per if f)
    if templates:
        cell.append(nodes.Text(f" (through {', '.join(templates)}"
                               f"{'; inferred' if inferred else ''})"))
    elif inferred:
        cell.append(nodes.Text(" (inferred)"))
    return cell


def lines_part(spec: DirectiveSpec, per: list[tuple[VariantSpec, dict[str, Any] | None]]
               ) -> list[nodes.Node]:
    """SASS by kernel line: a table of the lines that matter (those whose counts differ
    between variants first), what the deepest variant gained over the shallowest, and
    where the spills are; nothing where no variant has the line table's counts."""
    if not any(found for _, found in per):
        return []
    keys = sass_lines.differing([found for _, found in per])
    rows: list[list[Cell]] = []
    for key in keys[:MAX_LINE_ROWS]:
        rows.append([_heading(spec, key, per),
                     *(_line_counts((found or {}).get("lines", {}).get(key))
                       if found else "—" for _, found in per)])
    files = sorted({name for _, f in per if f for name in f.get("unattributed_files", {})})
    where = f" (the table names {', '.join(files)})" if files else ""
    rows.append([f"not attributed to a kernel line{where}",
                 *(_line_counts(found["unattributed"]) if found else "—" for _, found in per)])
    shown = table(["SASS by kernel line", *(v.heading for v, _ in per)], rows, ["tl-table"],
                  widths=[32, *[20] * len(per)], key_columns=1)
    shown["classes"].append("tl-sass-lines")
    out: list[nodes.Node] = [shown]
    words = [sentence for sentence in (_gains(spec, per), _spills(spec, per)) if sentence]
    more = len(keys) - MAX_LINE_ROWS
    note = ("Static SASS counts by kernel line: the compiler's line table (-lineinfo, "
            "read with nvdisasm) gives each instruction's CUDA line, and the CUDA "
            "listing's links give that line's kernel line (inferred: through a TileLang "
            "template's region that one tile operation explains); an instruction inlined "
            "from a TileLang header counts at the line that calls it. One on a CUDA line "
            "no kernel line produced is counted as not attributed, never guessed. Lines "
            "whose counts differ between variants come first")
    note += f"; {more} more line{'s' if more != 1 else ''} not shown." if more > 0 else "."
    out.append(nodes.paragraph(text=" ".join([*words, note]), classes=["tl-note"]))
    return out


def _gains(spec: DirectiveSpec, per: list[tuple[VariantSpec, dict[str, Any] | None]]
           ) -> str | None:
    """What the deepest variant of each target and parameters gained over the shallowest,
    by kernel line (the counted classes)."""
    groups: dict[tuple[str, tuple[tuple[str, str], ...]], list[tuple[VariantSpec,
                                                                     dict[str, Any]]]] = {}
    for variant, found in per:
        if found:
            key = (variant.target.label, tuple(sorted(dict(variant.params).items())))
            groups.setdefault(key, []).append((variant, found))
    said = []
    targets = {target for target, _ in groups}
    for (target, _), group in groups.items():
        if len(group) < 2:
            continue
        (low, before), (high, after) = min(group, key=lambda g: g[0].num_stages), \
            max(group, key=lambda g: g[0].num_stages)
        if low.num_stages == high.num_stages:
            continue
        gains = [(line, {c: n for c, n in gain.items() if c != "total"})
                 for line, gain in sass_lines.gained(before, after)]
        gains = [(line, gain) for line, gain in gains if gain]
        first = spec.kernel_line or 1
        where = f" on {target}" if len(targets) > 1 else ""
        span = f"From num_stages={low.num_stages} to num_stages={high.num_stages}{where}"
        if len(group) < len([v for v, _ in per if v.target.label == target]):
            span += f" ({', '.join(f'{k}={v}' for k, v in sorted(dict(low.params).items()))})"
        if not gains:
            said.append(f"{span}, no kernel line gained tensor-core, memory, async or "
                        "sync instructions.")
            continue
        parts = [f"line {line + first - 1} "
                 f"({', '.join(f'+{n} {_SHORT[c]}' for c, n in gain.items())})"
                 for line, gain in gains]
        said.append(f"{span}, these kernel lines gained instructions: "
                    f"{'; '.join(parts)}.")
    return " ".join(said) or None


def _spills(spec: DirectiveSpec, per: list[tuple[VariantSpec, dict[str, Any] | None]]
            ) -> str | None:
    """Where the line table puts each variant's spill loads and stores."""
    said = []
    first = spec.kernel_line or 1
    for variant, found in per:
        if not found:
            continue
        at = [f"line {int(k) + first - 1} ({counts['spill']})"
              for k, counts in found["lines"].items() if counts.get("spill")]
        loose = found["unattributed"].get("spill", 0)
        if at or loose:
            where = "; ".join(at) if at else "no kernel line"
            tail = f", and {loose} on no kernel line" if at and loose else ""
            said.append(f"{variant.heading}: spill loads and stores occur at {where}{tail}, "
                        "as the line table gives them.")
    return " ".join(said) or None
