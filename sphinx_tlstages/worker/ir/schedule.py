"""Reading a pipelined loop's schedule off TileLang's IR, for the schedule figures.

``tl.InjectSoftwarePipeline`` (``src/transform/inject_pipeline.cc`` in TileLang) replaces
each ``T.Pipelined`` loop by a prologue, a steady-state loop and an epilogue, flattened
into the statement list that held the loop: ``max(stage)`` prologue steps (one anonymous
block each), the body (a block holding a ``For`` that still carries
``tl_pipelined_num_stages``), ``max(stage)`` epilogue steps. Inside, each emitted
statement is a copy of a planned one with the loop variable substituted and versioned
buffers indexed, and bare ``T.ptx_commit_group()`` / ``T.ptx_wait_group(N)`` calls stand
between them. :func:`cp_async_schedules` matches every emitted statement to the planned
statement it copies (:class:`.match.Match`) and says which tile (iteration) it works on
and which buffer version it uses.

:func:`generated_loops` reads the commits, waits and ``__syncthreads`` around and inside
the pipelined loop of the final device IR (what the CUDA is printed from), and
:func:`disagreements` compares the two: the figure is drawn from the first and checked
against the second on every lowering. Warp-specialised loops are read by
:mod:`.ws_schedule`. The output is plain JSON (``Result["schedule"]``; shapes in
:mod:`...core.figures.model`).
"""

from __future__ import annotations

from typing import Any

from .match import identify
from .planned import body, scheduled
from .walk import (
    annotated_loops,
    buffer_names,
    call_of,
    evaluate,
    flatten,
    integer,
    kind,
    label,
    op_name,
    parent_seq,
    short,
    simplified,
    statements,
    strip,
    version_dims,
    visit_calls,
)
from .ws_schedule import warp_specialized_schedule

SCHEDULE_SCHEMA = 1
# The modules the recorder keeps for this reader: before the first run of these passes.
# The module before the first warp-specialisation pass (buffers not yet versioned) is
# kept as BEFORE_WS: TileLang 0.1.15 runs tl.AutoWarpSpecialization first, 0.1.14 has no
# such pass and starts with tl.ProducerConsumerWarpSpecialized.
BEFORE = ("tl.AutoWarpSpecialization", "tl.ProducerConsumerWarpSpecialized")
BEFORE_WS = "before:warp-specialization"
_SYNC = {"ptx_commit_group": "commit", "ptx_wait_group": "wait"}
Json = dict[str, Any]


def _from_version(versions: list[tuple[str, Any, str]]) -> Any | None:
    """The iteration a statement works on, from a version index ``(i) % V`` it uses, when
    the statement names the loop variable nowhere else (``T.gemm`` on shared tiles)."""
    for _name, index, _access in versions:
        if kind(index) in ("FloorMod", "Mod"):
            return index.a
    return None


def _versions(found: list[tuple[str, Any, str]], var: Any | None, at: int) -> list[Json]:
    out: list[Json] = []
    for name, index, access in found:
        value = simplified(index)
        if value is None and var is not None:
            folded = evaluate(index, var, range(at, at + 1))
            value = folded[0] if folded else None
        entry = {"buffer": name, "access": access, "version": value}
        if entry not in out:
            out.append(entry)
    return out


def _emitted(part: Any) -> list[Any]:
    """The statements the pipeliner emitted in a step or the loop body, in order: a block
    holding several (a replayed binding before the statement that reads it) gives each."""
    out: list[Any] = []
    for stmt in flatten(part):
        inner = strip(stmt)
        out.extend(_emitted(inner) if kind(inner) == "SeqStmt" else [stmt])
    return out


def _items(part: Any, planned: list[Any], planned_var: Any, stage: list[int],
           new_var: Any | None, new_min: int, step: int) -> list[Json]:
    """The statements and sync calls of one prologue/epilogue step (``step``: its iteration
    in the pipeline's own count) or of the loop body (``new_var``: the new loop variable)."""
    items: list[Json] = []
    used: set[int] = set()
    depth = max(stage)
    for stmt in _emitted(part):
        call = call_of(stmt)
        if call is not None and short(op_name(call)) in _SYNC:
            entry: Json = {"sync": _SYNC[short(op_name(call))]}
            if entry["sync"] == "wait":
                entry["n"] = integer(call.args[0])
            items.append(entry)
            continue
        if kind(strip(stmt)) == "Evaluate" and integer(strip(stmt).value) == 0:
            continue  # a step with nothing in bounds
        found = identify(stmt, planned, planned_var, used)
        if found is None:
            items.append({"other": label(stmt)})
            continue
        index, match = found
        used.add(index)
        binding, source = match.binding(), "loop_var"
        if binding is None:
            binding, source = _from_version(match.versions), "version"
        value: int | None = None
        if binding is not None and new_var is None:
            value = simplified(binding)
        elif binding is not None:
            folded = evaluate(binding, new_var, range(new_min, new_min + 1))
            value = None if folded is None else folded[0] - new_min
        entry = {"stmt": index, "iter_from": source if value is not None else "stage"}
        if new_var is None:
            entry["iter"] = value if value is not None else step - stage[index]
        else:
            entry["offset"] = value if value is not None else depth - stage[index]
        versions = _versions(match.versions, new_var, new_min)
        if versions:
            entry["versions"] = versions
        predicate = getattr(stmt, "predicate", None)
        if predicate is not None and kind(predicate) != "IntImm":
            entry["guard"] = str(predicate)
        items.append(entry)
    return items


def _is_step(item: Any, planned: list[Any], var: Any) -> bool:
    """Whether ``item`` is a block the pipeliner emitted for this loop: every statement in
    it a copy of a planned one, a sync call, or nothing."""
    if kind(item) not in ("SBlockRealize", "BlockRealize", "SBlock", "Block"):
        return False
    for stmt in _emitted(item):
        call = call_of(stmt)
        if call is not None and short(op_name(call)) in _SYNC:
            continue
        if kind(strip(stmt)) == "Evaluate" and integer(strip(stmt).value) == 0:
            continue
        if identify(stmt, planned, var, set()) is None:
            return False
    return True


def _unrolled_steps(func: Any, planned: list[Any], var: Any, depth: int) -> list[Any] | None:
    """The steps of a loop whose steady state runs once: the pipeliner emits that
    iteration as a block of its own, not a loop, between the prologue and the epilogue
    (``2 * depth + 1`` blocks in a row); None where no statement list holds them."""
    want = 2 * depth + 1
    for seq in statements(func.body):
        if kind(seq) != "SeqStmt":
            continue
        run: list[Any] = []
        for item in [*seq.seq, None]:
            if item is not None and _is_step(item, planned, var):
                run.append(item)
                continue
            if len(run) == want:
                return run
            run = []
    return None


def cp_async_schedules(planned_func: Any, injected_func: Any) -> list[Json]:
    """One entry per ``T.Pipelined`` loop that ``tl.InjectSoftwarePipeline`` rewrote:
    ``planned_func`` after ``tl.PipelinePlanning``, ``injected_func`` after the pipeliner.
    A loop whose steady state runs once has no loop left (``"unrolled": True``): its one
    iteration is read as the body, at ``k = 0``. A loop whose statements are all in one
    stage is left as it was (``"whole": True``): there is nothing to read."""
    planned_loops = annotated_loops(planned_func, "software_pipeline_stage")
    body_loops = iter(annotated_loops(injected_func, "tl_pipelined_num_stages"))
    dims = version_dims(planned_func, injected_func) if planned_loops else {}
    out: list[Json] = []
    for plan in planned_loops:
        ann = plan.annotations
        found_plan = scheduled(plan)
        if not found_plan:
            raise ValueError(f"the loop over {plan.loop_var.name} has "
                             f"{len(ann['software_pipeline_stage'])} stages for "
                             f"{len(body(plan))} statements")
        stmts = [p.stmt for p in found_plan]
        # One entry per statement: a replayed binding runs with its readers.
        stage = [p.drawn_stage for p in found_plan]
        order = [p.order if p.order is not None else -1 for p in found_plan]
        producers = iter(int(a) for a in ann.get("software_pipeline_async_producers", []))
        depth = max(stage)
        trip = integer(plan.extent)
        var = plan.loop_var
        entry: Json = {
            "loop_var": str(var.name),
            "num_stages": int(ann["tl_pipelined_num_stages"])
            if "tl_pipelined_num_stages" in ann else None,
            "stage": stage,
            "order": order,
            "async_producers": [0 if p.replayed else next(producers, 0)
                                for p in found_plan],
            "replayed": [i for i, p in enumerate(found_plan) if p.replayed],
            "statements": [{"ir": label(s)} for s in stmts],
            # This loop's own buffers: another loop's are versioned too.
            "version_dims": {name: size for name, size in dims.items()
                             if any(name in buffer_names(s) for s in stmts)},
            "trip_count": trip if trip is not None else str(plan.extent),
        }
        if len({p.stage for p in found_plan if p.stage is not None}) <= 1:
            # Every statement in one stage: nothing overlaps, and the pipeliner leaves the
            # loop as it was (no prologue, no epilogue, no loop of its own to find).
            entry.update(whole=True, loop={"min": 0, "extent": trip}, body=[])
            prologue, epilogue = [], []
        elif trip is not None and depth and trip - depth == 1:
            steps = _unrolled_steps(injected_func, stmts, var, depth)
            if steps is None:
                raise ValueError(f"the loop over {var.name} runs {trip} times at depth "
                                 f"{depth}, and its steps were not found")
            prologue, epilogue = steps[:depth], steps[depth + 1:]
            once = _items(steps[depth], stmts, var, stage, None, 0, depth)
            entry.update(unrolled=True, loop={"min": 0, "extent": 1},
                         body=[{**{k: v for k, v in item.items() if k != "iter"},
                                "offset": item["iter"]} if "iter" in item else item
                               for item in once])
        else:
            loop = next(body_loops, None)
            if loop is None:
                raise ValueError(f"the pipeliner left no loop over {var.name}")
            found = parent_seq(injected_func, loop)
            seq, at = found if found else ([], -1)
            prologue = seq[max(at - depth, 0):at] if at >= 0 else []
            epilogue = seq[at + 1:at + 1 + depth] if at >= 0 else []
            loop_min = integer(loop.min) or 0
            extent = integer(loop.extent)
            if entry["num_stages"] is None:
                entry["num_stages"] = int(loop.annotations["tl_pipelined_num_stages"])
            entry.update(loop={"min": loop_min, "extent": extent if extent is not None
                               else str(loop.extent)},
                         body=_items(loop.body, stmts, var, stage, loop.loop_var, loop_min, 0))
        entry["prologue"] = [_items(part, stmts, var, stage, None, 0, step)
                             for step, part in enumerate(prologue)]
        entry["epilogue"] = [_items(part, stmts, var, stage, None, 0, (trip or 0) + step)
                             for step, part in enumerate(epilogue)]
        out.append(entry)
    return out


def _syncs(node: Any) -> list[Json]:
    out: list[Json] = []

    def visit(call: Any) -> None:
        name = short(op_name(call))
        if name == "ptx_commit_group":
            out.append({"sync": "commit"})
        elif name == "ptx_wait_group":
            out.append({"sync": "wait", "n": integer(call.args[0])})
        elif name == "tvm_storage_sync":
            out.append({"sync": "syncthreads"})

    visit_calls(node, visit)
    return out


def generated_loops(device_func: Any) -> list[Json]:
    """Each pipelined loop left in the final device IR: its extent and the sync calls
    (commit, wait N, __syncthreads) before, in and after it, in program order (before and
    after: within the statement list holding the loop)."""
    out: list[Json] = []
    for loop in annotated_loops(device_func, "tl_pipelined_num_stages"):
        found = parent_seq(device_func, loop)
        seq, at = found if found else ([], -1)
        out.append({"extent": integer(loop.extent),
                    "before": [s for stmt in seq[:max(at, 0)] for s in _syncs(stmt)],
                    "body": _syncs(loop.body),
                    "after": [s for stmt in seq[at + 1:] for s in _syncs(stmt)] if at >= 0
                    else []})
    return out


def _marks(items: list[Json]) -> list[Json]:
    return [{"sync": i["sync"], **({"n": i["n"]} if "n" in i else {})} for i in items
            if i.get("sync") in ("commit", "wait")]


def _in_final_code(loop: Json) -> bool:
    """Whether the final code keeps a pipelined loop for this one: not where its steady
    state runs once (emitted as a block) or never (the loop runs no more times than its
    depth: later passes drop the empty loop), nor where it was left as it was."""
    extent = loop["loop"]["extent"]
    return not (loop.get("unrolled") or loop.get("whole")
                or (isinstance(extent, int) and extent <= 0))


def _paired(loops: list[Json], generated: list[Json]) -> list[Json]:
    """The final code's loop for each loop read, in the order read: the first left of the
    same extent, else the first left (the kernels of a module need not come in the
    source's order)."""
    left = list(generated)
    out: list[Json] = []
    for loop in loops:
        same = [g for g in left if g["extent"] == loop["loop"]["extent"]]
        chosen = (same or left)[0]
        left.remove(chosen)
        out.append(chosen)
    return out


def disagreements(loops: list[Json], generated: list[Json]) -> list[str]:
    """Where the schedule read after the pipeliner disagrees with the final code (empty
    when they agree): the loop's extent, and the commits and waits before, in and after it."""
    problems: list[str] = []
    loops = [loop for loop in loops if _in_final_code(loop)]
    if len(loops) != len(generated):
        return [f"{len(loops)} pipelined loop(s) read, {len(generated)} in the final code"]
    for i, (loop, gen) in enumerate(zip(loops, _paired(loops, generated), strict=True)):
        prologue = _marks([s for step in loop["prologue"] for s in step])
        epilogue = _marks([s for step in loop["epilogue"] for s in step])
        before = _marks(gen["before"])
        if before[len(before) - len(prologue):] != prologue:
            problems.append(f"loop {i}: the prologue's commits and waits differ")
        if _marks(gen["body"]) != _marks(loop["body"]):
            problems.append(f"loop {i}: the steady state's commits and waits differ")
        if _marks(gen["after"])[:len(epilogue)] != epilogue:
            problems.append(f"loop {i}: the epilogue's commits and waits differ")
        # A symbolic extent is printed as the IR has it at each pass: numbers compare.
        read_extent = loop["loop"]["extent"]
        if isinstance(gen["extent"], int) and isinstance(read_extent, int) \
                and gen["extent"] != read_extent:
            problems.append(f"loop {i}: extent {loop['loop']['extent']} read, "
                            f"{gen['extent']} in the final code")
    return problems


def read(kept: dict[str, Any], main: Any, device: Any) -> Json | None:
    """The schedule facts from the modules the recorder kept (after each watched pass by
    its name, :data:`BEFORE_WS` before the first pass of :data:`BEFORE`, ``"final"`` after the
    last pass); ``main``/``device`` pick a module's function. None: nothing pipelined."""
    planned = kept.get("tl.PipelinePlanning")
    injected = kept.get("tl.InjectSoftwarePipeline")
    before_ws = kept.get(BEFORE_WS)
    specialised = kept.get("tl.ProducerConsumerWarpSpecialized")
    loops = cp_async_schedules(main(planned), main(injected)) \
        if planned is not None and injected is not None else []
    warp = warp_specialized_schedule(main(before_ws), main(specialised)) \
        if before_ws is not None and specialised is not None else None
    if not loops and warp is None:
        return None
    out: Json = {"schema": SCHEDULE_SCHEMA, "loops": loops, "warp_specialized": warp}
    final = kept.get("final")
    if any(_in_final_code(loop) for loop in loops) and final is not None:
        # Every kernel's loops: a prim_func with two T.Kernel blocks becomes two device
        # functions, each with its own pipelined loop.
        kernels = [device(final), *(f for f in final.functions.values()
                                    if not f.same_as(device(final)))]
        generated = [found for func in kernels for found in generated_loops(func)]
        out["generated"] = generated
        out["problems"] = disagreements(loops, generated)
    return out
