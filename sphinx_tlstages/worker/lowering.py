"""Lowering one variant with TileLang and reading its facts off the IR.

It runs in worker processes, never in Sphinx's, and returns plain data (a
:class:`~sphinx_tlstages.core.results.result.Result`, assembled by :mod:`..core.results.facts`).
"""

from __future__ import annotations

import re
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import tilelang
from tilelang import tvm

from ..core.errors import SourceError
from ..core.kernel.statements import serial_loop_variables
from ..core.protocol.messages import Task
from ..core.results import cuda as cuda_text
from ..core.results import facts, fingerprints, known_failures
from ..core.results.fingerprints import Fingerprints
from ..core.results.passes import PassLog
from ..core.results.result import Result, failure
from . import resources
from .factory import build
from .hazards import verdict as hazard_check
from .ir import facts as ir_facts
from .ir import schedule, source_lines
from .kernel_module import factory_arguments, factory_object, kernel_module
from .templates import template_digest


def _script(mod: Any) -> str:
    try:
        return str(mod.script())
    except Exception as exc:  # a pass may leave IR the printer cannot print
        return f"# the IR could not be printed: {type(exc).__name__}"


def _names(mod: Any) -> set[str]:
    return {str(gvar.name_hint) for gvar in mod.functions}


def _hash(mod: Any) -> int:
    """TVM's structural hash of ``mod``. Free variables mapped by position, not identity:
    hashed by identity they are hashed by address, and differ from process to process
    (measured in benchmarks/pass_fingerprints); by position the same IR hashes alike in
    every process and under both ends of the supported TileLang range."""
    return int(tvm.ir.structural_hash(mod, map_free_vars=True))


def _hash_print() -> Callable[[Any], str]:
    """Fingerprints as the structural hash of the module."""
    return lambda mod: fingerprints.from_hash(_hash(mod))


def _text_print() -> Callable[[Any], str]:
    """Fingerprints as the printed IR's digest, printed only when the structural hash
    moved: the alternative the cost benchmark measures."""
    last: dict[int, str] = {}

    def fingerprint(mod: Any) -> str:
        digest = _hash(mod)
        if digest not in last:
            last.clear()
            last[digest] = fingerprints.from_text(_script(mod))
        return last[digest]

    return fingerprint


_PRINTS = {"hash": _hash_print, "text": _text_print}


def _recorder(after: dict[str, Any], built: list[Any], log: PassLog,
              running: list[str], prints: Fingerprints | None = None,
              how: str = "hash") -> Any:
    """A pass instrument keeping the module as built (in ``built``) and the output of the
    first run of each watched pass (and, for the schedule reader, the
    module before the first run of its passes and after the last pass: keeping a module is
    keeping a reference), and telling ``log`` every run; when the log records changes,
    what each run changed (printing the IR only when its structural hash moved: printing
    every module would double the lowering time, and even so printing is about a tenth
    of it). ``running`` holds the passes under way, ``name#run`` innermost last: after
    an exception, the pass that raised it. ``prints`` gets the fingerprint of the IR
    after each run (``how``: the structural hash, or the printed text's digest).

    Some passes run others inside them on helper functions of their own: tile-op
    lowering simplifies each gemm emitter's ``_gemm_*`` function. Those runs see a module
    that is not the kernel's; they are left out, or the next run's change would be
    measured against the helper.
    """
    last: list[int] = []
    depth = [0]
    # The kernel's module as last seen (held, it is not changed in place), whose function
    # names tell a helper's run apart: read only for a run inside another.
    kernel: list[Any] = []
    runs: dict[str, int] = {}
    fingerprint = _PRINTS[how]()
    hashing = log.changes or (prints is not None and how == "hash")

    def print_of(mod: Any, digest: int) -> str:
        # The hash the log took, where it took one: hashing costs.
        return fingerprints.from_hash(digest) if how == "hash" else fingerprint(mod)

    def helper(mod: Any) -> bool:
        return depth[0] > 1 and not (_names(mod) & _names(kernel[0]))

    @tvm.instrument.pass_instrument
    class Recorder:
        def run_before_pass(self, mod: Any, info: Any) -> None:
            depth[0] += 1
            name = str(info.name)
            runs[name] = runs.get(name, 0) + 1
            running.append(f"{name}#{runs[name]}")
            if not kernel:
                kernel.append(mod)
                built.append(mod)
                digest = _hash(mod) if hashing else 0  # once, for the log and the print
                if log.changes:
                    last.append(digest)
                    log.start(_script(mod))
                if prints is not None:
                    prints.start(print_of(mod, digest))
            if info.name in schedule.BEFORE:  # the first of them
                after.setdefault(schedule.BEFORE_WS, mod)

        def run_after_pass(self, mod: Any, info: Any) -> None:
            try:
                if helper(mod):
                    return
                kernel[0] = mod
                name = str(info.name)
                digest = _hash(mod) if hashing else 0
                if log.changes:
                    log.after(name, digest != last[0], lambda: _script(mod))
                    last[0] = digest
                else:
                    log.after(name, False, str)
                if prints is not None:
                    prints.after(name, print_of(mod, digest))
                if name in ir_facts.WATCHED and name not in after:
                    after[name] = mod
                after["final"] = mod
            finally:
                depth[0] -= 1
                running.pop()  # not reached when the pass raised: it stays named

    return Recorder()


def _kernel_line(exc: BaseException, source_name: str) -> int | None:
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if f.filename.rsplit("/", 1)[-1] == source_name]
    return frames[-1].lineno if frames else None


_FUTURE_ANNOTATIONS = re.compile(r"^from\s+__future__\s+import\s+.*\bannotations\b", re.M)


def _message(exc: BaseException) -> str:
    text = str(exc).strip()
    lines = [line for line in text.splitlines() if line.strip()]
    # TVM errors carry their C++ backtrace first and the message last.
    tail = "\n".join(lines[-3:]) if len(lines) > 3 else text
    return f"{type(exc).__name__}: {tail}" if tail else type(exc).__name__


def lower_variant(task: Task, keep_cubin: Path | None = None, compile_now: bool = True
                  ) -> Result:
    """Lower one variant and return its result (``keep_cubin``: where to copy the cubin
    of the resources part, for a check on a GPU). ``compile_now`` false: the resources
    part's compile is not run but asked for (``resources_request``, a
    :class:`.resources.Request`): the pool compiles a group of variants at once."""
    source, name = task.source, task.source_name
    started = time.perf_counter()
    imported: list[dict[str, str]] = []
    pass_configs: dict[str, Any] = {}
    running: list[str] = []
    try:
        with kernel_module(source, name, task.file, task.folders) as module:
            imported = module.imported
            made = build(factory_object(module, task), factory_arguments(task), source,
                         task.factory, module.namespace)
            func, pass_configs = made.func, made.pass_configs
            after: dict[str, Any] = {}
            built: list[Any] = []
            log = PassLog(task.ir_passes, changes=task.record_passes)
            # Provenance for a snapshot, taken where one may be written from this result.
            prints = Fingerprints() if task.fingerprints or task.record_passes else None
            source_cuda = _lower(func, pass_configs, task.target,
                                 _recorder(after, built, log, running, prints), after)
    except Exception as exc:
        line = exc.line if isinstance(exc, SourceError) else _kernel_line(exc, name)
        message = _message(exc)
        if isinstance(exc, NameError) and _FUTURE_ANNOTATIONS.search(source):
            message += (" (the kernel says `from __future__ import annotations`, which turns "
                        "T.Tensor annotations into strings TileLang cannot always resolve; "
                        "it fails the same way when imported: remove that line)")
        if running:  # TileLang itself failed, in this pass: say which, and what is known
            message = f"TileLang's pass {running[-1]} failed: {message}"
            known = known_failures.explain(message, source, task.factory)
            if known is not None:
                message += f" (hint: {known.hint})"
                line = line or known.line
        result = failure("exception", message, line, seconds=time.perf_counter() - started)
    else:
        ir = {**ir_facts.read(after, built[0] if built else None), "passes": log.records,
              "pass_diffs": log.diffs, "schedule": _schedule(after),
              **hazard_check.check(after, task.target, ir_facts.main_function,
                                   ir_facts.device_function,
                                   serial_loop_variables(source, task.factory))}
        if prints is not None:
            ir["pass_fingerprints"] = prints.lines
        cuda = cuda_text.normalise(source_cuda, name)
        result = facts.success(ir, cuda, source, task.factory, task.num_stages,
                               seconds=time.perf_counter() - started, source_name=name)
        result["templates"] = template_digest(source_cuda)
        if made.unapplied:
            result["unapplied_configs"] = {"keys": made.unapplied, "why": made.why,
                                           "line": made.line}
        if task.toolkit and task.target.get("kind") == "cuda":
            # The cubin's resources, from the CUDA as the page offers it.
            arch = str(task.target["arch"])
            request = resources.Request.of(
                cuda, arch, pass_configs, task.toolkit,
                result["threads"], result["dynamic_shared_bytes"],
                sum(buffer.get("columns") or 0 for buffer in result["tmem"]),
                kernel=(name, source))
            if compile_now:
                result.update(resources.compile_group(  # type: ignore[typeddict-item]
                    [request], keep_cubin)[0])
            else:
                result["resources_request"] = request.encode()  # type: ignore[typeddict-unknown-key]
    if imported:  # what the cache must re-check before it reuses this result
        result["imports"] = sorted(imported, key=lambda entry: entry["path"])
    return result


def lower_kept(func: Any, pass_configs: dict[str, Any],
               target: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """Lower ``func`` (a prim_func, with its pass configs) for ``target`` as
    :func:`lower_variant` does, recording no passes; return the modules it keeps by pass
    name (``"final"``: the device IR the CUDA is printed from), which the facts and the
    hazard check read, and the device source.

    For tools that run the hazard check apart from a lowering's other facts (the
    benchmark of its cost, the sweep over other projects' kernels, the tests)."""
    after: dict[str, Any] = {}
    recorder = _recorder(after, [], PassLog((), changes=False), [])
    source = _lower(func, pass_configs, target, recorder, after)
    return after, source


def lower_fingerprinted(func: Any, pass_configs: dict[str, Any], target: dict[str, Any],
                        how: str | None) -> tuple[float, list[str]]:
    """Lower ``func`` as :func:`lower_variant` does, keeping the modules its facts read,
    with fingerprints taken ``how`` (``hash``, ``text``, or None: none); return the
    process's CPU seconds it took and the fingerprints. For the benchmark of their cost
    and the probe of their stability across releases."""
    prints = Fingerprints() if how else None
    after: dict[str, Any] = {}
    recorder = _recorder(after, [], PassLog((), changes=False), [], prints, how or "hash")
    started = time.process_time()
    _lower(func, pass_configs, target, recorder, after)
    return time.process_time() - started, prints.lines if prints else []


def _schedule(after: dict[str, Any]) -> dict[str, Any] | None:
    """The schedule the figures draw; a reader that trips on unexpected IR costs the page
    its figure (said there), never the variant."""
    try:
        return schedule.read(after, ir_facts.main_function, ir_facts.device_function)
    except Exception as exc:
        return {"schema": schedule.SCHEDULE_SCHEMA, "loops": [], "warp_specialized": None,
                "error": f"{type(exc).__name__}: {exc}"[:300]}


def _lower(func: Any, pass_configs: dict[str, Any], target_dict: dict[str, Any],
           recorder: Any, kept: dict[str, Any]) -> str:
    """TileLang's compile-only lowering of ``func`` (CUDA, HIP or Metal source), every
    pass seen by the recorder, which keeps modules in ``kept``. Metal's printer writes no
    ``#line`` directives: they are added from the IR's spans (:mod:`.ir.source_lines`)."""
    from tilelang.transform import PassConfigKey

    config: dict[str, Any] = {}
    line_key = getattr(PassConfigKey, "TL_EMIT_LINE_DIRECTIVES", None)
    if line_key is not None:
        config[line_key] = True
    config.update(pass_configs)  # the kernel's own configs, as its author compiles it
    target = tvm.target.Target(target_dict)
    with tilelang.transform.PassContext(opt_level=3, config=config,
                                        instruments=[recorder]), target:
        artifact = tilelang.lower(func, target=target, enable_device_compile=False)
    source_cuda = str(artifact.kernel_source or "")
    if source_lines.PRINTERS.get(str(target_dict.get("kind"))):
        # Printed again outside the recorder: its passes are no pass of the lowering.
        with tilelang.transform.PassContext(opt_level=3, config=config), target:
            source_cuda = source_lines.with_line_directives(kept.get("final"), target,
                                                            source_cuda)
    if not source_cuda.strip():
        raise RuntimeError("TileLang produced no device source")
    return source_cuda
