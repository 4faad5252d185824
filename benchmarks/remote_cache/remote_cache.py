#!/usr/bin/env python3
"""A fresh folder built against a warm remote cache, against a warm local ``-E`` build.

This book is first built once writing a remote cache on an S3-compatible server on
127.0.0.1 (moto's server mode). Then, alternately (``--repeat`` runs, medians):

* ``fresh_remote``: a copy of the book in a new folder, with an empty local cache, empty
  output and doctree folders, reading the remote (read-only): every variant a hit, no
  worker, no TileLang import;
* ``warm_local_E``: the book rebuilt with ``-E`` against its warm local cache.

The goal is at most 1.15x.

    python benchmarks/remote_cache/remote_cache.py [--repeat 5] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

# build_speed's helpers (one way to time a build), and the package from this checkout.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "build_speed"))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from build_speed import ROOT, alternate, environment, sphinx

from tests.remote_servers import s3_server

GOAL = 1.15


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tlstages-remote-") as tmp, \
            s3_server() as endpoint:
        work = Path(tmp)
        book = work / "book"
        shutil.copytree(ROOT / "book", book, ignore=shutil.ignore_patterns("_build"))
        aws = {"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench",
               "AWS_DEFAULT_REGION": "us-east-1", "AWS_ENDPOINT_URL": endpoint,
               "TLSTAGES_CACHE_URL": "s3://bench/book"}
        import boto3

        boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                     aws_access_key_id="bench",
                     aws_secret_access_key="bench").create_bucket(Bucket="bench")
        warm = environment(work / "warm-cache", **aws, TLSTAGES_CACHE_WRITE="1")
        sphinx(book, work / "warm-out", warm)  # lowers everything, writes the remote
        local = environment(work / "warm-cache")
        sphinx(book, work / "warm-out", local, "-E")  # settle the warm side once
        fresh: list[float] = []
        warm_e: list[float] = []
        for run in range(args.repeat):
            def remote_side(run: int = run) -> None:
                src = work / f"fresh{run}"
                shutil.copytree(book, src, ignore=shutil.ignore_patterns("_build"))
                env = environment(work / f"fresh-cache{run}", **aws)
                fresh.append(sphinx(src, src / "_build" / "html", env)[0])

            def local_side() -> None:
                warm_e.append(sphinx(book, work / "warm-out", local, "-E")[0])

            alternate(run, remote_side, local_side)
        ratio = statistics.median(f / w for f, w in zip(fresh, warm_e, strict=True))
        report = {"fresh_remote_seconds": round(statistics.median(fresh), 2),
                  "warm_local_E_seconds": round(statistics.median(warm_e), 2),
                  "ratio": round(ratio, 2), "goal": GOAL, "repeat": args.repeat}
    print(f"remote: fresh folder, warm remote {report['fresh_remote_seconds']:.2f} s; warm "
          f"local -E {report['warm_local_E_seconds']:.2f} s; {report['ratio']:.2f}x "
          f"(goal: at most {GOAL}x)", flush=True)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
