"""The ``tlstages`` command (also ``python -m sphinx_tlstages``).

``tlstages snapshots accept [SRCDIR]`` accepts the pending results a failed check left
beside the goldens; ``tlstages snapshots status [SRCDIR]`` lists every snapshot with the
shown facts it lacks, and pending, missing and unused ones; ``tlstages bench SRCDIR``
times the book's kernels on this machine's GPU;
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

from ..core.parts import PRINTED

FORMATS = ("markdown", "json", "text")


def build_parser() -> argparse.ArgumentParser:
    """The whole command line (the reference page prints its help)."""
    # A fixed width: the help text is printed into the book and must not depend on the
    # terminal that built it.
    fmt = functools.partial(argparse.HelpFormatter, width=88)
    parser = argparse.ArgumentParser(prog="tlstages", description=__doc__.split("\n\n")[0],
                                     formatter_class=fmt)
    commands = parser.add_subparsers(dest="command", required=True)
    snap = commands.add_parser("snapshots", formatter_class=fmt,
                               help="golden snapshots of a book")
    snap_commands = snap.add_subparsers(dest="action", required=True)
    acc = snap_commands.add_parser("accept", formatter_class=fmt,
                                   help="accept pending results")
    acc.add_argument("srcdir", nargs="?", default=".", type=Path)
    acc.add_argument("--name", action="append", default=[], help="only this directive")
    stat = snap_commands.add_parser("status", formatter_class=fmt,
                                    help="list every snapshot, the shown facts it lacks, "
                                         "pending, missing, unused")
    stat.add_argument("srcdir", nargs="?", default=".", type=Path)
    pend = snap_commands.add_parser("diff", formatter_class=fmt,
                                    help="the drift report of the pending snapshots, "
                                         "without building")
    pend.add_argument("srcdir", nargs="?", default=".", type=Path)
    pend.add_argument("--format", choices=FORMATS, default="markdown")
    bench = commands.add_parser("bench", formatter_class=fmt,
                                help="time the book's kernels on this GPU")
    bench.add_argument("srcdir", type=Path)
    bench.add_argument("--name", action="append", default=[],
                       help="only this directive (default: those with :flops: or :reference:)")
    bench.add_argument("--warmup", type=int, default=25)
    bench.add_argument("--reps", type=int, default=100)
    bench.add_argument("--out", type=Path, help="folder (default: tlstages_bench_dir)")
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
    why = commands.add_parser(
        "explain", formatter_class=fmt,
        help="why a directive's variants were lowered again instead of taken from the cache")
    why.add_argument("name", help="the directive's :name:")
    why.add_argument("places", nargs="*", type=Path,
                     help="build (or doctree) folders to look in (default: _build here "
                          "and in every folder beside that has a conf.py)")
    kept = commands.add_parser(
        "workers", formatter_class=fmt,
        help="the lowering workers kept between builds (tlstages_keep_workers)")
    kept.add_argument("action", choices=("status", "stop"))
    kept.add_argument("keys", nargs="*", help="only the servers whose key starts so")
    store = commands.add_parser(
        "cache", formatter_class=fmt,
        help="the lowering cache: one archive of it, or what it holds here and remotely")
    store.add_argument("action", choices=("export", "import", "status"))
    store.add_argument("file", nargs="?", type=Path, help="the archive (export, import)")
    store.add_argument("--cache-dir", type=Path,
                       help="the local cache (default: TLSTAGES_CACHE_DIR)")
    store.add_argument("--url", help="the remote cache (default: TLSTAGES_CACHE_URL)")
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
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "lower":
        from .lower import lower_file

        return lower_file(args.kernel, args.factory, args.params, args.num_stages,
                          args.target, args.dump_dir, args.json, args.sweep,
                          listing={name: value for name, value in
                                   (("pyobject", args.pyobject), ("lines", args.lines))
                                   if value is not None},
                          show=args.show, toolkit=args.toolkit)
    if args.command == "explain":
        from .explain import explain

        return explain(args.name, args.places)
    if args.command == "report":
        from .report import last_report

        return last_report(args.places, args.format, args.pass_srcdir)
    if args.command == "workers":
        from .workers import workers

        return workers(args.action, args.keys)
    if args.command == "cache":
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
    if args.command == "lower-book":
        from ..core.errors import OptionError
        from ..core.plan.shards import parse_shard

        try:
            shard = parse_shard(args.shard)
        except OptionError as exc:
            parser.error(f"--shard: {exc}")
        if not (args.srcdir / "conf.py").is_file():
            parser.error(f"{args.srcdir} has no conf.py")
        from .shard import lower_book

        return lower_book(args.srcdir.resolve(), shard, args.cache_dir, args.verbose)
    if args.command == "upgrade-check":
        from .upgrade import upgrade_check

        return upgrade_check(args.srcdir, args.python, args.tilelang, args.json,
                             args.markdown, args.format)
    if args.command == "bench":
        from .bench import run

        if not (args.srcdir / "conf.py").is_file():
            parser.error(f"{args.srcdir} has no conf.py")
        # What to type to measure the same again (the output folder is beside the point).
        command = " ".join(["tlstages bench", str(args.srcdir),
                            *(f"--name {name}" for name in args.name),
                            f"--warmup {args.warmup} --reps {args.reps}"])
        run(args.srcdir.resolve(), args.name, args.warmup, args.reps, args.out, command)
        return 0
    if args.command == "snapshots":
        srcdir = args.srcdir.resolve()
        if not (srcdir / "conf.py").is_file():
            parser.error(f"{srcdir} has no conf.py")
        from .snapshots import accept, status

        if args.action == "accept":
            return accept(srcdir, args.name)
        if args.action == "diff":
            from .report import diff

            return diff(srcdir, args.format)
        return status(srcdir)
    return 2


if __name__ == "__main__":
    sys.exit(main())
