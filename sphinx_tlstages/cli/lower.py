"""``tlstages lower``: the seed experiment in a terminal, from the same code as the pages.

Lowering goes through the worker pool, the facts through :mod:`.facts`, and the tables
through :mod:`.render`: the docutils nodes a page would get are printed as text.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TextIO

from docutils import nodes
from sphinx.config import Config

from ..core.errors import OptionError, SourceError
from ..core.files import write_atomic
from ..core.hardware.fit import fit_table
from ..core.kernel.source import normalise_source
from ..core.parts import PRINTED
from ..core.plan.spec import KernelOrigin, VariantSpec
from ..core.plan.toolkit import find as find_toolkit
from ..core.planner import Defaults, Kernel, plan
from ..core.records import snapshots
from ..core.results.result import Result, failure
from ..core.results.stamps import tilelang_version
from ..ext.config import strict_environment
from ..ext.listing import ListingError, read_listing
from ..ext.render import Context, render
from ..runner.launch import Job, default_jobs
from ..runner.pool import run_jobs


def _print_table(table: nodes.table, out: TextIO) -> None:
    rows = [[" ".join(entry.astext().split()) for entry in row.findall(nodes.entry)]
            for row in table.findall(nodes.row)]
    widths = [max(len(row[i]) if i < len(row) else 0 for row in rows)
              for i in range(max(map(len, rows)))]
    for index, row in enumerate(rows):
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=False))
              .rstrip(), file=out)
        if index == 0:
            print("  ".join("-" * width for width in widths), file=out)


def print_nodes(root: nodes.Element, out: TextIO) -> None:
    """The rendered directive as text: caption, then each part's title and table."""
    for child in root.children:
        if isinstance(child, nodes.paragraph):
            print(child.astext(), file=out)
        elif isinstance(child, nodes.container):
            title = next(child.findall(nodes.rubric), None)
            print(f"\n{title.astext() if title else ''}", file=out)
            for table in child.findall(nodes.table):
                _print_table(table, out)
            for para in child.findall(nodes.paragraph):
                if "tl-note" in para["classes"]:
                    print(para.astext(), file=out)


_FLAGS = re.compile(r":(params|factory|num-stages|sweep|target|show):")


def _flags(exc: Exception) -> str:
    """The message, naming this command's flags where it names the directive's options
    (``:sweep: ...`` from the planner becomes ``--sweep: ...``)."""
    return _FLAGS.sub(r"--\1", re.sub(r"^:([a-z-]+): ", r"--\1: ", str(exc)))


def lower_file(path: Path, factory: str | None, params: Sequence[str],
               num_stages: Sequence[int] | None, targets: Sequence[str], dump_dir: Path | None,
               as_json: bool, sweep: Sequence[str] = (), out: TextIO = sys.stdout,
               listing: dict[str, str] | None = None,
               show: Sequence[str] | None = None, toolkit: str = "auto") -> int:
    """Lower ``path`` for each variant (num_stages x swept values x targets, as a
    directive would) and print what the compiler did. ``num_stages`` None: 1-4, or the
    depth a kernel sets itself. ``listing``: the directive's listing options
    (``pyobject``, ``lines``), to print that part of the file first. ``show``: the
    parts printed (``resources`` compiles each variant with the compiler ``toolkit``
    selects, as ``tlstages_toolkit``; without one the part says so and the lowering
    stands, but under ``CI`` or ``READTHEDOCS`` a compiler not found makes the exit
    status 1, as it fails a build there; ``none`` turns the part off anywhere)."""
    given = {"params": " ".join(params), "sweep": " ".join(sweep),
             "num-stages": " ".join(map(str, num_stages or ())),
             "target": ";".join(targets), "show": " ".join(show or ())}
    try:
        kernel = Kernel(normalise_source(path.read_text(encoding="utf-8")), path.name,
                        # As for a directive's :file: kernel, its own folder is on the
                        # import path.
                        KernelOrigin(str(path.resolve()), (str(path.resolve().parent),)),
                        path=str(path))
        spec = plan({key: value for key, value in given.items() if value}
                    | ({"factory": factory} if factory else {}), kernel,
                    Defaults(targets=(), show=PRINTED, diff="none", toolkit=toolkit),
                    name=path.stem, docname=str(path), lineno=1, title=path.name,
                    # Lowered as written all the same, as a directive's page is.
                    overridden=lambda key, message: print(
                        f"tlstages lower: warning: --{key}: {_flags(Exception(message))}",
                        file=sys.stderr),
                    # The JSON carries every result whole, pass changes included; the
                    # text output does not show them.
                    record_passes=as_json)
        cut = read_listing(kernel.source, str(path), listing, spec.variants[0].factory,
                           Config()) if listing else None
    except ListingError as exc:
        print(f"tlstages lower: --{exc.option}: {str(exc).split(': ', 1)[1]}",
              file=sys.stderr)
        return 2
    except (OSError, OptionError) as exc:
        print(f"tlstages lower: {_flags(exc)}", file=sys.stderr)
        return 2
    except SourceError as exc:
        where = f"{path}:{exc.line}: " if exc.line else f"{path}: "
        print(f"tlstages lower: {where}{_flags(exc)}", file=sys.stderr)
        return 2
    # No snapshot is written from what it prints: no pass fingerprints (the JSON, which
    # records the pass changes, has them all the same).
    spec = snapshots.fingerprinting(replace(spec, listing=cut), False)
    variants = spec.variants
    compiler_missing = "resources" in spec.show and toolkit != "none" \
        and find_toolkit(toolkit) is None
    if compiler_missing:
        print(f"tlstages lower: {'error: ' if strict_environment() else ''}no NVIDIA "
              "compiler found: resources are not shown (pip install "
              "sphinx-tlstages[resources], or --toolkit PATH-TO-NVCC)", file=sys.stderr)
    # The page's variants, then those the fit part lowers beyond them (each once).
    lowered = list(dict.fromkeys(spec.lowerings))
    by_id = {str(i): variant for i, variant in enumerate(lowered)}
    results: dict[VariantSpec, Result] = {}

    def done(job: Job, result: Result) -> None:
        results[by_id[job.id]] = result
        state = "lowered" if result.get("ok") else f"failed ({result['error']['kind']})"
        print(f"{by_id[job.id].heading}: {state} in {result.get('seconds', 0):.2f} s",
              file=sys.stderr)

    def result_of(variant: VariantSpec) -> Result:
        return results.get(variant) or failure("unavailable", "not lowered", None)

    jobs = [Job(i, v.task(), 300.0) for i, v in by_id.items()]
    run_jobs(jobs, min(default_jobs(), len(jobs)), done)
    rows = [(v, result_of(v)) for v in variants]
    if as_json:
        json.dump({v.id: r for v, r in rows}, out, indent=1, sort_keys=True)
        print(file=out)
    else:
        if cut is not None:
            print(f"Kernel, lines {cut.start}-{cut.end} of {path.name}", file=out)
            for number, text in enumerate(cut.text.splitlines(), start=cut.start):
                print(f"{number:>5}  {text}".rstrip(), file=out)
            print(file=out)
        fit = fit_table(spec.fit, result_of) if spec.fit is not None else None
        print_nodes(render(spec, rows, Context(tilelang_version(), 0, fit=fit)), out)
    if dump_dir is not None:
        _dump(dump_dir, path, rows)
    failed = _failures(path, rows)
    # Under CI a compiler not found is an error, as in a build: the part was asked for.
    return 1 if failed or (compiler_missing and strict_environment()) else 0


def _dump(dump_dir: Path, path: Path, rows: list[tuple[VariantSpec, Result]]) -> None:
    """Each lowered variant's code into ``dump_dir``, and how to compare two."""
    written = []
    for variant, result in rows:
        if result.get("ok"):
            target_path = dump_dir / f"{path.stem}-{variant.label}" \
                f"{variant.target.source_suffix}"
            write_atomic(target_path, result["cuda"])
            written.append(target_path)
    for target_path in written:
        print(f"wrote {target_path}", file=sys.stderr)
    if len(written) > 1:
        print(f"compare two variants with: diff -u {written[0]} {written[1]}",
              file=sys.stderr)


def _failures(path: Path, rows: list[tuple[VariantSpec, Result]]) -> list[VariantSpec]:
    """The variants that failed, each said at its kernel line where there is one."""
    failed = [v for v, r in rows if not r.get("ok")]
    for variant, result in rows:
        if not result.get("ok"):
            # No line: TileLang failed past the kernel's code (in a pass, in codegen).
            line = result["error"].get("line")
            where = f"{path}:{line}" if line else str(path)
            print(f"{where}: {variant.heading}: {result['error']['message']}",
                  file=sys.stderr)
    return failed
