"""The hazard check of a lowered variant: its trace (:mod:`.trace`) checked by
:mod:`...core.hazards.check`, with the shared buffers' slots named.

One check walks the device function once per choice the walk cannot make alone
(:mod:`.undecided`: the values of the symbolic sizes :mod:`.sizes` picks, trip counts
that are ranges, block indices, conditions decided alike, mask patterns); every walk
shares one :class:`_Walks`, which holds what they have in common.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Hashable
from dataclasses import dataclass
from typing import Any

import tilelang  # noqa: F401  (puts TileLang's TVM on the path)
from tvm.tirx.stmt_functor import post_order_visit, pre_order_visit

from ...core.hazards import needed
from ...core.hazards.check import not_checked, verdict
from ..ir.schedule import BEFORE_WS
from ..ir.walk import integer, op_name, short, statements, version_dims
from . import intervals, points
from .calls import SYNC_OPS, has_call, shared
from .memo import Memo
from .rules import templates
from .sizes import MAX_WALKS, choices, symbolic
from .trace import Trace
from .undecided import Masked, Ranged, Undecided

Records = list[dict[str, Any]]
# Per shared buffer: its bytes, its versions and its tiles (see :func:`_buffers`).
Shapes = dict[str, tuple[int, int | None, int | None]]


@dataclass
class _Walks:
    """What every walk of one check shares: the device function and its TMA boxes, the
    modules the recorder kept (the buffers' shapes are read from them once, when first
    needed), and what the walks read of the function's structure (:class:`.memo.Memo`)."""

    func: Any
    boxes: dict[str, int]
    kept: dict[str, Any]
    main: Callable[[Any], Any]
    memo: Memo
    shapes: Shapes | None = None
    loops: Collection[str] | None = None  # the kernel's sequential loops' variables
    argument: tuple[int, int] | None = None  # (K0, P) of .sizes: loops walked to it

    def trace(self, sizes: dict[Any, int], trips: dict[Hashable, int],
              masks: dict[str, bool] | None = None,
              decide: Callable[[int], bool] | None = None) -> Trace:
        """One walk, with the sizes, trip counts and mask values given (a walk of fixed
        mask values unrolls every iteration: the patterns differ by iteration)."""
        return Trace(self.func, self.boxes, sizes, trips, self.memo, masks, decide,
                     self.loops, self.argument if masks is None else None)

    def checked(self, trace: Trace) -> tuple[Records, dict[str, Any], dict[str, Any]]:
        """A walk's sized records, its buffers and their verdict (each finding's accesses
        numbered as the code prints their calls: :func:`accesses`)."""
        if not self.shapes:
            self.shapes = _shapes(self.kept, self.main)
        buffers = _buffers(trace.bases, self.shapes)
        records = _sized(trace.records, buffers)
        found = verdict(records, buffers)
        if found.get("findings"):
            if self.memo.printed is None:
                self.memo.printed = printed_calls(self.func)
            accesses(found["findings"], *self.memo.printed)
        return records, buffers, found


def hazards(kept: dict[str, Any], target: dict[str, Any], main: Callable[[Any], Any],
            device: Callable[[Any], Any]) -> dict[str, Any]:
    """The ``hazards`` fact of a lowered variant, from the modules the recorder kept
    (``main``/``device`` pick a module's function). Never raises: what the walk cannot
    decide, or a walk that fails, is "not checked" and why."""
    found: dict[str, Any] = check(kept, target, main, device)["hazards"]
    return found


# Walks (values of the symbolic sizes, trip counts) past which no synchronisation is
# named: each walk's search runs the check once per statement.
_SEARCH_WALKS = 8


def check(kept: dict[str, Any], target: dict[str, Any], main: Callable[[Any], Any],
          device: Callable[[Any], Any], loops: Collection[str] | None = None
          ) -> dict[str, Any]:
    """The ``hazards`` fact and, where it found none, the ``unneeded_sync`` fact
    (:mod:`...core.hazards.needed`: each synchronisation statement no modelled dependence
    needs, by its ``op`` and ``site``, the statement's place among those of its kind in
    the device code). A kernel walked at several sizes or trip counts names a statement
    only where every walk does. ``loops``: the variables of the kernel's sequential
    loops, the only iterations a finding names besides its pipelined loops' (None: every
    loop's). Never raises."""
    intervals.forget()  # the last check's expressions, and the IR they keep alive
    points.forget()
    final = kept.get("final")
    if target.get("kind") != "cuda":
        return {"hazards": not_checked(_not_asynchronous(kept, target, device)),
                "unneeded_sync": []}
    if final is None:
        return {"hazards": not_checked("no final device code"), "unneeded_sync": []}
    clean: list[tuple[Records, dict[str, Any]]] = []
    try:
        func = device(final)
        walks = _Walks(func, _boxes(kept), kept, main, Memo.of(func), _shapes(kept, main),
                       loops)
        assert walks.shapes is not None
        sizes, warmup, cycle = choices(
            func, [count for _, versions, tiles in walks.shapes.values()
                   for count in (versions, tiles) if count], walks.memo.masks,
            walks.memo.synced)
        walks.argument = (warmup, cycle)
        found = _every(walks, sizes, (warmup, cycle), clean)
    except Undecided as exc:
        return {"hazards": not_checked(str(exc)), "unneeded_sync": []}
    except Exception as exc:  # unexpected IR costs the verdict, never the variant
        return {"hazards": not_checked(
            f"the check failed ({type(exc).__name__}: {exc})"[:300]), "unneeded_sync": []}
    named: list[dict[str, Any]] = []
    if found["verdict"] == "none" and 0 < len(clean) <= _SEARCH_WALKS:
        try:
            named = _named_in_every(func, clean, walks.memo.synced)
        except Exception:  # a search that fails names nothing; the verdict stands
            named = []
    return {"hazards": found, "unneeded_sync": named}


def _not_asynchronous(kept: dict[str, Any], target: dict[str, Any],
                      device: Callable[[Any], Any]) -> str:
    """Why a target other than CUDA has no pipeline to check (the check models
    asynchronous copies and their waits, which only CUDA's code has), in words that
    agree with a summary counting its copies: TileLang's HIP ``cp_async_gs`` is a plain
    store (``tl_templates/hip/copy.h``); Metal's copies are loads and stores ordered by
    ``threadgroup_barrier``."""
    if target.get("kind") == "metal":
        return ("no asynchronous pipeline on Metal: its copies are synchronous loads and "
                "stores into threadgroup memory, ordered by threadgroup_barrier, so there is "
                "no asynchronous copy or wait for the check to model (it does not check "
                "where the barriers stand)")
    name = target.get("mcpu") or target["kind"]
    final = kept.get("final")
    try:
        copies = final is not None and has_call(device(final).body, ("ptx_cp_async",))
    except Exception:  # no device function to read: the plain reason
        copies = False
    if copies and target["kind"] == "hip":
        return (f"cp.async on {name} is a synchronous store in TileLang's HIP templates "
                "(tl_templates/hip/copy.h): no asynchronous pipeline to check")
    return f"no asynchronous pipeline on {name}"


def _named_in_every(func: Any, clean: list[tuple[Records, dict[str, Any]]],
                    synced: dict[int, bool] | None = None) -> list[dict[str, Any]]:
    """What :func:`needed.unneeded` names in every clean walk (each with how many
    statements of its kind the code has: the page finds its CUDA line only where the
    listing prints as many). Fewer deletions race no more (the check's findings only grow
    with what is deleted), so a subset of what each walk may delete together is still
    deletable together; of a wait weakened differently, the least weakening is kept."""
    common: dict[tuple[str, Any], dict[str, Any]] | None = None
    for records, buffers in clean:
        numbered, counts = sites(func, records, synced)
        here = {(entry["op"], entry["site"]): {**entry, "of": counts[entry["op"]]}
                for entry in needed.unneeded(numbered, buffers, clean=True)}
        if common is None:
            common = here
            continue
        both: dict[tuple[str, Any], dict[str, Any]] = {}
        for key, entry in common.items():
            other = here.get(key)
            if other is None:
                continue
            weaker = [e for e in (entry, other) if "suffices" in e]
            both[key] = min(weaker, key=lambda e: e["suffices"]) if weaker else entry
        common = both
    return list((common or {}).values())


def _walks_of(kept: dict[str, Any], device: Callable[[Any], Any],
              main: Callable[[Any], Any]) -> _Walks:
    """The walks of a brute-force reference (no shapes read before the first walk)."""
    func = device(kept["final"])
    return _Walks(func, _boxes(kept), kept, main, Memo.of(func))


def at_sizes(kept: dict[str, Any], main: Callable[[Any], Any], device: Callable[[Any], Any],
             values: dict[str, int]) -> dict[str, Any]:
    """The verdict with the symbolic sizes fixed by name (``{"K": 96}``): what
    :func:`hazards` answers for every value at once, for one value (a brute-force reference
    for the argument of :mod:`.sizes`)."""
    intervals.forget()
    walks = _walks_of(kept, device, main)
    walk = {var: values[str(var.name)] for var in symbolic(walks.func)}
    try:
        return _every(walks, [walk], (1 << 20, 0))
    except Undecided as exc:
        return not_checked(str(exc))


def _every(walks: _Walks, sizes: list[dict[Any, int]], argument: tuple[int, int],
           clean: list[tuple[Records, dict[str, Any]]] | None = None) -> dict[str, Any]:
    """The verdict over every value of the kernel's symbolic sizes and every trip count of
    its synchronised loops: one walk per value :func:`.sizes.choices` picks (``sizes``),
    and per trip count of a loop whose trip count is a range (:class:`.undecided.Ranged`),
    each up to the bound of the argument of :mod:`.sizes` (``argument``: its ``K0`` and
    ``P``), which covers every longer loop. The first walk not clean gives the verdict,
    said with the sizes and trip counts that show it. ``clean`` gets each clean walk's
    records and buffers."""
    found: dict[str, Any] = {}
    # A loop or condition -> (what it is, its least and greatest choice walked).
    ranged: dict[Hashable, tuple[Ranged, int, int]] = {}
    count = 0
    for walk in sizes:
        pending: list[dict[Hashable, int]] = [{}]
        while pending:
            trips = pending.pop(0)
            said = ", ".join([*dict.fromkeys(f"{var.name} = {value}"
                                             for var, value in walk.items())]
                             + [ranged[key][0].said(n) for key, n in trips.items()])
            try:
                trace = walks.trace(walk, trips)
            except Ranged as exc:
                count += _ranged(exc, trips, argument, ranged, pending)
                if count > MAX_WALKS * 4:
                    raise Undecided(f"more than {MAX_WALKS * 4} walks: {exc}") from None
                continue
            except Undecided as exc:
                # Outside the argument over every mask pattern: a race some patterns show
                # is still a finding.
                hit = _search(walks, walk, trips, None) if _guarded(walks) else None
                return hit or not_checked(f"{exc} (with {said})" if said else str(exc))
            records, buffers, this = walks.checked(trace)
            if clean is not None and this["verdict"] == "none":
                clean.append((records, buffers))
            if _no_copy(this) and (walk or trips) and found:
                continue  # no trip at all: another walk has the copies
            found = this
            if _no_copy(found):
                continue
            if found["verdict"] == "none":
                continue
            masked = [n for key, n in trips.items() if ranged[key][0].masked]
            if masked:
                # The walk of ``n`` run iterations bounds every pattern's records; the
                # finding is reported as a pattern that shows it (the first ``n`` run).
                hit = _search(walks, walk, {key: n for key, n in trips.items()
                                            if not ranged[key][0].masked}, masked[0])
                if hit is None:
                    return not_checked(f"a race the bound over every pattern of a mask "
                                       f"allows, which no pattern tried shows ({said})")
                return hit
            return _with(found, said)
    if not found:
        return not_checked("no asynchronous copy into shared memory")
    return _covered(found, sizes, ranged, argument)


def _no_copy(found: dict[str, Any]) -> bool:
    """Whether a walk's verdict is that it made no asynchronous copy."""
    return found["verdict"] == "not checked" and "no asynchronous copy" in found["text"]


def _ranged(exc: Ranged, trips: dict[Hashable, int], argument: tuple[int, int],
            ranged: dict[Hashable, tuple[Ranged, int, int]],
            pending: list[dict[Hashable, int]]) -> int:
    """A choice a walk left open: its values to walk queued (up to the bound of the
    periodic argument where they repeat), and how many."""
    warmup, cycle = argument
    top = min(exc.hi, max(exc.lo, warmup) + 2 * cycle) if exc.periodic else exc.hi
    ranged[exc.key] = (exc, exc.lo, top)
    pending += [{**trips, exc.key: n} for n in range(exc.lo, top + 1)]
    return top + 1 - exc.lo


def _with(found: dict[str, Any], said: str) -> dict[str, Any]:
    """A finding said with the choices of the walk that shows it."""
    if said:
        found["text"] += f" (with {said})"
        for finding in found["findings"]:
            finding["text"] += f" (with {said})"
    return found


def _covered(found: dict[str, Any], sizes: list[dict[Any, int]],
             ranged: dict[Hashable, tuple[Ranged, int, int]],
             argument: tuple[int, int]) -> dict[str, Any]:
    """A verdict over every walk, said with what the walks covered."""
    warmup, cycle = argument
    names = ", ".join(dict.fromkeys(str(var.name) for var in sizes[0]))
    covered = [f"every {names}" if names else ""] + [
        exc.covered(lo, top) for exc, lo, top in ranged.values()]
    if found["verdict"] == "none" and (names or ranged):
        found["text"] += f"; for {', '.join(c for c in covered if c)}"
        if names or any(exc.periodic for exc, _, _ in ranged.values()):
            found["text"] += (f" (every synchronised loop's trip count to "
                              f"{warmup + 2 * cycle}: longer loops repeat their states)")
    return found


# Elements of a mask whose values the search of a racing pattern tries each way (the
# elements after them are all false, or all true): 2 ** _PREFIX * 2 walks at most.
_PREFIX = 3


def _guarded(walks: _Walks) -> bool:
    """Whether a synchronisation of the function sits under a mask (:mod:`.masks`)."""
    memo = walks.memo
    return any(type(node).__name__ == "IfThenElse"
               and memo.masks.mask(node.condition) is not None
               and has_call(node, SYNC_OPS, memo.synced)
               for node in statements(walks.func.body))


def _search(walks: _Walks, walk: dict[Any, int], trips: dict[Hashable, int],
            first: int | None) -> dict[str, Any] | None:
    """A mask pattern whose walk races, with the pattern said; None where none of those
    tried does: the first ``first`` elements true and the rest false, then each value of
    the first :data:`_PREFIX` elements met with the rest false, then true. Every pattern
    tried is one the kernel may meet, so what it shows is a finding under the model."""
    def prefix(bits: int, tail: bool) -> Callable[[int], bool]:
        return lambda n: bool(bits >> n & 1) if n < _PREFIX else tail

    tried: list[Callable[[int], bool]] = []
    if first is not None:
        tried.append(lambda n: n < first)
    tried += [prefix(bits, tail) for tail in (False, True) for bits in range(1 << _PREFIX)]
    seen: set[tuple[bool, ...]] = set()
    for decide in tried:
        masks: dict[str, bool] = {}
        try:
            trace = walks.trace(walk, trips, masks, decide)
        except Undecided:
            return None
        if tuple(masks.values()) in seen:
            continue
        seen.add(tuple(masks.values()))
        this = walks.checked(trace)[2]
        if this["verdict"] == "hazard":
            return _with(this, _pattern(masks, trace.decided, trace.form))
    return None


def _pattern(masks: dict[str, bool], where: dict[str, str], form: str) -> str:
    """A mask pattern in words: where its elements are true (``form``: the mask with the
    loop's variable named ``k``)."""
    first = form or next(iter(masks), "")
    if all(masks.values()):
        return f"every element of the mask {first} true"
    if not any(masks.values()):
        return f"every element of the mask {first} false"
    true = [where.get(key) or "before the loop" for key, held in masks.items() if held]
    return f"the mask {first} true at {', '.join(true)} only"


def at_patterns(kept: dict[str, Any], main: Callable[[Any], Any], device: Callable[[Any], Any],
                values: dict[str, int]) -> list[tuple[dict[str, bool], dict[str, Any]]]:
    """The verdict of each pattern of the kernel's masks (each element a condition read
    from memory reads: true or false) at fixed symbolic sizes: the brute-force reference
    for the argument of :func:`.masks.masked_loop`."""
    walks = _walks_of(kept, device, main)
    walk = {var: values[str(var.name)] for var in symbolic(walks.func)}
    out: list[tuple[dict[str, bool], dict[str, Any]]] = []
    pending: list[dict[str, bool]] = [{}]
    while pending:
        masks = pending.pop(0)
        try:
            trace = walks.trace(walk, {}, dict(masks))
        except Masked as exc:
            pending += [{**masks, exc.key: False}, {**masks, exc.key: True}]
            continue
        except Undecided as exc:
            out.append((masks, not_checked(str(exc))))
            continue
        out.append((masks, walks.checked(trace)[2]))
    return out


# The calls an access may come from that the code generator prints one line each, by the
# name the page looks for (``core/results/facts.py``).
_PRINTED = {"ptx_cp_async": "cp.async", "ptx_ldmatrix": "ldmatrix"}


def printed_calls(func: Any) -> tuple[dict[int, tuple[str, int]], dict[str, int]]:
    """Each call an access may come from (by its node's address): its kind and its place
    among the calls of that kind in program order, as the CUDA prints them; and how many
    of each kind the function makes."""
    order: dict[int, tuple[str, int]] = {}
    counts: dict[str, int] = {}

    def visit(node: Any) -> bool:  # True: walk on into the node's children
        if type(node).__name__ == "Call":
            what = _PRINTED.get(short(op_name(node))) or (
                "tl::AllReduce" if templates.followed(node) else None)
            if what is not None:
                order[node.__chandle__()] = (what, counts.get(what, 0))
                counts[what] = counts.get(what, 0) + 1
        return True

    pre_order_visit(func.body, visit)
    return order, counts


def accesses(findings: list[dict[str, Any]], order: dict[int, tuple[str, int]],
             counts: dict[str, int]) -> None:
    """Each finding's accesses with their call's kind and place (``call``, ``n``, ``of``)
    in place of the node's address, which no result may keep."""
    for finding in findings:
        for access in finding.get("accesses", []):
            node = access.pop("node", None)
            if node in order:
                what, place = order[node]
                access.update({"call": what, "n": place, "of": counts[what]})


# The calls each synchronisation record comes from, as the code generator prints them
# (``tvm_storage_sync`` of scope "warp" prints nothing and records nothing).
_SITE_CALLS = {"sync": ("tvm_storage_sync",), "wait": ("ptx_wait_group",),
               "bwait": ("mbarrier_wait_parity",)}


def sites(func: Any, records: list[dict[str, Any]], synced: dict[int, bool] | None = None
          ) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """``records`` with each synchronisation's ``site`` (a node's address) replaced by
    its statement's place among the calls of its kind in the device function, in the
    order the CUDA prints them (a visit in program order): the n-th ``__syncthreads``,
    named barrier or cluster sync, the n-th ``cp_async_wait``, the n-th mbarrier wait;
    and how many statements of each kind there are. ``synced``: the walk's memo of
    :func:`.calls.has_call`; a statement it found to hold no synchronisation is not
    walked again (a synchronisation holds no other: the order of a visit before or after
    a node's children is the same)."""
    order: dict[int, int] = {}
    counts = dict.fromkeys(_SITE_CALLS, 0)
    known = synced or {}

    def visit(node: Any) -> bool:  # False: do not walk the node's children
        if known.get(node.__chandle__()) is False:
            return False
        if type(node).__name__ != "Call":
            return True
        name = short(op_name(node))
        for op, names in _SITE_CALLS.items():
            if name in names:
                if name == "tvm_storage_sync" and not (
                        type(node.args[0]).__name__ == "StringImm"
                        and node.args[0].value in ("shared", "shared.dyn", "cluster")):
                    return True
                order[node.__chandle__()] = counts[op]
                counts[op] += 1
        return True

    pre_order_visit(func.body, visit)
    out = []
    for record in records:
        if "site" in record:
            record = {**record, "site": order.get(record["site"])}
        out.append(record)
    return out, counts


# CUtensorMapDataType -> bytes per element (CUDA's enum order, up to TFLOAT32_FTZ).
_ELEMENT_BYTES = (1, 2, 4, 4, 8, 8, 2, 4, 8, 2, 4, 4, 4)


def _boxes(kept: dict[str, Any]) -> dict[str, int]:
    """Bytes of each TMA descriptor's box, by the descriptor's name, from the arguments the
    host passes to ``__tvm_tensormap_create_tiled`` (kept on the host function until the
    device code is split off): ``(name, desc, dtype, rank, address, dims[rank],
    strides[rank], box[rank], element strides[rank], ...)``. An im2col descriptor, or a
    type past the table, is left out (its copies' bytes are unknown)."""
    for module in kept.values():
        for func in getattr(module, "functions", {}).values():
            args = (func.attrs or {}).get("tma_descriptor_args") \
                if hasattr(func, "attrs") else None
            if not args:
                continue
            boxes: dict[str, int] = {}
            for desc, call in args.items():
                if getattr(call[0], "value", None) != "__tvm_tensormap_create_tiled":
                    continue
                dtype, rank = integer(call[2]), integer(call[3])
                if dtype is None or rank is None or not 0 <= dtype < len(_ELEMENT_BYTES):
                    continue
                size = _ELEMENT_BYTES[dtype]
                for extent in call[5 + 2 * rank:5 + 3 * rank]:
                    size *= integer(extent) or 0
                if size:
                    boxes[str(desc.name)] = size
            return boxes
    return {}


def _buffers(bases_of: dict[Any, tuple[str, int]], shapes: Shapes) -> dict[str, Any]:
    """Per shared buffer: its byte offset in its allocation, its bytes and its versions
    (the leading dimension the pipeliner gave it), for naming slots, from what
    :func:`_shapes` read of the kept modules (the same for every walk)."""
    bases = {str(var.name): offset for var, (_, offset) in bases_of.items()}
    return {name: {"base": bases.get(name, 0), "bytes": size, "versions": versions,
                   "tiles": tiles}
            for name, (size, versions, tiles) in shapes.items()}


def _shapes(kept: dict[str, Any], main: Callable[[Any], Any]) -> Shapes:
    """Per shared buffer: its bytes, its versions and its tiles (see :func:`_buffers`)."""
    # Hopper's warp specialisation versions the buffers before pipeline planning runs.
    planned = kept.get(BEFORE_WS) or kept.get("tl.PipelinePlanning")
    injected = kept.get("tl.InjectSoftwarePipeline")
    versions = version_dims(main(planned), main(injected)) \
        if planned is not None and injected is not None else {}
    sizes: dict[str, int] = {}
    tiles: dict[str, int] = {}  # tiles of a buffer of 3 or more dimensions: its first
    if injected is not None:
        def visit(node: Any) -> None:
            for buffer in getattr(node, "alloc_buffers", None) or []:
                if shared(buffer.data):
                    count = 1
                    for extent in buffer.shape:
                        count *= integer(extent) or 0
                    sizes[str(buffer.name)] = count * buffer.dtype.bits // 8
                    if len(buffer.shape) >= 3:
                        tiles[str(buffer.name)] = integer(buffer.shape[0]) or 1

        post_order_visit(main(injected).body, visit)
    return {name: (size, versions.get(name), tiles.get(name)) for name, size in sizes.items()}


def _sized(records: Records, buffers: dict[str, Any]) -> Records:
    """Give each access whose extent the code does not say (a wgmma operand, a TMA box
    of a tensor copy) the rest of the slot of its buffer it starts in: a ring's copy or
    read stays in one tile (a tile copied as several boxes has each start inside it).
    A buffer the pipeliner did not version but that the kernel declares with 3 or more
    dimensions (``(num_stages, M, K)``, a ring of its own) has a slot per first index: a
    tile operation's operand is 2-D, one first index of it. Such an access is marked
    ``approx``: an overlap beyond its first byte is not known to be one (see
    :func:`...core.hazards.rings._check_data`)."""
    for record in records:
        if record["op"] in ("read", "tma") and record.get("hi") is None:
            size = record.get("bytes")
            if size is not None:
                record["hi"] = record["lo"] + size - 1
                continue
            info = buffers.get(record["buffer"])
            if info is None:
                raise Undecided(f"the extent of an access to {record['buffer']} is unknown")
            slot = max(info["bytes"] // (info["versions"] or info.get("tiles") or 1), 1)
            first = info["base"] + (record["lo"] - info["base"]) // slot * slot
            record["hi"] = first + slot - 1
            record["approx"] = True  # only its first byte is known to be accessed
            if record.get("maybe"):  # a function's: any byte of the slot, or none
                record["lo"] = first
    return records
