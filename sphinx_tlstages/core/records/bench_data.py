"""Benchmark files: what ``tlstages bench`` writes on a GPU machine and the docs read.

One JSON file per GPU in ``tlstages_bench_dir``. Each variant's numbers carry the
fingerprint of what was timed (kernel source, factory, params, num_stages) and of the
code that ran (the normalised code for the GPU's own arch and the TileLang templates it
includes), so the docs can tell numbers that no longer describe the kernel on the page,
and keep them through a TileLang upgrade that changed nothing that runs: a TileLang
version other than the one measured with is provenance, said on the page and in the log.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..plan.spec import DirectiveSpec, VariantSpec
from ..results.cuda import visible_cuda
from ..results.result import Result

BENCH_SCHEMA = 1
MAX_BENCH_BYTES = 8 << 20


def _digest(value: object) -> str:
    blob = json.dumps(value, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


def fingerprint(variant: VariantSpec) -> str:
    """What was timed, as inputs: kernel source, factory, params, num_stages."""
    return _digest({"source": variant.source, "factory": variant.factory,
                    "params": sorted(list(p) for p in variant.params),
                    "num_stages": variant.num_stages})


def legacy_fingerprint(variant: VariantSpec, tilelang_version: str | None) -> str:
    """The fingerprint of files written before code fingerprints: the inputs and the
    TileLang version (any upgrade made their numbers stale)."""
    return _digest({"source": variant.source, "factory": variant.factory,
                    "params": sorted(list(p) for p in variant.params),
                    "num_stages": variant.num_stages, "tilelang": tilelang_version})


def code_fingerprint(result: Result) -> str | None:
    """What runs on the GPU: the normalised code as a reader sees it (TileLang's own
    ``#line`` numbers masked) and the TileLang template headers it includes, whose
    ``tl::mma_sync`` and friends can change while the code's text does not."""
    if not result.get("ok"):
        return None
    return _digest({"cuda": visible_cuda(result["cuda"].splitlines()),
                    "templates": result.get("templates")})


def cuda_fingerprint(result: Result) -> str | None:
    """The code as a reader sees it, without the template headers: what a page shows."""
    if not result.get("ok"):
        return None
    return _digest({"cuda": visible_cuda(result["cuda"].splitlines())})


def is_stale(variant: VariantSpec, numbers: dict[str, Any], measured_with: str | None,
             result: Result | None) -> bool:
    """Whether ``numbers`` no longer describe the kernel shown: its inputs changed, or the
    code that ran did, as the page shows it. ``result`` is this build's lowering of the
    variant for the arch the numbers were measured on, when the page has one; without it
    (or for a file written before code fingerprints) only the inputs can be compared. A
    TileLang version other than ``measured_with``, and TileLang's template headers, which
    no page shows, are provenance (:func:`provenance`, :func:`headers_changed`), never
    staleness alone. (Files written before the code's own fingerprint compare the code
    with its headers.)"""
    if "code" not in numbers:
        return bool(numbers["fingerprint"] != legacy_fingerprint(variant, measured_with))
    if numbers["fingerprint"] != fingerprint(variant):
        return True
    if result is not None and result.get("ok"):
        if "cuda" in numbers:
            return bool(numbers["cuda"] != cuda_fingerprint(result))
        return bool(numbers["code"] != code_fingerprint(result))
    return False


def headers_changed(numbers: dict[str, Any], result: Result | None) -> bool:
    """The same code was timed, but with other TileLang template headers than this
    build's (provenance: said, not failed)."""
    return bool(result is not None and result.get("ok") and "cuda" in numbers
                and numbers["cuda"] == cuda_fingerprint(result)
                and numbers.get("code") != code_fingerprint(result))


def provenance(spec: DirectiveSpec, data: dict[str, Any],
               tilelang_version: str | None) -> str | None:
    """What a reader is told when ``data`` (one GPU's bench file) was measured with another
    TileLang than this build's, and how far its numbers were checked; None when the same."""
    measured = data["gpu"].get("tilelang")
    if measured is None or tilelang_version is None or measured == tilelang_version:
        return None
    arch = data["gpu"].get("sm")
    if any(v.target.arch == arch for v in benched(spec)):
        how = (f"the {arch} code this build lowered is compared with the code that was "
               "timed (TileLang's template headers it includes are said where they differ, "
               "not compared)")
    else:
        how = (f"this page does not lower for {arch}, so only the kernel's inputs "
               "(source, parameters, num_stages) are compared with those timed")
    return (f"This build uses TileLang {tilelang_version}, the numbers were measured with "
            f"TileLang {measured}: {how}")


def benched(spec: DirectiveSpec) -> list[VariantSpec]:
    """The variants a GPU times: on a GPU every variant compiles for its own arch, so of a
    directive with several targets only the first target's are timed."""
    return [v for v in spec.variants if v.target == spec.target]


def gpu_slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "gpu"


class BenchFileError(ValueError):
    """A bench file that is not one: unreadable, too large or of the wrong shape."""


_TIMING = ("median_ms", "p20_ms", "p80_ms")


def _check_timing(entry: object, where: str) -> None:
    if not isinstance(entry, dict) or not all(
            isinstance(entry.get(k), (int, float)) and entry[k] > 0 for k in _TIMING):
        raise BenchFileError(f"{where}: needs positive {', '.join(_TIMING)}")
    tflops = entry.get("tflops")
    if tflops is not None and not isinstance(tflops, (int, float)):
        raise BenchFileError(f"{where}: tflops must be a number")


def entries(data: object, name: str, what: str, schema: int, kind: str | None = None
            ) -> Iterator[tuple[str, dict[str, Any], str, Any]]:
    """The layout every GPU record shares (bench numbers, hardware records, timelines):
    ``schema`` (and ``kind``), the GPU by name, each directive's ``variants``; each
    directive's entry, each variant's id and what is recorded for it, for the caller to
    check (``what``: the record's kind, in the error). Raises :class:`BenchFileError`."""
    if not isinstance(data, dict) or data.get("schema") != schema \
            or (kind is not None and data.get("kind") != kind):
        raise BenchFileError(f"{name}: not a tl-pipeline {what} of schema {schema}")
    gpu = data.get("gpu")
    if not isinstance(gpu, dict) or not isinstance(gpu.get("name"), str):
        raise BenchFileError(f"{name}: 'gpu' must name the GPU")
    directives = data.get("directives")
    if not isinstance(directives, dict):
        raise BenchFileError(f"{name}: 'directives' must be an object")
    for directive, entry in directives.items():
        variants = entry.get("variants") if isinstance(entry, dict) else None
        if not isinstance(variants, dict):
            raise BenchFileError(f"{name}: {directive}: 'variants' must be an object")
        for variant, recorded in variants.items():
            yield directive, entry, variant, recorded


def validate(data: object, name: str) -> dict[str, Any]:
    """``data`` if it is a bench file of this schema; raises :class:`BenchFileError`."""
    for directive, _, stages, numbers in entries(data, name, "bench file", BENCH_SCHEMA):
        _check_timing(numbers, f"{name}: {directive} num_stages={stages}")
        if not isinstance(numbers.get("fingerprint"), str):
            raise BenchFileError(f"{name}: {directive} num_stages={stages}: no fingerprint")
    assert isinstance(data, dict)  # as entries() checked
    for directive, entry in data["directives"].items():
        if entry.get("reference") is not None:
            _check_timing(entry["reference"], f"{name}: {directive} reference")
    return data


Validator = Callable[[object, str], dict[str, Any]]


def load(path: Path, check: Validator | None = None) -> dict[str, Any]:
    """A bench file (or, with ``check``, another record of the same layout: a hardware
    record) read and validated."""
    try:
        if path.stat().st_size > MAX_BENCH_BYTES:
            raise BenchFileError(f"{path.name}: larger than {MAX_BENCH_BYTES >> 20} MiB")
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BenchFileError(f"{path.name}: cannot be read as JSON: {exc}") from None
    return (check or validate)(data, path.name)


@dataclass
class BenchSet:
    """The bench files of a project, in the order the pages show them."""

    files: list[dict[str, Any]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def for_directive(self, name: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        """(file, entry) for each GPU that measured directive ``name``."""
        return [(f, f["directives"][name]) for f in self.files if name in f["directives"]]


def load_all(folder: Path, chosen: list[str] | None,
             check: Validator | None = None) -> BenchSet:
    """Every bench file of ``folder``; ``chosen`` (file stems or GPU names) picks and orders
    (``check``: as :func:`load`)."""
    found = BenchSet()
    if not folder.is_dir():
        return found
    by_key: dict[str, dict[str, Any]] = {}
    for path in sorted(folder.glob("*.json")):
        try:
            data = load(path, check)
        except BenchFileError as exc:
            found.errors.append(str(exc))
            continue
        by_key[path.stem] = data
        by_key.setdefault(data["gpu"]["name"], data)
    if chosen is None:
        found.files = [by_key[p.stem] for p in sorted(folder.glob("*.json")) if p.stem in by_key]
    else:
        found.files = [by_key[key] for key in chosen if key in by_key]
    return found


# (bench file, its entry for one directive, ids of the variants whose numbers are stale)
Attached = tuple[dict[str, Any], dict[str, Any], tuple[str, ...]]


def _timed(spec: DirectiveSpec, data: dict[str, Any], entry: dict[str, Any],
           result_of: Callable[[VariantSpec], Result]
           ) -> Iterator[tuple[VariantSpec, dict[str, Any], Result | None]]:
    """Each variant of ``spec`` that ``entry`` (one GPU's numbers) has numbers for, with
    this build's lowering of it when the page lowered for the arch that was timed."""
    for variant in benched(spec):
        numbers = entry["variants"].get(variant.id)
        if numbers is not None:
            same_arch = variant.target.arch == data["gpu"].get("sm")
            yield variant, numbers, result_of(variant) if same_arch else None


def attach(spec: DirectiveSpec, files: BenchSet,
           result_of: Callable[[VariantSpec], Result]) -> list[Attached]:
    """Each GPU's numbers for ``spec``, with the ids of those that went stale."""
    attached: list[Attached] = []
    for data, entry in files.for_directive(spec.name):
        measured = data["gpu"].get("tilelang")
        stale = tuple(v.id for v, numbers, result in _timed(spec, data, entry, result_of)
                      if is_stale(v, numbers, measured, result))
        attached.append((data, entry, stale))
    return attached


def other_headers(spec: DirectiveSpec, data: dict[str, Any], entry: dict[str, Any],
                  result_of: Callable[[VariantSpec], Result]) -> list[VariantSpec]:
    """The variants whose numbers were timed with other TileLang template headers than
    this build's, their code the same (:func:`headers_changed`)."""
    return [v for v, numbers, result in _timed(spec, data, entry, result_of)
            if headers_changed(numbers, result)]
