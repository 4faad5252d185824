"""``tlstages upgrade-check SRCDIR --python PATH``: a TileLang upgrade rehearsed on a
book's own kernels before it lands.

Every variant of the book is lowered twice, in workers of this environment and in
workers started with another interpreter (another environment, with another TileLang;
the workers find this package through the PYTHONPATH every worker gets). Nothing of the
author's is touched: no cache is read or written, no snapshot, no environment (``--tilelang
SPEC`` makes the other environment in a cache folder of its own, with ``python -m venv``
and pip, the CPU build of torch first). Both sides are shaped as snapshots and compared as
a build compares them (:mod:`..core.records.upgrade`). Exit status: 0 when no page would
change, 1 when one would, 2 on a usage error (or an interpreter without TileLang).
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.metadata
import os
import subprocess
import sys
import urllib.request
import venv
from pathlib import Path

from ..core.plan.spec import DirectiveSpec
from ..core.records import snapshots
from ..core.records.upgrade import Rehearsed, Upgrade, rehearse
from ..core.results.result import Result, depends_on_machine
from ..runner.launch import Job, default_jobs, worker_environment
from ..runner.pool import run_jobs

# The CPU build of torch, installed before TileLang (an unpinned torch pulls CUDA).
TORCH_INDEX = "https://download.pytorch.org/whl/cpu"
_PROBE = "import tilelang, sphinx_tlstages.worker; print(tilelang.__version__)"


class UsageError(Exception):
    """A usage error: said on stderr, exit status 2."""


def candidate_version(python: str) -> str:
    """The TileLang version ``python`` lowers with, as a worker of it imports it."""
    try:
        done = subprocess.run([python, "-c", _PROBE], capture_output=True, text=True,
                              env=worker_environment(), timeout=300, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise UsageError(f"{python} could not be run: {exc}") from None
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["(no message)"])[-1]
        raise UsageError(f"{python} cannot import TileLang and this package: {tail}")
    return done.stdout.strip().split("+", 1)[0]


def _answers(index: str) -> bool:
    """Whether ``index`` answers at all: pip retries an unreachable one for every
    dependency, minutes in all, before giving up."""
    try:
        urllib.request.urlopen(f"{index}/torch/", timeout=5).close()
    except OSError:
        return False
    return True


def _torch_requirement() -> str:
    """``torch==2.13.0`` where this environment has torch 2.13.0 (a CPU build's local
    ``+cpu`` left out), else ``torch``."""
    try:
        found = importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        return "torch"
    return f"torch=={found.split('+', 1)[0]}"


def make_environment(spec: str, cache: Path) -> str:
    """An environment with TileLang ``spec`` (``tilelang==0.1.16``, ``0.1.16``) under
    ``cache``, made once and reused; returns its interpreter."""
    wanted = spec if spec.startswith("tilelang") else f"tilelang=={spec}"
    folder = cache / hashlib.sha256(wanted.encode()).hexdigest()[:12]
    python = folder / "bin" / "python"
    if (folder / "ready").is_file():
        return str(python)
    venv.EnvBuilder(with_pip=True, clear=True).create(folder)
    # CPU torch first, as the README installs it (an unpinned torch pulls a CUDA build of
    # several GB): this environment's release where it has one, from PyTorch's CPU index,
    # else from the configured index (which may hold a CPU build of that release).
    torch = _torch_requirement()
    cpu = [[torch, "--index-url", TORCH_INDEX]] if _answers(TORCH_INDEX) else []
    for tries in ([*cpu, [torch]], [[wanted]]):
        for args in tries:
            done = subprocess.run([str(python), "-m", "pip", "install", "--quiet", *args],
                                  check=False)
            if done.returncode == 0:
                break
        else:
            raise UsageError(f"pip could not install {' '.join(tries[-1])} into {folder}")
    (folder / "ready").write_text(wanted + "\n", encoding="utf-8")
    return str(python)


def _lower(specs: list[DirectiveSpec], python: str | None) -> dict[tuple[str, str], Result]:
    """Every variant of ``specs`` lowered by workers of ``python`` (None: this one),
    without the cache and without the resources part's compiler."""
    jobs: list[Job] = []
    which: dict[str, tuple[str, str]] = {}
    for spec in specs:
        for variant in spec.variants:
            task = dataclasses.replace(variant.task(), toolkit=None)
            jobs.append(Job(str(len(jobs)), task, float(spec.timeout or 600.0)))
            which[jobs[-1].id] = (spec.name, variant.id)
    found: dict[tuple[str, str], Result] = {}

    def done(job: Job, result: Result) -> None:
        found[which[job.id]] = result

    run_jobs(jobs, default_jobs(), done, fork=python is None, python=python)
    return found


def rehearsal(srcdir: Path, python: str) -> Upgrade:
    """Lower the book at ``srcdir`` with this TileLang and ``python``'s, and compare."""
    from ..core.results.stamps import tilelang_version
    from ..ext.project import read_project

    then_version = candidate_version(python)
    specs, sources = read_project(srcdir)
    now, then = _lower(specs, None), _lower(specs, python)
    report = Upgrade(tilelang_version() or "missing", then_version)
    for spec in sorted(specs, key=lambda s: (sources[s.docname], s.lineno, s.name)):
        mine_now = {v.id: now[(spec.name, v.id)] for v in spec.variants}
        mine_then = {v.id: then[(spec.name, v.id)] for v in spec.variants}
        failed = {key: result["error"]["message"] for key, result in mine_then.items()
                  if not result.get("ok") and not depends_on_machine(result)
                  and mine_now[key].get("ok")}
        entry = Rehearsed(spec.name, sources[spec.docname], spec.lineno)
        rehearse(entry, snapshots.build(spec, mine_now, report.current),
                 snapshots.build(spec, mine_then, report.candidate), failed)
        report.directives.append(entry)
    return report


def upgrade_check(srcdir: Path, python: str | None, tilelang: str | None,
                  json_out: Path | None, markdown_out: Path | None, form: str) -> int:
    """The command: print the rehearsal (``form``), write its JSON and Markdown where
    asked; 0 when nothing would change, 1 when something would, 2 on a usage error."""
    try:
        if not (srcdir / "conf.py").is_file():
            raise UsageError(f"{srcdir} has no conf.py")
        if (python is None) == (tilelang is None):
            raise UsageError("give the other environment: --python PATH or --tilelang SPEC")
        if tilelang is not None:
            cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
            python = make_environment(tilelang, cache / "tlstages" / "upgrade-envs")
        assert python is not None
        report = rehearsal(srcdir.resolve(), python)
    except UsageError as exc:
        print(f"tlstages upgrade-check: {exc}", file=sys.stderr)
        return 2
    if json_out is not None:
        json_out.write_text(report.as_json(), encoding="utf-8")
    if markdown_out is not None:
        markdown_out.write_text(report.markdown(), encoding="utf-8")
    sys.stdout.write(report.as_json() if form == "json" else report.markdown())
    return 1 if report.changes() else 0
