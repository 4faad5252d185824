"""The synchronisation trace of a kernel's final device IR, for the hazard check: the walk.

It walks the device function as each thread runs it: every loop that holds a
synchronisation (the pipelined loop, a loop around it) is unrolled with its variable
known, every other loop is summarised by bounding its variable; each access to shared
memory becomes a byte interval of its allocation, bounded over the thread indices and
the summarised loops (TVM's integer-bound analysis). Out come plain records (see
:mod:`...core.hazards.check`, which checks them): cp.async copies, commits, waits,
``__syncthreads``, shared reads; on Hopper the roles of a warp-specialised loop and
their barrier operations. Where the walk cannot decide (a synchronisation under a
condition it cannot evaluate, a loop of unknown length, an operation on shared memory it
does not model) it raises :class:`.undecided.Undecided`, which the check reports as "not
checked".

The walk is this class; around it, each in its own module: what each intrinsic records
(:mod:`.rules`, by the intrinsic's name), a synchronisation under a condition on the
threads (:mod:`.branches`), loops a mask read from memory runs or skips (:mod:`.masks`),
what is read of the IR once (:mod:`.memo`), and the choices a walk leaves to the driver
(:mod:`.undecided`).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Collection, Hashable
from typing import Any

import tilelang  # noqa: F401  (puts TileLang's TVM on the path)
from tilelang import tvm
from tvm.tirx.stmt_functor import post_order_visit

from ..ir.walk import integer, kind, statements
from . import branches, masks, ownership, periodic, rules
from .calls import (
    PURE_CALLS,
    SITE_OPS,
    SYNC_OPS,
    call_name,
    has_call,
    is_global,
    reads_memory,
    scalar_key,
    shared,
    shared_address,
)
from .intervals import Interval, Unbounded, interval, narrowed
from .memo import Flat, Memo
from .ownership import Owned
from .rules import templates
from .undecided import MAX_STEPS, OPEN, Blocked, Ranged, Undecided

Record = dict[str, Any]


class Trace:
    """One walk of a device function; :attr:`records` is its output.

    ``sizes`` fixes the kernel's symbolic sizes, ``trips`` the driver's choice for each
    :class:`.undecided.Ranged` met before, ``memo`` what other walks of the function read
    of it; ``masks`` (an element's value by its key, filled by ``decide(n)`` for the n-th
    element met) walks fixed mask values instead of :func:`.masks.masked_loop`'s bound."""

    def __init__(self, func: Any, boxes: dict[str, int] | None = None,
                 sizes: dict[Any, int] | None = None,
                 trips: dict[Hashable, int] | None = None,
                 memo: Memo | None = None,
                 masks: dict[str, bool] | None = None,
                 decide: Callable[[int], bool] | None = None,
                 loops: Collection[str] | None = None,
                 argument: tuple[int, int] | None = None) -> None:
        self.env: dict[Any, Interval] = {}  # each variable's values: a point when known
        # The kernel's symbolic sizes, each fixed for this walk (:mod:`.sizes` picks them).
        self.sizes = dict(sizes or {})
        self.env.update({var: (value, value) for var, value in self.sizes.items()})
        self.open: dict[int, bool] = {}  # whether an expression uses a symbolic size
        # The trip count of each synchronised loop whose extent is a range, by the extent,
        # for this walk, and the outcome of each condition the block decides alike that the
        # walk cannot, by its statement (the driver tries each; see :class:`Ranged`).
        self.trips = dict(trips or {})
        self.forked: set[Hashable] = set()  # the conditions met in this walk
        # The variables whose value may differ between the block's threads: the thread
        # indices and what is bound to an expression of them.
        self.varying: set[Any] = set()
        self.blocks: dict[Any, tuple[str, int | None]] = {}  # block index -> (tag, extent)
        # Inside code walked once for many runs: a scalar's store leaves it unknown.
        self.summarised = 0
        self.bases: dict[Any, tuple[str, int]] = {}  # handle var -> (allocation, byte offset)
        self.records: list[Record] = []
        # The iterations of the loops walked unrolled (``k=3``); whether each is said in a
        # record's ``at``: the kernel's own sequential loops (``loops``: their variables;
        # None: every loop) and its pipelined loops, never an index of TileLang's own
        # code (a reduction's unrolled loop), which no page names.
        self.where: list[str] = []
        self.shown: list[bool] = []
        # The shown loops walked whole at the kernel's outermost level, in order (each
        # variable's name and the role running it): a record made outside every shown
        # loop says which it comes before or after.
        self.passed: list[tuple[str, str]] = []
        self.loops = loops
        # ``(K0, P)`` of :mod:`.sizes`: a loop of many iterations is walked to its period
        # (:mod:`.periodic`); None (a brute-force reference): every iteration.
        self.argument = argument
        self.steps = 0
        self.role = "all"  # "producer"/"consumer" inside a warp-specialised branch
        self.group: Interval = (0, 0)  # the threads of the role (all: every thread)
        self.aliases: set[Any] = set()  # variables bound to threadIdx.x itself
        # The integer names the kernel binds and their values, in binding order: each
        # thread's bytes are worked out with them evaluated again (:mod:`.ownership`).
        self.definitions: dict[Any, Any] = {}
        self.spans: list[Interval] = []  # the running threads, as ranges
        self.elected = False  # inside a branch one thread runs
        self.threads: Any = None  # threadIdx.x
        self.descriptors: dict[Any, list[Any]] = {}  # wgmma descriptor -> [region]
        self.batch: set[tuple[Any, ...]] = set()  # regions read by this wgmma batch
        self.umma: list[Record] = []  # tcgen05 MMA reads no commit tracks yet
        self.commits = 0  # tcgen05 commits so far (each one's number names it)
        self.boxes = boxes or {}  # TMA descriptor -> bytes of its box
        self.fallback = False  # inside the else of a cluster rank's multicast branch
        self.last: Any = None  # the last region bounded: (index, env, offset, size, lanes)
        self.memo = Memo.of(func) if memo is None else memo
        # Conditions read from memory (:mod:`.masks`). Either each element's value is
        # fixed (``masks``, filled by ``decide(n)`` for the n-th element met, else
        # :class:`.undecided.Masked`), or a loop the mask guards runs a number of its
        # iterations (``trips``) with its variable any of its values (``masking``: the
        # mask's form, its value, the loop's variable).
        self.masks = masks
        self.decide = decide
        self.decided: dict[str, str] = {}  # an element decided -> where (``k=3``)
        self.form = ""  # the form of the first mask decided (:meth:`.Masks.form`)
        self.masking: tuple[str, bool, Any] | None = None
        self.masked_key: Hashable = None  # the trip-count key of the masked loop walked
        self.walk(func.body)

    # --- expressions ----------------------------------------------------------------
    def bound(self, expr: Any, what: str) -> Interval:
        try:
            return interval(expr, self.env)
        except Unbounded as exc:
            raise Undecided(f"{what} cannot be bounded ({exc})") from None

    def constant(self, expr: Any, what: str) -> int:
        lo, hi = self.bound(expr, what)
        if lo != hi:
            raise Undecided(f"{what} is not known")
        return lo

    def uses_size(self, expr: Any) -> bool:
        """Whether an expression depends on one of the symbolic sizes."""
        if not self.sizes:
            return False
        key = expr.__chandle__() if hasattr(expr, "__chandle__") else id(expr)
        found = self.open.get(key)
        if found is None:
            hits: list[bool] = []
            post_order_visit(expr, lambda node: hits.append(node in self.sizes)
                             if kind(node) == "Var" else None)
            found = self.open[key] = any(hits)
        return found

    def uniform(self, expr: Any) -> bool:
        """Whether every thread of the block gives ``expr`` the same value: it uses no
        thread index (nor a variable bound to one), and reads no thread's local memory
        other than a scalar the walk knows to be one value."""
        found = [True]

        def visit(node: Any) -> None:
            what = kind(node)
            if what == "Var" and node in self.varying:
                found[0] = False
            elif what == "BufferLoad" and not (shared(node.buffer.data)
                                               or is_global(node.buffer.data)):
                known = self.env.get((node.buffer.data, "scalar"))
                if known is None or known[0] != known[1]:
                    found[0] = False
            elif what == "Call" and call_name(node) not in PURE_CALLS:
                found[0] = False  # a lane's or a warp's index, an election: per thread

        post_order_visit(expr, visit)
        return found[0]

    def extent(self, expr: Any, what: str) -> Interval:
        """A loop's trip count; one read from memory (a sequence's start in a cumulative
        array, ``s_cum[b + 1] - s_cum[b]``) is any count, like a symbolic size's."""
        try:
            return self.bound(expr, what)
        except Undecided:
            if not reads_memory(expr):
                raise
            return 0, OPEN

    def base(self, var: Any) -> tuple[str, int]:
        return self.bases.get(var, (str(var.name), 0))

    def region(self, buffer: Any, indices: list[Any]) -> tuple[str, str, int, int]:
        """(buffer, allocation, first byte, last byte) of a load or store's elements."""
        key = (buffer.__chandle__(), *[index.__chandle__() for index in indices])
        known = self.memo.flats.get(key)
        if known is None:  # the flat index built once (TVM nodes): an unrolled loop asks again
            known = self.memo.flats[key] = self.flat(buffer, indices)
        flat, size, lanes, name, data = known
        lo, hi = self.bound(flat, str(buffer.name))
        root, offset = self.base(data)
        self.last = (flat, dict(self.env), offset, size, lanes)
        return name, root, offset + lo * size, offset + (hi + lanes) * size - 1

    @staticmethod
    def flat(buffer: Any, indices: list[Any]) -> Flat:
        """A load or store's element offset in its buffer's data (an expression), its
        element's bytes, its lanes, and its data's name and variable."""
        size = buffer.dtype.bits * buffer.dtype.lanes // 8
        lanes = 1
        if len(indices) == 1:
            index = indices[0]
        else:
            index, stride = 0, 1
            for i, extent in reversed(list(zip(indices, buffer.shape, strict=True))):
                index, stride = index + i * stride, stride * extent
        if kind(index) == "Ramp":
            if integer(index.stride) != 1:
                raise Undecided(f"a strided vector access to {buffer.name}")
            lanes, index = int(index.lanes), index.base
        return buffer.elem_offset + index, size, lanes, str(buffer.data.name), buffer.data

    def per_thread(self, extra: int = 0) -> Callable[[], Owned | None]:
        """The bytes each thread touches in the last region bounded
        (:func:`.ownership.per_thread`: worked out only where the check asks)."""
        index, env, offset, size, lanes = self.last
        names = (self.threads, *self.aliases) if self.threads is not None else ()
        return ownership.per_thread(index, env, offset, size, lanes, extra, names,
                                    self.definitions, self.blocks)

    def whole(self, buffer: Any) -> tuple[str, str, int, int]:
        """(buffer, allocation, first byte, last byte) of every element of a buffer."""
        size = buffer.dtype.bits * buffer.dtype.lanes // 8
        count: Any = 1
        for extent in buffer.shape:
            count = count * extent
        first = self.bound(buffer.elem_offset, str(buffer.name))[0]
        last = self.bound(buffer.elem_offset + count, str(buffer.name))[1]
        root, offset = self.base(buffer.data)
        return str(buffer.data.name), root, offset + first * size, offset + last * size - 1

    def pointer(self, arg: Any) -> tuple[str, str, int, int] | None:
        """The shared region ``&buffer[indices]`` points to (None: not such a pointer)."""
        key = arg.__chandle__()
        pointers = self.memo.pointers
        if key not in pointers:
            pointers[key] = None
            load = shared_address(arg)
            if load is not None:
                pointers[key] = (load.buffer, list(load.indices))
            elif kind(arg) == "Call" and call_name(arg) == "handle_add_byte_offset":
                # a slot past the buffer's first
                pointers[key] = (arg.args[0], arg.args[1], None)
        found = pointers[key]
        if found is None:
            return None
        if len(found) == 3:
            inner = self.pointer(found[0])
            if inner is None:
                return None
            shift = self.constant(found[1], "a pointer's byte offset")
            buffer, root, lo, hi = inner
            return buffer, root, lo + shift, hi + shift
        return self.region(*found)

    def pointed(self, arg: Any, elements: int = 1
                ) -> tuple[str, str, int, int | None, Callable[[], Owned | None] | None] | None:
        """(buffer, allocation, first byte, last byte, each thread's bytes) of the shared
        elements a pointer argument names: ``&buffer[i]`` and the ``elements`` from it, or
        ``tvm_access_ptr(type, data, offset, extent, mask)``; None for any other argument
        (a pointer into global or local memory). An element the data picks (a histogram's
        bin) is any of its buffer's: no last byte (the buffer's slot, filled in by
        ``verdict._sized``), nor bytes per thread."""
        load = shared_address(arg)
        if load is not None:
            for index in load.indices:  # the shared values that pick the element
                self.reads(index)
            size = load.buffer.dtype.bits * load.buffer.dtype.lanes // 8
            try:
                buffer, root, lo, hi = self.region(load.buffer, list(load.indices))
            except Undecided:
                if not any(reads_memory(index) for index in load.indices):
                    raise
                root, lo = self.base(load.buffer.data)
                return str(load.buffer.data.name), root, lo, None, None
            extra = (elements - 1) * size
            return buffer, root, lo, hi + extra, self.per_thread(extra)
        if kind(arg) != "Call" or call_name(arg) != "tvm_access_ptr" \
                or not shared(arg.args[1]):
            return None
        data, offset, extent = arg.args[1], arg.args[2], arg.args[3]
        self.reads(offset)
        size = max(arg.args[0].dtype.bits * arg.args[0].dtype.lanes // 8, 1)
        count = self.constant(extent, f"the extent of a pointer into {data.name}")
        lo, hi = self.bound(offset, str(data.name))
        root, base = self.base(data)
        names = (self.threads, *self.aliases) if self.threads is not None else ()
        own = ownership.per_thread(offset, dict(self.env), base, size, count, 0, names,
                                   self.definitions, self.blocks)
        return (str(data.name), root, base + lo * size, base + (hi + count) * size - 1,
                own)

    # --- records --------------------------------------------------------------------
    def emit(self, record: Record) -> None:
        if len(self.spans) > 1:
            raise Undecided(f"code run by threads in {len(self.spans)} ranges, from "
                            f"{self.spans[0][0]} to {self.spans[-1][1]} (a role is one range)")
        record["at"] = " ".join(w for w, shown in zip(self.where, self.shown, strict=True)
                                if shown)
        if not record["at"]:
            # Read once the walk is done, when every loop it passes is known.
            record["outside"] = functools.partial(outside, self.passed, len(self.passed),
                                                  self.role)
        record["role"] = self.role
        record["group"] = self.group
        if self.threads is not None and self.threads in self.env:
            record["threads"] = self.env[self.threads]  # the threads that execute it
        self.records.append(record)

    def read_at(self, load: Any, how: str, extra: int = 0) -> None:
        """A read of the shared elements ``load`` names (``extra``: bytes past the last
        element's first byte, for an instruction that reads from a thread's address)."""
        buffer, root, lo, hi = self.region(load.buffer, list(load.indices))
        self.emit({"op": "read", "buffer": buffer, "root": root, "lo": lo, "hi": hi + extra,
                   "how": how})

    def store(self, buffer: Any, indices: list[Any], wide: bool = False) -> None:
        """A store the threads make into shared memory (outside the check's model: the
        redundant-synchronisation search keeps every barrier one may need). Bytes it
        cannot bound are the whole allocation's, never a reason to stop the walk;
        ``wide``: a matrix store through a pointer, taken as the rest of the buffer."""
        try:
            name, root, lo, hi = self.region(buffer, indices)
            if wide:
                hi = 1 << 62
        except Undecided:
            name, (root, lo), hi = str(buffer.data.name), self.base(buffer.data), 1 << 62
        self.emit({"op": "store", "buffer": name, "root": root, "lo": lo, "hi": hi})

    def arrivals(self) -> int:
        """The arrivals one executing of a statement makes: its threads, or one elected."""
        if self.elected:
            return 1
        lo, hi = self.env[self.threads] if self.threads is not None else (0, 0)
        return hi - lo + 1

    # --- statements -----------------------------------------------------------------
    def walk(self, stmt: Any) -> None:
        what = kind(stmt)
        handler: Callable[[Any], None] | None = getattr(self, f"_{what}", None)
        if handler is not None:
            handler(stmt)
        elif hasattr(stmt, "body") and stmt.body is not None:
            self.walk(stmt.body)

    def _SeqStmt(self, stmt: Any) -> None:
        key = stmt.__chandle__()
        items = self.memo.seqs.get(key)
        if items is None:
            items = self.memo.seqs[key] = list(stmt.seq)
        for item in items:
            self.walk(item)

    def _AttrStmt(self, stmt: Any) -> None:
        if stmt.attr_key == "thread_extent":
            var, tag = stmt.node.var, str(stmt.node.thread_tag)
            if tag.startswith("blockIdx") and self.uses_size(stmt.value):
                # A grid from a symbolic size: any block index, whatever size was fixed.
                self.env[var] = (0, OPEN)
                self.blocks[var] = (tag, None)
                self.walk(stmt.body)
                return
            extent = self.constant(stmt.value, f"the extent of {var.name}")
            self.env[var] = (0, extent - 1)
            if tag.startswith("blockIdx"):
                self.blocks[var] = (tag, extent)
                if ("block", tag) in self.trips:  # this walk's block (:class:`Blocked`)
                    self.env[var] = (self.trips["block", tag],) * 2
            if str(stmt.node.thread_tag) == "threadIdx.x":
                self.threads, self.group = var, (0, extent - 1)
                self.spans = [self.group]
            if str(stmt.node.thread_tag).startswith("threadIdx"):
                self.varying.add(var)
        self.walk(stmt.body)

    def _Bind(self, stmt: Any) -> None:
        value = stmt.value
        if not self.uniform(value):
            self.varying.add(stmt.var)
        if str(stmt.var.dtype).startswith(("int", "uint")):
            self.definitions[stmt.var] = value
        if kind(value) == "Call" and call_name(value) == "handle_add_byte_offset":
            root, offset = self.base(value.args[0])
            extra = self.constant(value.args[1], f"the offset of {stmt.var.name}")
            self.bases[stmt.var] = (root, offset + extra)
        elif stmt.var in self.sizes:
            pass  # a length read from memory: fixed for this walk, as a symbolic size
        elif self.threads is not None and value.same_as(self.threads):
            self.aliases.add(stmt.var)  # ``tid = T.get_thread_binding()``: a second name
            self.env[stmt.var] = self.env[self.threads]
        elif str(stmt.var.dtype).startswith(("int", "uint", "bool")):
            with contextlib.suppress(Unbounded):  # an index that uses it says so
                self.env[stmt.var] = interval(value, self.env)

    def _LetStmt(self, stmt: Any) -> None:
        self._Bind(stmt)
        self.walk(stmt.body)

    def _For(self, stmt: Any) -> None:
        name = f"the loop over {stmt.loop_var.name}"
        if not self.has_sync(stmt.body):
            self.summarise(stmt, name)
            return
        try:
            lo_c = self.constant(stmt.min, name)
        except Undecided:
            self.by_block(stmt.min, name)
            raise
        low, high = self.extent(stmt.extent, name)
        if low != high:
            # Loops of one extent run as often (a warp-specialised loop's two roles): one
            # choice for both.
            key = int(tvm.ir.structural_hash(stmt.extent))
            if key not in self.trips:
                raise Ranged(key, max(low, 0), max(high, 0), name)
            low = high = self.trips[key]
        form = masks.loop_mask(self, stmt) if self.masks is None else None
        if form is not None:
            masks.masked_loop(self, stmt, form, lo_c, max(low, 0))
            return
        shown = self.loops is None or str(stmt.loop_var.name) in self.loops \
            or "tl_pipelined_num_stages" in (stmt.annotations or {})
        warmup, cycle = self.argument or (0, 0)
        repeats = periodic.Repeats(self, warmup, cycle) if cycle else None
        value, end = lo_c, lo_c + max(low, 0)
        while value < end:
            self.steps += 1
            if self.steps > MAX_STEPS:
                raise Undecided(f"more than {MAX_STEPS} loop iterations to unroll")
            if repeats is not None:
                repeats.start()
            before = self.steps
            self.env[stmt.loop_var] = (value, value)
            self.enter(f"{stmt.loop_var.name}={value}", shown)
            try:
                self.walk(stmt.body)
            finally:
                self.leave()
            value += 1
            # A long loop, or one whose iterations would take most of the steps allowed
            # (a loop around a pipelined loop), is walked to its period once it repeats.
            long = end - lo_c > periodic.LONG \
                or self.steps + (end - value) * (self.steps - before + 1) > MAX_STEPS // 2
            skipped = repeats.skip(end - value) if repeats is not None and long else 0
            if skipped:  # on to the last iterations (:mod:`.periodic`)
                value, repeats = value + skipped, None
        self.env.pop(stmt.loop_var, None)
        if shown:
            self.passing(stmt.loop_var)

    def passing(self, var: Any) -> None:
        """A shown loop walked whole: where no shown loop holds it, the records made from
        now on come after it."""
        if not any(self.shown):
            self.passed.append((str(var.name), self.role))

    def enter(self, iteration: str, shown: bool = True) -> None:
        """Walk into an iteration (``k=3``), said in the records' ``at`` where ``shown``."""
        self.where.append(iteration)
        self.shown.append(shown)

    def leave(self) -> None:
        self.where.pop()
        self.shown.pop()

    def summarise(self, stmt: Any, name: str) -> None:
        """A loop without synchronisation, walked once with its variable over its range."""
        lo, extent = self.bound(stmt.min, name), self.extent(stmt.extent, name)
        if self.uses_size(stmt.extent):  # any trip count: the fixed size is one of many
            extent = (extent[0], OPEN)
        if extent[1] <= 0:
            return
        self.env[stmt.loop_var] = (lo[0], lo[1] + extent[1] - 1)
        self.forget(stmt.body)
        self.summarised += 1
        try:
            self.walk(stmt.body)
        finally:
            self.summarised -= 1
        self.forget(stmt.body)

    def by_block(self, start: Any, name: str) -> None:
        """A synchronised loop's first iteration that is not one value: raise
        :class:`Blocked` for a block index it depends on that this walk has not fixed, in a
        grid of known extent (one of symbolic extent is said plainly)."""
        used: list[Any] = []
        post_order_visit(start, lambda node: used.append(node)
                         if kind(node) == "Var" and node in self.blocks else None)
        for var in used:
            tag, extent = self.blocks[var]
            if self.env[var][0] == self.env[var][1]:
                continue
            if extent is None:
                raise Undecided(f"{name} starts at a value set by {var.name}, in a grid of "
                                "symbolic extent")
            raise Blocked(("block", tag), extent - 1, str(var.name), name)

    def _IfThenElse(self, stmt: Any) -> None:
        try:
            decided = interval(stmt.condition, self.env)
        except Unbounded:
            decided = (0, 1)
        if decided[0] == decided[1]:
            branch = stmt.then_case if decided[0] else stmt.else_case
            if branch is not None:
                self.walk(branch)
            return
        if (self.masks is not None or self.masking is not None) \
                and masks.by_mask(self, stmt):
            return
        if self.has_sync(stmt.then_case) or (stmt.else_case is not None
                                         and self.has_sync(stmt.else_case)):
            branches.branch(self, stmt)
            return
        # Accesses under a condition: those of both branches, each with what the
        # condition says of a variable's range (``tx < 64``: a copy by half the threads).
        self.forget(stmt)
        self.summarised += 1
        for case, holds in ((stmt.then_case, True), (stmt.else_case, False)):
            if case is None:
                continue
            ranges = narrowed(stmt.condition, holds, self.env)
            saved = {var: self.env[var] for var in ranges}
            self.env.update(ranges)
            try:
                self.walk(case)
            finally:
                self.env.update(saved)
        self.summarised -= 1
        self.forget(stmt)

    def _Evaluate(self, stmt: Any) -> None:
        value = stmt.value
        if kind(value) == "Call":
            self.call(value)
        else:
            self.reads(value)

    def _BufferStore(self, stmt: Any) -> None:
        handle = stmt.__chandle__()
        known = self.memo.stores.get(handle)
        if known is None:  # read from TVM once: an unrolled loop stores here each time
            known = self.memo.stores[handle] = (stmt.value, list(stmt.indices),
                                                shared(stmt.buffer.data), scalar_key(stmt))
        value, indices, into_shared, key = known
        self.reads(value)
        for index in indices:
            self.reads(index)
        if into_shared:
            self.store(stmt.buffer, indices)
        if key is not None:  # a counter or phase the kernel keeps (``T.alloc_var``)
            try:
                if self.summarised:
                    raise Unbounded("stored in code walked once for many runs")
                self.env[key] = interval(value, self.env)
            except Unbounded:
                self.env.pop(key, None)

    def forget(self, stmt: Any) -> None:
        """Drop the values of the scalars ``stmt`` stores to: code walked once for many
        runs (a summarised loop, both branches of a condition) leaves them unknown."""
        handle = stmt.__chandle__()
        found = self.memo.stored.get(handle)
        if found is None:
            found = self.memo.stored[handle] = [scalar_key(node) for node in statements(stmt)
                                                if kind(node) == "BufferStore"]
        for key in found:
            if key is not None:
                self.env.pop(key, None)

    def has_sync(self, stmt: Any) -> bool:
        return has_call(stmt, SYNC_OPS, self.memo.synced)

    # --- calls ----------------------------------------------------------------------
    def call(self, call: Any) -> None:
        """A call: what its intrinsic's rule records (:mod:`.rules`)."""
        # An unrolled loop walks the same calls once per iteration: their names and
        # arguments are read from TVM once.
        key = call.__chandle__()
        known = self.memo.calls.get(key)
        if known is None:
            known = self.memo.calls[key] = (call_name(call), list(call.args))
        name, args = known
        first = len(self.records)
        rules.apply(self, name, args)
        # Every dynamic instance of a synchronisation statement names the statement
        # (its node's address while the IR lives; :func:`.verdict.sites` numbers them).
        # Each access names its call too, which :func:`.verdict.accesses` numbers the way
        # the CUDA prints it (a finding is said at the lines of its two accesses).
        for record in self.records[first:]:
            if record["op"] in SITE_OPS:
                record["site"] = key
            elif record["op"] in ("copy", "read"):
                record.setdefault("node", key)

    def reads(self, expr: Any) -> None:
        """Every shared element an expression loads."""
        handle = expr.__chandle__()
        cached = self.memo.loads.get(handle)
        if cached is None:
            cached = self.memo.loads[handle] = _loads(expr)
        found, passed, known, helpers = cached
        if passed:
            raise Undecided(f"a pointer into {passed[0]} is passed to a helper the check "
                            "does not know")
        for call in known:
            templates.all_reduce(self, call)
        for function, pointer in helpers:
            templates.helper(self, function, pointer)
        for load in found:
            try:
                buffer, root, lo, hi = self.region(load.buffer, list(load.indices))
                own: Any = self.per_thread()
            except Undecided:
                if not any(reads_memory(index) for index in load.indices):
                    raise
                # An index read from memory (``s_cum[group[0]]``, the group a search
                # found): any element of the buffer, so every byte of it.
                buffer, root, lo, hi = self.whole(load.buffer)
                own = None
            self.emit({"op": "read", "buffer": buffer, "root": root, "lo": lo, "hi": hi,
                       "how": "load", "own": own})


def _loads(expr: Any) -> tuple[list[Any], list[str], list[Any], list[tuple[str, Any]]]:
    """An expression's shared loads, the shared buffers it passes a pointer to, the calls
    of TileLang's templates it makes whose arguments the check follows itself (those
    arguments, not what they hold, are left out of the first two), and the pointers into
    shared memory it hands an extern function (with the function's name)."""
    candidates: list[Any] = []  # loads and address_of calls, in post-order
    known: list[Any] = []
    externs: dict[int, str] = {}  # an extern function's argument -> the function

    def visit(node: Any) -> None:
        what = kind(node)
        if what == "BufferLoad":
            candidates.append(node)
        elif what == "Call":
            name = call_name(node)
            if name == "address_of":
                candidates.append(node)
            elif templates.followed(node):
                known.append(node)
            elif name in ("call_extern", "call_pure_extern") and node.args \
                    and kind(node.args[0]) == "StringImm":
                externs.update({arg.__chandle__(): str(node.args[0].value)
                                for arg in node.args[1:]})

    post_order_visit(expr, visit)
    # Read after the walk, which is then whole: an argument is known to be followed only
    # once its call (after it, in post-order) is seen.
    followed = {arg.__chandle__() for call in known for arg in call.args}
    found: list[Any] = []
    passed: list[str] = []  # raised after the visit (TVM wraps what a visitor raises)
    helpers: list[tuple[str, Any]] = []
    for node in candidates:
        if node.__chandle__() in followed:
            continue
        if kind(node) == "BufferLoad":
            if shared(node.buffer.data):
                found.append(node)
        elif shared(node.args[0].buffer.data):
            function = externs.get(node.__chandle__())
            if function is not None:
                helpers.append((function, node))
            else:
                passed.append(str(node.args[0].buffer.name))
    return found, passed, known, helpers


_ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth")


def outside(loops: list[tuple[str, str]], passed: int, role: str = "all") -> str:
    """Where a record made outside every shown loop lies, once the walk is done
    (``loops``: the shown loops it walked at the outermost level, each with the role
    running it; ``passed``: how many of them came before the record; ``role``: the
    record's): ``before the loop over k``, ``after the second loop over k`` (an ordinal
    where two loops have one variable's name), ``before the consumer's loop over k`` (a
    role's own loops only, in a warp-specialised kernel); ``""`` where there are none."""
    mine = [(i, loop) for i, loop in enumerate(loops)
            if role == "all" or loop[1] in (role, "all")]
    if not mine:  # a kernel without such loops: nothing to place it by
        return ""
    before = sum(1 for i, _ in mine if i < passed)
    index = min(before, len(mine) - 1)
    name, owner = mine[index][1]
    same = [i for i, (_, loop) in enumerate(mine) if loop == (name, owner)]
    nth = same.index(index)
    which = f"{_ORDINALS[nth]} " if len(same) > 1 and nth < len(_ORDINALS) else ""
    loop = f"the {which}loop over {name}" if owner == "all" else \
        f"the {owner}'s {which}loop over {name}" if not owner.startswith("threads") \
        else f"the {which}loop over {name} of {owner}"
    return f"{'before' if before < len(mine) else 'after'} {loop}"
