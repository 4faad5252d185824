"""``tlstages lower``: the seed experiment in a terminal, from the same code as the pages.

Lowering goes through the worker pool, the facts through :mod:`.facts`, and the tables
through :mod:`.render`: the docutils nodes a page would get are printed as text.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from docutils import nodes

from . import options
from .errors import OptionError, SourceError
from .facts import failure
from .files import write_atomic
from .kernel_source import (
    check_params,
    choose_factory,
    find_factories,
    normalise_source,
    parse_kernel,
)
from .pool import Job, default_jobs, run_jobs
from .render import Context, render
from .spec import DirectiveSpec, VariantSpec, canonical_params, tilelang_version
from .targets import parse_target


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


def lower_file(path: Path, factory: str | None, params: Sequence[str],
               num_stages: Sequence[int], target_text: str, dump_dir: Path | None,
               as_json: bool, out: TextIO = sys.stdout) -> int:
    """Lower ``path`` for each num_stages value and print what the compiler did."""
    try:
        source = normalise_source(path.read_text(encoding="utf-8"))
        chosen = choose_factory(find_factories(parse_kernel(source, path.name)), factory)
        values = options.parse_params(" ".join(params))
        check_params(chosen, values)
        stages = options.parse_num_stages(" ".join(str(n) for n in num_stages))
        target = parse_target(target_text)
    except (OSError, OptionError) as exc:
        print(f"tlstages lower: {exc}", file=sys.stderr)
        return 2
    except SourceError as exc:
        where = f"{path}:{exc.line}: " if exc.line else f"{path}: "
        print(f"tlstages lower: {where}{exc}", file=sys.stderr)
        return 2
    variants = tuple(VariantSpec(source, path.name, chosen.name, canonical_params(values), n,
                                 target) for n in stages)
    spec = DirectiveSpec(name=path.stem, docname=str(path), lineno=1, kernel_line=None,
                         kernel_path=str(path), title=path.name, targets=(target,),
                         variants=variants, show=("annotations", "shared", "sync"),
                         diff="none")
    results: dict[int, dict[str, Any]] = {}

    def done(job: Job, result: dict[str, Any]) -> None:
        results[int(job.id)] = result
        state = "lowered" if result.get("ok") else f"failed ({result['error']['kind']})"
        print(f"num_stages={job.id}: {state} in {result.get('seconds', 0):.2f} s",
              file=sys.stderr)

    jobs = [Job(str(v.num_stages), v.payload(), 300.0) for v in variants]
    run_jobs(jobs, min(default_jobs(), len(jobs)), done)
    rows = [(v, results.get(v.num_stages) or failure("unavailable", "not lowered", None))
            for v in variants]
    if as_json:
        json.dump({str(v.num_stages): r for v, r in rows}, out, indent=1, sort_keys=True)
        print(file=out)
    else:
        print_nodes(render(spec, rows, Context(tilelang_version(), 0)), out)
    if dump_dir is not None:
        written = []
        for variant, result in rows:
            if result.get("ok"):
                target_path = dump_dir / f"{path.stem}-{variant.label}.cu"
                write_atomic(target_path, result["cuda"])
                written.append(target_path)
        for target_path in written:
            print(f"wrote {target_path}", file=sys.stderr)
        if len(written) > 1:
            print(f"compare two variants with: diff -u {written[0]} {written[1]}",
                  file=sys.stderr)
    failed = [v.num_stages for v, r in rows if not r.get("ok")]
    for variant, result in rows:
        if not result.get("ok"):
            line = result["error"].get("line")
            print(f"{path}:{line or 1}: num_stages={variant.num_stages}: "
                  f"{result['error']['message']}", file=sys.stderr)
    return 1 if failed else 0
