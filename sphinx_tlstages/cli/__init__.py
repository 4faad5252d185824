"""The ``tlstages`` command (also ``python -m sphinx_tlstages``).

``tlstages snapshots accept [SRCDIR]`` accepts the pending results a failed check left
beside the goldens; ``tlstages snapshots status [SRCDIR]`` lists every snapshot with the
shown facts it lacks, and pending, missing, unused and held ones; ``tlstages bench SRCDIR``
times the book's kernels on this machine's GPU;
``tlstages hardware SRCDIR`` checks them there under compute-sanitizer;
``tlstages timeline SRCDIR`` records where their warps wait there;
``tlstages lower KERNEL.py`` prints what the compiler did to one kernel file;
``tlstages report [BUILDDIR]`` prints the last build's drift report, ``tlstages
snapshots diff SRCDIR`` the same from the pending snapshots;
``tlstages explain NAME`` says why a directive's variants were lowered again;
``tlstages workers status|stop`` shows or ends the lowering workers kept between builds;
``tlstages cache export|import FILE`` moves the lowering cache as one archive, ``tlstages
cache status`` says what the local and the remote cache hold; ``tlstages lower-book
SRCDIR --shard I/N`` lowers one shard of a book into the caches, for a CI matrix;
``tlstages upgrade-check SRCDIR --python PATH`` rehearses a TileLang upgrade on a book.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..core.parts import PRINTED
from ..version import __version__

FORMATS = ("markdown", "json", "text")
# argparse's type for a command's subparsers is private: each command's adder takes it,
# and the help formatter the whole line shares.
Commands = Any
Formatter = Any


def build_parser() -> argparse.ArgumentParser:
    """The whole command line (the reference page prints its help)."""
    # A fixed width: the help text is printed into the book and must not depend on the
    # terminal that built it.
    fmt = functools.partial(argparse.HelpFormatter, width=88)
    parser = argparse.ArgumentParser(prog="tlstages", description=__doc__.split("\n\n")[0],
                                     formatter_class=fmt)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    _add_snapshots(commands, fmt)
    _add_bench(commands, fmt)
    _add_hardware(commands, fmt)
    _add_timeline(commands, fmt)
    _add_lower(commands, fmt)
    _add_report(commands, fmt)
    _add_explain(commands, fmt)
    _add_workers(commands, fmt)
    _add_cache(commands, fmt)
    _add_lower_book(commands, fmt)
    _add_upgrade_check(commands, fmt)
    return parser


def _add_snapshots(commands: Commands, fmt: Formatter) -> None:
    """``tlstages snapshots``."""
    snap = commands.add_parser("snapshots", formatter_class=fmt,
                               help="golden snapshots of a book")
    snap_commands = snap.add_subparsers(dest="action", required=True)
    acc = snap_commands.add_parser("accept", formatter_class=fmt,
                                   help="accept pending results (not for a directive with "
                                        "an option in error, or that cannot be read)")
    acc.add_argument("srcdir", nargs="?", default=".", type=Path)
    acc.add_argument("--name", action="append", default=[], help="only this directive")
    stat = snap_commands.add_parser("status", formatter_class=fmt,
                                    help="list every snapshot, the shown facts it lacks, "
                                         "pending, missing, unused, held (its directive "
                                         "has an option in error, or cannot be read)")
    stat.add_argument("srcdir", nargs="?", default=".", type=Path)
    pend = snap_commands.add_parser("diff", formatter_class=fmt,
                                    help="the drift report of the pending snapshots, "
                                         "without building")
    pend.add_argument("srcdir", nargs="?", default=".", type=Path)
    pend.add_argument("--format", choices=FORMATS, default="markdown")


def _add_bench(commands: Commands, fmt: Formatter) -> None:
    """``tlstages bench``."""
    bench = commands.add_parser("bench", formatter_class=fmt,
                                help="time the book's kernels on this GPU")
    bench.add_argument("srcdir", type=Path)
    bench.add_argument("--name", action="append", default=[],
                       help="only this directive (default: those with :flops: or :reference:)")
    bench.add_argument("--warmup", type=int, default=25)
    bench.add_argument("--reps", type=int, default=100)
    bench.add_argument("--out", type=Path, help="folder (default: tlstages_bench_dir)")
    bench.add_argument("--hazards", action="store_true",
                       help="then check the directives with :hardware: under "
                            "compute-sanitizer, as tlstages hardware does")


def _add_hardware(commands: Commands, fmt: Formatter) -> None:
    """``tlstages hardware``."""
    hard = commands.add_parser(
        "hardware", formatter_class=fmt,
        help="check the book's kernels on this GPU under compute-sanitizer (racecheck, "
             "synccheck)")
    hard.add_argument("srcdir", type=Path)
    hard.add_argument("--name", action="append", default=[],
                      help="only this directive (default: those with :hardware:)")
    hard.add_argument("--out", type=Path, help="folder (default: tlstages_hardware_dir)")
    _hardware_options(hard)


def _add_timeline(commands: Commands, fmt: Formatter) -> None:
    """``tlstages timeline``."""
    timeline = commands.add_parser(
        "timeline", formatter_class=fmt,
        help="record, on this machine's GPU, the measured timeline of each variant a "
             "directive's :timeline: asks for")
    timeline.add_argument("srcdir", type=Path)
    timeline.add_argument("--name", action="append", default=[],
                          help="only this directive (repeatable)")
    timeline.add_argument("--blocks", type=int, default=2,
                          help="blocks whose warps are recorded, the first ones")
    timeline.add_argument("--capacity", type=int, default=4096,
                          help="events kept per warp")
    timeline.add_argument("--warmup", type=int, default=10)
    timeline.add_argument("--reps", type=int, default=50)
    timeline.add_argument("--out", type=Path, help="folder (default: tlstages_timeline_dir)")


def _add_lower(commands: Commands, fmt: Formatter) -> None:
    """``tlstages lower``."""
    lower = commands.add_parser("lower", formatter_class=fmt,
                                help="lower one kernel file and print the facts")
    lower.add_argument("kernel", type=Path, help="a .py file defining the kernel factory")
    lower.add_argument("--factory", help="which function, when the file defines several")
    lower.add_argument("--params", nargs="*", default=[], metavar="K=V",
                       help="keyword arguments, as Python literals")
    lower.add_argument("--num-stages", nargs="+", type=int,
                       help="the values to lower (default 1 2 3 4; a kernel that sets its "
                            "depth itself lowers as written)")
    lower.add_argument("--sweep", nargs="*", default=[], metavar="K=V1,V2",
                       help="factory parameters swept besides num_stages, as :sweep:")
    lower.add_argument("--target", nargs="+", default=["sm_80"],
                       help="one or more targets (each lowers every variant)")
    lower.add_argument("--dump-dir", type=Path, help="write each variant's CUDA here")
    lower.add_argument("--show", nargs="+", metavar="PART",
                       help=f"the parts to print (default: {' '.join(PRINTED)}); "
                            "resources compiles each variant with NVIDIA's compiler; fit "
                            "lowers each depth for the target families the GPUs people "
                            "have need and prints which depth fits which GPU")
    lower.add_argument("--toolkit", default="auto", metavar="auto|none|NVCC",
                       help="NVIDIA's compiler for --show resources, as tlstages_toolkit "
                            "(auto: the pinned release, else an nvcc on PATH or under "
                            "CUDA_HOME; none: no numbers)")
    lower.add_argument("--json", action="store_true", help="print the results as JSON")
    lower.add_argument("--pyobject", nargs="?", const="", metavar="NAME",
                       help="print this function or class of the file first, numbered as "
                            "in the file (no NAME: the factory), as :pyobject:")
    lower.add_argument("--lines", metavar="SPEC",
                       help="print these lines of the file (or of --pyobject's) first, as "
                            ":lines:")


def _add_report(commands: Commands, fmt: Formatter) -> None:
    """``tlstages report``."""
    said = commands.add_parser(
        "report", formatter_class=fmt,
        help="the drift report of the last build: what changed in the compiler's terms")
    said.add_argument("places", nargs="*", type=Path,
                      help="build (or doctree) folders to look in (default: _build here "
                           "and in every folder beside that has a conf.py)")
    said.add_argument("--format", choices=FORMATS, default="markdown")
    said.add_argument("--pass", dest="pass_srcdir", type=Path, metavar="SRCDIR",
                      help="then, for each drift that names its first changed pass, that "
                           "pass's IR diff (the variant lowered again from the book at "
                           "SRCDIR; the recorded side from the local cache, where it is)")


def _add_explain(commands: Commands, fmt: Formatter) -> None:
    """``tlstages explain``."""
    why = commands.add_parser(
        "explain", formatter_class=fmt,
        help="why a directive's variants were lowered again instead of taken from the cache")
    why.add_argument("name", help="the directive's :name:")
    why.add_argument("places", nargs="*", type=Path,
                     help="build (or doctree) folders to look in (default: _build here "
                          "and in every folder beside that has a conf.py)")


def _add_workers(commands: Commands, fmt: Formatter) -> None:
    """``tlstages workers``."""
    kept = commands.add_parser(
        "workers", formatter_class=fmt,
        help="the lowering workers kept between builds (tlstages_keep_workers)")
    kept.add_argument("action", choices=("status", "stop"))
    kept.add_argument("keys", nargs="*", help="only the servers whose key starts so")


def _add_cache(commands: Commands, fmt: Formatter) -> None:
    """``tlstages cache``."""
    store = commands.add_parser(
        "cache", formatter_class=fmt,
        help="the lowering cache: one archive of it, or what it holds here and remotely")
    store.add_argument("action", choices=("export", "import", "status"))
    store.add_argument("file", nargs="?", type=Path, help="the archive (export, import)")
    store.add_argument("--cache-dir", type=Path,
                       help="the local cache (default: TLSTAGES_CACHE_DIR)")
    store.add_argument("--url", help="the remote cache (default: TLSTAGES_CACHE_URL)")


def _add_lower_book(commands: Commands, fmt: Formatter) -> None:
    """``tlstages lower-book``."""
    book = commands.add_parser(
        "lower-book", formatter_class=fmt,
        help="lower one shard of a book's variants into the caches (a CI matrix's job); "
             "exit 0 when the whole shard is stored")
    book.add_argument("srcdir", type=Path, help="the book's folder (with conf.py)")
    book.add_argument("--shard", default="1/1", metavar="I/N",
                      help="which shard of how many (default 1/1: the whole book); the "
                           "split is the same in every job, balanced by estimated cost")
    book.add_argument("--cache-dir", type=Path, metavar="DIR",
                      help="the local cache (default: TLSTAGES_CACHE_DIR, else "
                           "tlstages_cache_dir; needed where the shared cache is not "
                           "written)")
    book.add_argument("-v", "--verbose", action="store_true",
                      help="the build's log: each variant as it is taken or lowered")


def _add_upgrade_check(commands: Commands, fmt: Formatter) -> None:
    """``tlstages upgrade-check``."""
    rehearse = commands.add_parser(
        "upgrade-check", formatter_class=fmt,
        help="rehearse a TileLang upgrade: lower the book with another environment's "
             "TileLang beside this one and say what would change on each page; exit 1 "
             "when something would")
    rehearse.add_argument("srcdir", type=Path, help="the book's folder (with conf.py)")
    rehearse.add_argument("--python", metavar="PATH",
                          help="the other environment's interpreter (with TileLang; this "
                               "package is put on its PYTHONPATH)")
    rehearse.add_argument("--tilelang", metavar="SPEC",
                          help="make that environment from a version spec (0.1.16, "
                               "tilelang>=0.1.16) in a cache folder, torch CPU first")
    rehearse.add_argument("--format", choices=("markdown", "json"), default="markdown")
    rehearse.add_argument("--json", type=Path, metavar="FILE", help="also write the JSON")
    rehearse.add_argument("--markdown", type=Path, metavar="FILE",
                          help="also write the Markdown")


def _hardware_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--parallel", type=int, default=min(8, os.cpu_count() or 1),
                        help="variants prepared, and tools run, at once (default: up to 8)")
    parser.add_argument("--timeout", type=float, default=120,
                        help="seconds one tool may take on one variant (default 120)")
    parser.add_argument("--edit", action="append", default=[], metavar="delete-wait:N",
                        help="for testing the check itself: delete the N-th cp_async_wait "
                             "of every variant's code before it runs (the record says so)")
    parser.add_argument("--keep", type=Path, metavar="DIR",
                        help="keep each run's job and the head and end of each tool's "
                             "output here")


def _hardware_command(args: argparse.Namespace) -> str:
    """What to type to check the same again (the output folder is beside the point)."""
    return " ".join(["tlstages hardware", str(args.srcdir),
                     *(f"--name {name}" for name in args.name),
                     *(f"--edit {edit}" for edit in args.edit)])


def _needs_conf(parser: argparse.ArgumentParser, srcdir: Path) -> None:
    if not (srcdir / "conf.py").is_file():
        parser.error(f"{srcdir} has no conf.py")


def _lower(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    from .lower import lower_file

    return lower_file(args.kernel, args.factory, args.params, args.num_stages,
                      args.target, args.dump_dir, args.json, args.sweep,
                      listing={name: value for name, value in
                               (("pyobject", args.pyobject), ("lines", args.lines))
                               if value is not None},
                      show=args.show, toolkit=args.toolkit)


def _explain(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    from .explain import explain

    return explain(args.name, args.places)


def _report(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    from .report import last_report

    return last_report(args.places, args.format, args.pass_srcdir)


def _workers(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    from .workers import workers

    return workers(args.action, args.keys)


def _cache(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    from . import cache

    if args.action != "status" and args.file is None:
        parser.error(f"tlstages cache {args.action} needs a FILE")
    if args.action == "status":
        url = args.url or os.environ.get("TLSTAGES_CACHE_URL")
        folder = args.cache_dir or (Path(os.environ["TLSTAGES_CACHE_DIR"])
                                    if os.environ.get("TLSTAGES_CACHE_DIR") else None)
        if folder is None and not url:
            parser.error("say which cache: --cache-dir, --url, or their variables")
        return cache.status(folder, url, float(os.environ.get("TLSTAGES_CACHE_TIMEOUT", 5)))
    folder = cache.cache_dir(args.cache_dir)
    if folder is None:
        return 2
    if args.action == "export":
        return cache.export(folder, args.file)
    return cache.import_(folder, args.file)


def _lower_book(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    from ..core.errors import OptionError
    from ..core.plan.shards import parse_shard

    try:
        shard = parse_shard(args.shard)
    except OptionError as exc:
        parser.error(f"--shard: {exc}")
    _needs_conf(parser, args.srcdir)
    from .shard import lower_book

    return lower_book(args.srcdir.resolve(), shard, args.cache_dir, args.verbose)


def _upgrade_check(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    from .upgrade import upgrade_check

    return upgrade_check(args.srcdir, args.python, args.tilelang, args.json,
                         args.markdown, args.format)


def _bench(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    from .bench import run

    _needs_conf(parser, args.srcdir)
    # What to type to measure the same again (the output folder is beside the point).
    command = " ".join(["tlstages bench", str(args.srcdir),
                        *(f"--name {name}" for name in args.name),
                        f"--warmup {args.warmup} --reps {args.reps}"])
    run(args.srcdir.resolve(), args.name, args.warmup, args.reps, args.out, command)
    if args.hazards:
        from . import hardware

        hardware.run(args.srcdir.resolve(), [], None,
                     f"tlstages bench --hazards {args.srcdir}",
                     parallel=min(8, os.cpu_count() or 1), timeout=120)
    return 0


def _hardware(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    from ..core.hardware.code_edits import EditError, parse_edit
    from . import hardware

    _needs_conf(parser, args.srcdir)
    try:
        for edit in args.edit:
            parse_edit(edit)
    except EditError as exc:
        parser.error(f"--edit: {exc}")
    hardware.run(args.srcdir.resolve(), args.name, args.out,
                 _hardware_command(args), parallel=args.parallel,
                 timeout=args.timeout, edits=args.edit, keep=args.keep)
    return 0


def _timeline(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    from .timeline import run as record

    _needs_conf(parser, args.srcdir)
    command = " ".join(["tlstages timeline", str(args.srcdir),
                        *(f"--name {name}" for name in args.name),
                        f"--blocks {args.blocks} --warmup {args.warmup} --reps {args.reps}"])
    record(args.srcdir.resolve(), args.name, args.blocks, args.capacity, args.warmup,
           args.reps, args.out, command)
    return 0


def _snapshots(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    srcdir = args.srcdir.resolve()
    _needs_conf(parser, srcdir)
    from .snapshots import accept, status

    if args.action == "accept":
        return accept(srcdir, args.name)
    if args.action == "diff":
        from .report import diff

        return diff(srcdir, args.format)
    return status(srcdir)


# Each command's runner, by its name (imports inside: a command loads what it needs).
_RUN = {"lower": _lower, "explain": _explain, "report": _report, "workers": _workers,
        "cache": _cache, "lower-book": _lower_book, "upgrade-check": _upgrade_check,
        "bench": _bench, "hardware": _hardware, "timeline": _timeline,
        "snapshots": _snapshots}


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    run = _RUN.get(args.command)
    return run(parser, args) if run is not None else 2


if __name__ == "__main__":
    sys.exit(main())
