"""``tlstages hardware SRCDIR`` (and ``tlstages bench --hazards``): each variant of the
directives that ask for it (``:hardware:``) launched on this machine's NVIDIA GPU under
compute-sanitizer's ``racecheck`` (asynchronous copies included) and ``synccheck``, and
what the tools report written as one JSON file for this GPU, which the docs render beside
the hazard check's verdict on a machine without one.

Each variant is a job, in two steps, each step a process of its own, several at a time:
``prepare`` lowers the variant as the docs do (the fingerprints that tie the record to the
code the page shows, and the static verdict) and compiles it into the job's TileLang cache;
then each tool runs the job's ``launch`` (the compile now a cache hit, the kernel launched
on seeded inputs) under a time limit, its output counted as it streams
(:mod:`..core.hardware.sanitizer`), never kept whole. Variants whose code this GPU cannot
run (a newer architecture's, an AMD target's) are recorded as not run, with why.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.files import write_atomic
from ..core.hardware import sanitizer
from ..core.hardware.gpu_runs import launch_sizes, why_not_here
from ..core.plan.options import Hardware
from ..core.plan.spec import DirectiveSpec, VariantSpec
from ..core.records.bench_data import fingerprint, gpu_slug
from ..core.records.hardware_data import HARDWARE_SCHEMA, validate
from ..ext.project import conf_values, read_directives

METHOD = ("each variant compiled as TileLang compiles it for its own target (code for an "
          "older architecture than the GPU's as PTX, which the driver compiles for the GPU), "
          "the blocks not checked returning at once, and launched on seeded inputs under "
          "compute-sanitizer racecheck (asynchronous copies tracked, one report per pair "
          "of instructions that race) and synccheck, without backtraces; each tool's "
          "count read from its summary line")
PREPARED = "TLSTAGES-PREPARED "  # as worker.sanitize prints it
WORKER = ("-m", "sphinx_tlstages.worker.sanitize")
HEAD = 2000  # lines of each tool's output kept with --keep


@dataclass
class Job:
    """One variant's run: its folder, what it needs, what came back."""

    spec: DirectiveSpec
    variant: VariantSpec
    folder: Path
    request: Hardware
    edits: tuple[str, ...] = ()
    prepared: dict[str, Any] | None = None
    tools: dict[str, dict[str, Any]] = field(default_factory=dict)
    launched: dict[str, Any] | None = None

    @property
    def path(self) -> Path:
        return self.folder / "job.json"

    def write(self, gpu_sm: str, sizes: dict[str, int]) -> None:
        # The code alone: no resources compile, no pass records (neither changes it).
        bare = dataclasses.replace(self.variant, toolkit=None, ir_passes=(),
                                   record_passes=False, fingerprints=False)
        self.path.write_text(json.dumps({
            "task": bare.task().encode(), "gpu_sm": gpu_sm,
            "blocks": list(self.request.blocks), "edits": list(self.edits), "sizes": sizes,
            "launches": self.request.launches}), encoding="utf-8")

    def environment(self) -> dict[str, str]:
        # A cache of its own: the edits are not part of TileLang's key.
        return {**os.environ, "TILELANG_CACHE_DIR": str(self.folder / "tilelang-cache"),
                "PYTHONUNBUFFERED": "1"}


def _version(program: Sequence[str], pattern: str) -> str:
    try:
        text = subprocess.run(list(program), capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    found = re.search(pattern, text)
    return found.group(1) if found else "unknown"


def tools_info() -> dict[str, str]:
    """The toolkit that compiles and the sanitizer that checks, as they say their versions."""
    return {"toolkit": _version(["nvcc", "--version"], r"release ([\d.]+, V[\d.]+)"),
            "sanitizer": _version([sanitizer.SANITIZER, "--version"], r"Version ([\w.]+)")}


def _stream(argv: list[str], env: dict[str, str], timeout: float,
            read: Callable[[str], None]) -> tuple[int | None, float]:
    """Run ``argv`` in its own process group, each output line to ``read``; stop the
    group after ``timeout`` seconds. Returns (exit status or None if stopped, seconds)."""
    start = time.perf_counter()
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True, errors="replace", env=env, start_new_session=True)
    stopped = threading.Event()

    def stop() -> None:
        stopped.set()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)

    timer = threading.Timer(timeout, stop)
    timer.start()
    try:
        assert process.stdout is not None
        for line in process.stdout:
            read(line)
        status = process.wait()
    finally:
        timer.cancel()
    return (None if stopped.is_set() else status), time.perf_counter() - start


def _prepare(job: Job, timeout: float, log: Callable[[str], None]) -> None:
    found: list[str] = []
    tail: list[str] = []

    def read(line: str) -> None:
        if line.startswith(PREPARED):
            found.append(line[len(PREPARED):])
        else:
            tail[:] = [*tail[-11:], line.rstrip()]

    status, seconds = _stream([sys.executable, *WORKER, str(job.path), "prepare"],
                              job.environment(), timeout, read)
    if found:
        job.prepared = json.loads(found[-1])
    else:
        why = f"stopped after {timeout:g} s" if status is None else \
            f"exit {status}: {' | '.join(t for t in tail if t.strip())[-400:]}"
        job.prepared = {"ok": False, "error": {"kind": "prepare", "message": why}}
    log(f"prepared {job.spec.name} {job.variant.heading} in {seconds:.0f} s")


def _check(job: Job, tool: str, timeout: float, log: Callable[[str], None]) -> None:
    tally = sanitizer.Tally(tool)
    head: list[str] = []

    def read(line: str) -> None:
        if len(head) < HEAD:
            head.append(line.rstrip("\n"))
        tally.read(line)

    argv = sanitizer.command(tool, [sys.executable, *WORKER, str(job.path), "launch"])
    status, seconds = _stream(argv, job.environment(), timeout, read)
    job.tools[tool] = sanitizer.outcome(tally, status, seconds, timeout)
    if tally.launched is not None:
        job.launched = json.loads(tally.launched)
    # The output's head and end (--keep), for whoever reads the run afterwards.
    (job.folder / f"{tool}.log").write_text("\n".join(
        [*head, f"... ({tally.reports} report lines in all)", *tally.tail]) + "\n",
        encoding="utf-8")
    said = job.tools[tool]
    log(f"{tool} {job.spec.name} {job.variant.heading}: "
        + (f"{said.get('hazards', said.get('errors'))} reported" if said["ran"]
           else f"not run ({said['why']})") + f", {seconds:.0f} s")


def _record(job: Job) -> dict[str, Any]:
    """The variant's record, as :mod:`..core.records.hardware_data` reads it."""
    prepared = job.prepared or {}
    record: dict[str, Any] = {"fingerprint": fingerprint(job.variant),
                              "target": job.variant.target.label}
    if not prepared.get("ok"):
        error = prepared.get("error") or {}
        record["not_run"] = f"it did not lower or compile here: {error.get('message', '?')}"
        return record
    launched = job.launched or {}
    record.update(
        code=prepared["code"], cuda=prepared["cuda"], built=prepared["built"],
        same_code=prepared["same_code"],
        static={k: prepared["hazards"][k] for k in ("verdict", "text")}
        if prepared.get("hazards") else None,
        inputs={"tensors": launched.get("tensors", prepared["tensors"]),
                "sizes": launched.get("sizes", prepared["sizes"]),
                "blocks": list(job.request.blocks),
                "blocks_words": job.request.blocks_words,
                "whole_grid": bool(prepared.get("clustered")),
                "launches": job.request.launches},
        **{tool: job.tools[tool] for tool in sanitizer.TOOLS})
    if job.edits:
        record["edits"] = list(job.edits)
    return record


def _jobs(specs: Sequence[DirectiveSpec], gpu_sm: str, work: Path,
          edits: Sequence[str]) -> tuple[list[Job], dict[tuple[str, str], str]]:
    """One job per variant this GPU runs; why not, for the others."""
    jobs: list[Job] = []
    skipped: dict[tuple[str, str], str] = {}
    for spec in specs:
        request = spec.hardware or Hardware()
        for variant in spec.variants:
            why = why_not_here(variant.target.kind, variant.target.arch, gpu_sm)
            if why is not None:
                skipped[spec.name, variant.id] = why
                continue
            name = hashlib.sha256(f"{spec.name}/{variant.id}".encode()).hexdigest()[:12]
            folder = work / name
            folder.mkdir(parents=True, exist_ok=True)
            job = Job(spec, variant, folder, request, tuple(edits))
            job.write(gpu_sm, dict(request.sizes))
            jobs.append(job)
    return jobs, skipped


def check(specs: Sequence[DirectiveSpec], gpu: dict[str, str], *, parallel: int,
          timeout: float, edits: Sequence[str] = (), keep: Path | None = None,
          log: Callable[[str], None] = print) -> dict[str, Any]:
    """Every variant of ``specs`` run under both tools; the ``directives`` of a record."""
    work = Path(tempfile.mkdtemp(prefix="tlstages-hardware-"))
    try:
        jobs, skipped = _jobs(specs, gpu["sm"], work, edits)
        with ThreadPoolExecutor(parallel) as pool:
            list(pool.map(lambda job: _prepare(job, 4 * timeout, log), jobs))
        for job in jobs:  # the sizes a static finding names, now that it is known
            if job.prepared and job.prepared.get("ok"):
                job.write(gpu["sm"], launch_sizes(job.request.sizes,
                                                  job.prepared.get("hazards")))
        runs = [(job, tool) for job in jobs if job.prepared and job.prepared.get("ok")
                for tool in sanitizer.TOOLS]
        with ThreadPoolExecutor(parallel) as pool:
            list(pool.map(lambda run: _check(run[0], run[1], timeout, log), runs))
        directives: dict[str, Any] = {}
        for spec in specs:
            variants: dict[str, Any] = {}
            for variant in spec.variants:
                if (spec.name, variant.id) in skipped:
                    variants[variant.id] = {"fingerprint": fingerprint(variant),
                                            "target": variant.target.label,
                                            "not_run": skipped[spec.name, variant.id]}
            for job in jobs:
                if job.spec is spec:
                    variants[job.variant.id] = _record(job)
            directives[spec.name] = {"variants": {v.id: variants[v.id]
                                                  for v in spec.variants}}
        return directives
    finally:
        if keep is not None:
            shutil.copytree(work, keep, dirs_exist_ok=True,
                            ignore=shutil.ignore_patterns("tilelang-cache"))
        shutil.rmtree(work, ignore_errors=True)


def chosen(srcdir: Path, names: Sequence[str]) -> list[DirectiveSpec]:
    """The directives named, or those with ``:hardware:``."""
    directives = read_directives(srcdir)
    unknown = set(names) - {s.name for s in directives}
    if unknown:
        raise SystemExit(f"no tl-pipeline directive named {', '.join(sorted(unknown))}")
    return [s for s in directives if (s.name in names if names else s.hardware is not None)]


def run(srcdir: Path, names: Sequence[str], out: Path | None, command: str, *,
        parallel: int, timeout: float, edits: Sequence[str] = (),
        keep: Path | None = None) -> Path:
    """Check the chosen directives on this GPU and write its hardware record."""
    from .bench import gpu_info

    specs = chosen(srcdir, names)
    if not specs:
        raise SystemExit("no directive asks for :hardware: (or name one with --name)")
    if shutil.which(sanitizer.SANITIZER) is None:
        raise SystemExit(f"{sanitizer.SANITIZER} is not on PATH (it comes with the CUDA "
                         "toolkit)")
    gpu = {**gpu_info(), **tools_info()}
    data: dict[str, Any] = {
        "schema": HARDWARE_SCHEMA, "kind": "hardware", "gpu": gpu, "command": command,
        "date": datetime.date.today().isoformat(), "method": METHOD,
        "directives": check(specs, gpu, parallel=parallel, timeout=timeout, edits=edits,
                            keep=keep, log=lambda line: print(line, flush=True)),
    }
    folder = out or srcdir / str(conf_values(srcdir).get("tlstages_hardware_dir",
                                                         "_tlstages/hardware"))
    path = folder / f"{gpu_slug(gpu['name'])}.json"
    write_atomic(path, json.dumps(validate(data, path.name), indent=1, sort_keys=True) + "\n")
    print(f"wrote {path}", file=sys.stderr)
    return path
