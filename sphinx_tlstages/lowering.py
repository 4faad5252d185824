"""Lowering one variant with TileLang and reading its facts off the IR.

With :mod:`sphinx_tlstages.worker`, the only module that imports TileLang; it runs in
worker processes, never in Sphinx's. It returns plain data (see :mod:`.facts`).
"""

from __future__ import annotations

import ast
import linecache
import time
import traceback
from typing import Any

import tilelang
import tilelang.language as T
from tilelang import tvm
from tvm.tirx.stmt_functor import post_order_visit, pre_order_visit

from . import cuda as cuda_text
from . import facts
from .errors import SourceError
from .passes import PassLog

# Passes whose output the facts are read from; everything else is only named.
WATCHED = (
    "tl.PipelinePlanning",
    "tl.ProducerConsumerWarpSpecialized",
    "tl.InjectSoftwarePipeline",
    "tl.MergeSharedMemoryAllocations",
)


def _script(mod: Any) -> str:
    try:
        return str(mod.script())
    except Exception as exc:  # a pass may leave IR the printer cannot print
        return f"# the IR could not be printed: {type(exc).__name__}"


def _recorder(after: dict[str, Any], log: PassLog) -> Any:
    """A pass instrument keeping the module after the first run of each watched pass,
    and telling ``log`` what every run changed (printing the IR only when its structural
    hash moved: printing every module would double the lowering time)."""
    last: list[int] = []

    @tvm.instrument.pass_instrument
    class Recorder:
        def run_before_pass(self, mod: Any, info: Any) -> None:
            if not last:
                last.append(tvm.ir.structural_hash(mod))
                log.start(_script(mod))

        def run_after_pass(self, mod: Any, info: Any) -> None:
            digest = tvm.ir.structural_hash(mod)
            log.after(str(info.name), digest != last[0], lambda: _script(mod))
            last[0] = digest
            if info.name in WATCHED and info.name not in after:
                after[str(info.name)] = mod

    return Recorder()


def _load(source: str, source_name: str) -> dict[str, Any]:
    # TileLang's builder reads the kernel back through inspect/linecache; mtime None
    # keeps linecache.checkcache from dropping an entry that has no file behind it.
    linecache.cache[source_name] = (len(source), None, source.splitlines(True), source_name)
    namespace: dict[str, Any] = {"__name__": "tlstages_kernel", "tilelang": tilelang, "T": T}
    exec(compile(source, source_name, "exec"), namespace)
    return namespace


def _prim_func(obj: Any, kwargs: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    # @autotune wraps the @tilelang.jit object as .jit_impl; @tilelang.jit has get_tir.
    jit = getattr(obj, "jit_impl", obj)
    if hasattr(jit, "get_tir"):
        return jit.get_tir(**kwargs), dict(getattr(jit, "pass_configs", None) or {})
    result = obj(**kwargs)
    if hasattr(result, "get_tir"):
        return result.get_tir(), dict(getattr(result, "pass_configs", None) or {})
    if not isinstance(result, tvm.tirx.PrimFunc):
        raise SourceError(f"the factory returned {type(result).__name__}, not a T.prim_func")
    return result, {}


def _kernel_line(exc: BaseException, source_name: str) -> int | None:
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if f.filename.rsplit("/", 1)[-1] == source_name]
    return frames[-1].lineno if frames else None


def _message(exc: BaseException) -> str:
    text = str(exc).strip()
    lines = [line for line in text.splitlines() if line.strip()]
    # TVM errors carry their C++ backtrace first and the message last.
    tail = "\n".join(lines[-3:]) if len(lines) > 3 else text
    return f"{type(exc).__name__}: {tail}" if tail else type(exc).__name__


# --- reading the IR -------------------------------------------------------------------

def _visit(node: Any, fn: Any) -> None:
    post_order_visit(node, fn)


def _buffers(stmt: Any) -> list[str]:
    names: list[str] = []

    def visit(node: Any) -> None:
        buffer = getattr(node, "buffer", None)
        if buffer is not None and hasattr(buffer, "name") and buffer.name not in names:
            names.append(str(buffer.name))

    _visit(stmt, visit)
    return names


def _summary(stmt: Any) -> dict[str, Any]:
    value = getattr(stmt, "value", None)
    op = getattr(getattr(value, "op", None), "name", type(stmt).__name__)
    lines = [line.strip() for line in stmt.script().splitlines()]
    code = [line for line in lines if line and not line.startswith("#")
            and " = T.Buffer(" not in line and not line.endswith(" = T.int32()")]
    return {"op": str(op), "buffers": _buffers(stmt), "ir": code[0] if code else ""}


def _body(stmt: Any) -> list[Any]:
    while type(stmt).__name__ in ("SBlockRealize", "BlockRealize"):
        stmt = stmt.block.body
    return list(stmt.seq) if type(stmt).__name__ == "SeqStmt" else [stmt]


def pipeline_loops(func: Any) -> list[dict[str, Any]]:
    loops: list[dict[str, Any]] = []

    def visit(node: Any) -> None:
        if isinstance(node, tvm.tirx.For) and "software_pipeline_stage" in node.annotations:
            ann = node.annotations
            loops.append({
                "num_stages": int(ann.get("tl_pipelined_num_stages", -1)),
                "stage": [int(s) for s in ann["software_pipeline_stage"]],
                "order": [int(o) for o in ann.get("software_pipeline_order", [])],
                "statements": [_summary(s) for s in _body(node.body)],
            })

    _visit(func.body, visit)
    return loops


def _bytes(buffer: Any) -> int:
    count = 1
    for extent in buffer.shape:
        count *= int(extent)
    return count * int(tvm.DataType(str(buffer.dtype)).bits) // 8


def block_buffers(func: Any, scope_prefix: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []

    def visit(node: Any) -> None:
        for buffer in getattr(node, "alloc_buffers", None) or []:
            if str(buffer.scope()).startswith(scope_prefix):
                found.append({
                    "name": str(buffer.name),
                    "shape": [int(x) for x in buffer.shape],
                    "dtype": str(buffer.dtype),
                    "scope": str(buffer.scope()),
                    "bytes": _bytes(buffer),
                })

    _visit(func.body, visit)
    return found


def _is_thread_x(node: Any) -> bool:
    return type(node).__name__ == "AttrStmt" and node.attr_key == "thread_extent" \
        and str(node.node.thread_tag) == "threadIdx.x"


def merged_allocations(func: Any) -> dict[str, int]:
    totals = {"dynamic": 0, "static": 0, "threads": 0}

    def visit(node: Any) -> None:
        if type(node).__name__ == "AllocBuffer":
            scope = str(node.buffer.scope())
            if scope == "shared.dyn":
                totals["dynamic"] += _bytes(node.buffer)
            elif scope.startswith("shared"):
                totals["static"] += _bytes(node.buffer)
        if _is_thread_x(node):
            totals["threads"] = max(totals["threads"], int(node.value))

    _visit(func.body, visit)
    return totals


def warp_specialization(func: Any) -> dict[str, Any] | None:
    """Producer/consumer split written by ``tl.ProducerConsumerWarpSpecialized``."""
    split: dict[str, Any] = {}

    def visit(node: Any) -> None:
        kind = type(node).__name__
        if kind == "AttrStmt" and node.attr_key == "kWarpSpecializationScope":
            branch = node.body
            if type(branch).__name__ == "IfThenElse" and not split:
                split["producer_threads"] = int(branch.condition.b)
                split["producer"] = _branch_statements(branch.then_case)
                split["consumer"] = _branch_statements(branch.else_case)
        if _is_thread_x(node):
            split["threads"] = int(node.value)
        if kind in ("SBlock", "Block") and "barrier_init" in node.annotations:
            split["barrier_init"] = [[int(c) for c in counts]
                                     for counts in node.annotations["barrier_init"].values()]

    _visit(func.body, visit)
    if "producer" not in split:
        return None
    split["barriers"] = block_buffers(func, "shared.barrier")
    return split


def _branch_statements(stmt: Any) -> list[dict[str, Any]]:
    """The statements of the outermost loops of one warp group's branch (the pipelined
    loop, rewritten): tile operations and whole inner loops alike."""
    found: list[dict[str, Any]] = []
    if stmt is None:
        return found

    def visit(node: Any) -> bool:
        if isinstance(node, tvm.tirx.For):
            found.extend(_summary(s) for s in _body(node.body))
            return False  # its inner loops belong to these statements
        return True

    pre_order_visit(stmt, visit)
    return found


# --- one variant --------------------------------------------------------------------

def lower_variant(payload: dict[str, Any]) -> dict[str, Any]:
    """Lower one variant (see :meth:`VariantSpec.payload`) and return its result."""
    source, name = str(payload["source"]), str(payload["source_name"])
    started = time.perf_counter()
    try:
        namespace = _load(source, name)
        kwargs = {key: ast.literal_eval(value) for key, value in payload["params"]}
        kwargs["num_stages"] = int(payload["num_stages"])
        func, pass_configs = _prim_func(namespace[str(payload["factory"])], kwargs)
        from tilelang.transform import PassConfigKey

        config: dict[str, Any] = {}
        line_key = getattr(PassConfigKey, "TL_EMIT_LINE_DIRECTIVES", None)
        if line_key is not None:
            config[line_key] = True
        config.update(pass_configs)  # the kernel's own configs, as its author compiles it
        after: dict[str, Any] = {}
        log = PassLog(payload.get("ir_passes") or ())
        target = tvm.target.Target(payload["target"])
        with tilelang.transform.PassContext(opt_level=3, config=config,
                                            instruments=[_recorder(after, log)]), target:
            artifact = tilelang.lower(func, target=target, enable_device_compile=False)
        source_cuda = str(artifact.kernel_source or "")
        if not source_cuda.strip():
            raise RuntimeError("TileLang produced no CUDA source")
    except Exception as exc:
        line = exc.line if isinstance(exc, SourceError) else _kernel_line(exc, name)
        return facts.failure("exception", _message(exc), line,
                             seconds=time.perf_counter() - started)
    planned = after.get("tl.PipelinePlanning")
    injected = after.get("tl.InjectSoftwarePipeline")
    merged = after.get("tl.MergeSharedMemoryAllocations")
    specialised = after.get("tl.ProducerConsumerWarpSpecialized")
    ir = {
        "pipeline": pipeline_loops(_main(planned)) if planned else [],
        "shared": block_buffers(_main(injected), "shared") if injected else [],
        "merged": merged_allocations(_device(merged)) if merged else {},
        "warp_specialized": warp_specialization(_main(specialised)) if specialised else None,
        "passes": log.records,
        "pass_diffs": log.diffs,
    }
    cuda = cuda_text.normalise(source_cuda, name)
    return facts.success(ir, cuda, source, str(payload["factory"]), int(payload["num_stages"]),
                         seconds=time.perf_counter() - started)


def _main(mod: Any) -> Any:
    return next(iter(mod.functions.values()))


def _device(mod: Any) -> Any:
    # After SplitHostDevice the module holds the host function and the device kernel.
    for gvar, func in mod.functions.items():
        if str(gvar.name_hint).endswith("_kernel"):
            return func
    return _main(mod)


# --- compiling for a GPU (the ``tlstages bench`` command) ------------------------------

def _build(payload: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    namespace = _load(str(payload["source"]), str(payload["source_name"]))
    kwargs = {key: ast.literal_eval(value) for key, value in payload["params"]}
    kwargs["num_stages"] = int(payload["num_stages"])
    return _prim_func(namespace[str(payload["factory"])], kwargs)


def tensor_params(payload: dict[str, Any]) -> list[dict[str, Any]]:
    """The kernel's tensor parameters (name, shape, dtype) in call order."""
    func, _ = _build(payload)
    return _tensors(func)


def _tensors(func: Any) -> list[dict[str, Any]]:
    found = []
    for param in func.params:
        buffer = func.buffer_map[param]
        found.append({"name": str(buffer.name), "dtype": str(buffer.dtype),
                      "shape": [int(extent) for extent in buffer.shape]})
    return found


def compile_variant(payload: dict[str, Any],
                    target: dict[str, str]) -> tuple[Any, list[dict[str, Any]]]:
    """Compile one variant for a real GPU; returns the kernel and its tensor parameters.
    Needs nvcc and a GPU; the docs never call this."""
    func, pass_configs = _build(payload)
    kernel = tilelang.compile(func, target=target, pass_configs=pass_configs)
    return kernel, _tensors(func)
