"""Hardware records: what ``tlstages hardware`` observed on a GPU under compute-sanitizer,
and what the docs make of it beside the hazard check's verdict.

One JSON file per GPU in ``tlstages_hardware_dir``, laid out as a bench file (``gpu``,
``command``, ``date``, ``method``, ``directives`` -> name -> ``variants`` -> variant id).
Each variant's record carries the fingerprints bench numbers carry (the kernel's inputs;
the code as the page shows it, for the variant's own target, with and without TileLang's
template headers), so a record of other code is stale, said on the page and in the log,
never a failure: like benchmark numbers, a record is not a snapshot fact, and a CPU-only
build renders it without the GPU.

A record holds each tool's counts (racecheck's hazards, synccheck's errors) for the
launches it made, or why the variant was not run. :func:`judge` sets them beside the
static verdict. A race the tool observed where the check said "none" or "not checked" is
the disagreement that matters (the build warns); a finding the tool did not observe is
said as "not observed in N launches", never as its absence: the tool sees the accesses of
the blocks and launches it ran, and an asynchronous copy's completion only as the hardware
timed it there.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..plan.spec import DirectiveSpec, VariantSpec
from ..results.result import Hazards, Result
from .bench_data import (
    BenchFileError,
    BenchSet,
    cuda_fingerprint,
    entries,
    fingerprint,
    headers_changed,
    load_all,
)

HARDWARE_SCHEMA = 1
TOOL_NAMES = ("racecheck", "synccheck")

# (hardware file, its entry for one directive, ids of the variants whose record is stale)
Attached = tuple[dict[str, Any], dict[str, Any], tuple[str, ...]]


def _check_tool(entry: object, where: str) -> None:
    if not isinstance(entry, dict) or not isinstance(entry.get("ran"), bool):
        raise BenchFileError(f"{where}: needs 'ran'")
    if entry["ran"]:
        counts = ("hazards", "errors", "warnings") if where.endswith("racecheck") \
            else ("errors",)
        if not all(isinstance(entry.get(k), int) and entry[k] >= 0 for k in counts):
            raise BenchFileError(f"{where}: needs the counts {', '.join(counts)}")
    elif not isinstance(entry.get("why"), str):
        raise BenchFileError(f"{where}: a tool that did not run needs 'why'")


def validate(data: object, name: str) -> dict[str, Any]:
    """``data`` if it is a hardware record of this schema; raises ``BenchFileError``."""
    for directive, _, variant, record in entries(data, name, "hardware record",
                                                 HARDWARE_SCHEMA, kind="hardware"):
        where = f"{name}: {directive} {variant}"
        if not isinstance(record, dict) or not isinstance(record.get("fingerprint"), str):
            raise BenchFileError(f"{where}: no fingerprint")
        if "not_run" in record:
            if not isinstance(record["not_run"], str):
                raise BenchFileError(f"{where}: 'not_run' must say why")
            continue
        for tool in TOOL_NAMES:
            _check_tool(record.get(tool), f"{where}: {tool}")
    assert isinstance(data, dict)  # as entries() checked
    return data


def load_records(folder: Path, chosen: list[str] | None) -> BenchSet:
    """Every hardware record of ``folder`` (``chosen``: file stems or GPU names, in order)."""
    return load_all(folder, chosen, validate)


def is_stale(variant: VariantSpec, record: dict[str, Any], result: Result | None) -> bool:
    """Whether ``record`` no longer describes the variant shown: its inputs changed, or
    the code (as the page shows it, this build's lowering ``result``) did. TileLang's
    template headers are provenance (:func:`~.bench_data.headers_changed`)."""
    if record["fingerprint"] != fingerprint(variant):
        return True
    if result is not None and result.get("ok") and record.get("cuda"):
        return bool(record["cuda"] != cuda_fingerprint(result))
    return False


def attach(spec: DirectiveSpec, files: BenchSet,
           result_of: Callable[[VariantSpec], Result]) -> list[Attached]:
    """Each GPU's records for ``spec``, with the ids of those that went stale."""
    attached: list[Attached] = []
    for data, entry in files.for_directive(spec.name):
        stale = tuple(v.id for v in spec.variants
                      if v.id in entry["variants"]
                      and is_stale(v, entry["variants"][v.id], result_of(v)))
        attached.append((data, entry, stale))
    return attached


def other_headers(spec: DirectiveSpec, entry: dict[str, Any],
                  result_of: Callable[[VariantSpec], Result]) -> list[VariantSpec]:
    """The variants run with other TileLang template headers than this build's, their
    code the same."""
    return [v for v in spec.variants if v.id in entry["variants"]
            and headers_changed(entry["variants"][v.id], result_of(v))]


# ----------------------------------------------------------------------------- judging


@dataclass(frozen=True)
class Judgement:
    """A record beside the static verdict: ``kind`` (``confirmed``, ``observed`` (the
    check did not report it), ``not observed`` (the check did), ``none observed``,
    ``incomplete``, ``not run``), what the page says, and whether the build warns."""

    kind: str
    words: str
    warns: bool = False


def _n(value: int) -> str:
    return f"{value:,}"


def counts_words(record: dict[str, Any]) -> str:
    """``racecheck: 32 race reports of 36,864 hazards (32 errors, 0 warnings); synccheck: 0
    errors``: each report is a pair of instructions that race, standing for the hazards
    (bytes and accesses) in brackets."""
    race, sync = record["racecheck"], record["synccheck"]
    said = []
    if race.get("ran"):
        reports = race["hazards"]
        stands = f" of {_n(race['aggregated'])} hazards" if race.get("aggregated") else ""
        kinds = f"; {', '.join(race['kinds'])}" if race.get("kinds") else ""
        said.append(f"racecheck: {_n(reports)} race report{'' if reports == 1 else 's'}"
                    f"{stands} ({_n(race['errors'])} errors, {_n(race['warnings'])} "
                    f"warnings{kinds})")
    if sync.get("ran"):
        said.append(f"synccheck: {_n(sync['errors'])} error{'' if sync['errors'] == 1 else 's'}")
    return "; ".join(said)


def launches_words(record: dict[str, Any]) -> str:
    """``2 launches of the first and the last block``: what the tools watched."""
    inputs = record.get("inputs", {})
    launches = int(inputs.get("launches", 1))
    blocks = "every block" if inputs.get("whole_grid") else inputs.get("blocks_words",
                                                                     "the blocks kept")
    sizes = inputs.get("sizes") or {}
    with_sizes = f", with {', '.join(f'{k} = {v}' for k, v in sizes.items())}" if sizes else ""
    return f"{launches} launch{'' if launches == 1 else 'es'} of {blocks}{with_sizes}"


def observed(record: dict[str, Any]) -> bool | None:
    """True: a tool reported a hazard or an error; False: both ran and reported none;
    None: not run, or a tool did not get through its launches."""
    if "not_run" in record:
        return None
    race, sync = record["racecheck"], record["synccheck"]
    if (race.get("ran") and race["hazards"] > 0) or (sync.get("ran") and sync["errors"] > 0):
        return True
    return False if race.get("ran") and sync.get("ran") else None


def judge(record: dict[str, Any], static: Hazards | None) -> Judgement:
    """The record beside this build's static verdict (``static``: the result's
    ``hazards``; None where the page has none)."""
    verdict = static["verdict"] if static else None
    checked = f"the hazard check said {static['text']!r}" if static \
        else "the page has no static verdict"
    if "not_run" in record:
        return Judgement("not run", f"not run: {record['not_run']}")
    seen = observed(record)
    launches = launches_words(record)
    if seen is None:
        why = "; ".join(f"{tool} {record[tool]['why']}" for tool in TOOL_NAMES
                        if not record[tool].get("ran"))
        return Judgement("incomplete", f"not checked on the GPU: {why}")
    counts = counts_words(record)
    if seen and verdict == "hazard":
        return Judgement("confirmed", f"observed, as the hazard check found, in {launches}: "
                                      f"{counts}")
    if seen:
        return Judgement("observed", f"observed on hardware in {launches}: {counts}; "
                                     f"{checked}", warns=True)
    if verdict == "hazard":
        return Judgement("not observed", f"not observed in {launches} ({counts}); not "
                                         "observed is not absent: the finding stands")
    return Judgement("none observed", f"none observed in {launches} ({counts})")
