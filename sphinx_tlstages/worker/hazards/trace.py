"""The synchronisation trace of a kernel's final device IR, for the hazard check.

It walks the device function as each thread runs it: every loop that holds a
synchronisation (the pipelined loop, a loop around it) is unrolled with its variable
known, every other loop is summarised by bounding its variable; each access to shared
memory becomes a byte interval of its allocation, bounded over the thread indices and
the summarised loops (TVM's integer-bound analysis). Out come plain records (see
:mod:`...core.hazards.check`, which checks them): cp.async copies, commits, waits,
``__syncthreads``, shared reads; on Hopper the roles of a warp-specialised loop and
their barrier operations. Where the walk cannot decide (a synchronisation under a
condition it cannot evaluate, a loop of unknown length, an operation on shared memory it
does not model) it raises :class:`Undecided`, which the check reports as "not checked".
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Hashable
from typing import Any

import tilelang  # noqa: F401  (puts TileLang's TVM on the path)
from tilelang import tvm
from tvm.tirx.stmt_functor import post_order_visit, pre_order_visit

from ..ir.walk import integer, kind, op_name, short, statements
from .intervals import Interval, Unbounded, interval, narrowed
from .masks import _PURE, Masks, _global

BARRIER_OPS = frozenset({
    "ptx_init_barrier_thread_count", "mbarrier_wait_parity", "ptx_arrive_barrier",
    "mbarrier_arrive", "ptx_arrive_barrier_expect_tx", "mbarrier_expect_tx", "tma_load",
    "tma_load_multicast",
    "ptx_cp_async_barrier_noinc", "ptx_cp_async_barrier", "ptx_fence_barrier_init",
    "fence_proxy_async", "warpgroup_wait", "wait_wgmma", "warpgroup_commit_batch",
    "initialize_wgmma_descriptor", "increase_descriptor_offset", "ptx_wgmma_ss",
    "ptx_wgmma_rs", "initialize_tcgen05_descriptor", "ptx_tcgen05_mma_ss",
    "ptx_tcgen05_mma_ts", "ptx_tcgen05_mma_blockscaled_ss", "tcgen05_mma_arrive"})
# Blackwell's tensor-memory operations that touch no shared memory the model follows:
# the tcgen05 fences around a thread barrier (``tcgen05.fence::before_thread_sync`` /
# ``after_thread_sync``), loads and stores between tensor memory and registers (their
# address argument, a shared word, is read as any load), the allocation's release.
_TMEM_OPS = frozenset({"tcgen05_before_thread_sync", "tcgen05_after_thread_sync",
                       "tcgen05_ld", "tcgen05_st", "ptx_deallocate_tensor_memory",
                       "deallocate_tmem"})


def _name(var: Any) -> str:
    """A variable's name (``str`` of a TVM node prints it as a script: slow)."""
    return str(getattr(var, "name", "")) or str(var)


class Undecided(Exception):
    """The walk cannot say what the code does; the message says why."""


class Ranged(Undecided):
    """A synchronised loop whose trip count is a range (it depends on the block index,
    as a causal mask's does): the walk is made once per trip count (:attr:`Trace.trips`,
    keyed by the extent's structural hash). A loop a block mask guards
    (:meth:`Trace.masked_loop`) is one too: its count is that of the iterations the mask
    runs (:attr:`masked` names the mask; keyed by the mask's form and row)."""

    # Whether the choices past the bound of the periodic argument (:mod:`.sizes`) repeat
    # those below it (a trip count's do; a block index's need not).
    periodic = True

    def __init__(self, key: Hashable, lo: int, hi: int, name: str, masked: str = "") -> None:
        super().__init__(f"{name} has a trip count from {lo} to {hi}")
        self.key, self.lo, self.hi, self.name = key, lo, hi, name
        # The mask whose true iterations the count is (``""``: none): a loop whose
        # synchronisations a condition read from memory runs or skips
        # (:meth:`Trace.masked_loop`).
        self.masked = masked

    def said(self, value: int) -> str:
        """The walk's choice, in words."""
        if self.masked:
            return (f"{self.name} running {value} of its iterations (the others skipped "
                    f"by the mask {self.masked})")
        return f"{self.name} running {value} times"

    def covered(self, lo: int, hi: int) -> str:
        """The choices walked, in words."""
        if self.masked:
            return (f"every pattern of the mask {self.masked} over {self.name} ({lo} to {hi} "
                    "of its iterations running, each skipped one doing nothing)")
        return f"{self.name} running {lo} to {hi} times"


class Masked(Undecided):
    """A mask's element the walk of fixed mask values (:attr:`Trace.masks`) has no value
    for: the brute-force reference walks again with each."""

    def __init__(self, key: str) -> None:
        super().__init__(f"the mask {key} has no value")
        self.key = key


class Blocked(Ranged):
    """A synchronised loop whose first iteration depends on the block index (a sliding
    window's first key block, ``max(0, bx - w)``), in a grid of known extent: the walk is
    made once per value of that index (:attr:`Trace.trips`, keyed by its thread tag), each
    the exact walk of those blocks."""

    periodic = False

    def __init__(self, key: Hashable, hi: int, name: str, loop: str) -> None:
        Undecided.__init__(self, f"{loop} starts at a value set by {name}")
        self.key, self.lo, self.hi, self.name, self.masked = key, 0, hi, name, ""

    def said(self, value: int) -> str:
        return f"{self.name} = {value}"

    def covered(self, lo: int, hi: int) -> str:
        return f"{self.name} from {lo} to {hi}"


class Forked(Ranged):
    """A synchronisation under a condition the walk cannot decide but that every thread
    of the block decides alike (it reads memory at an index that does not depend on the
    thread: ``if tile < s_cum[groups]``, a block past the data's tiles skipping its
    work), met once in a walk: the walk is made once with the condition false and once
    with it true (:attr:`Trace.trips`, keyed by the statement). One read from memory in
    each iteration of the synchronised loop it guards (a block mask) is a mask instead
    (:meth:`Trace.masked_loop`: every pattern)."""

    periodic = False

    def __init__(self, key: Hashable, name: str) -> None:
        Undecided.__init__(self, f"a synchronisation under the condition {name}")
        self.key, self.lo, self.hi, self.name, self.masked = key, 0, 1, name, ""

    def said(self, value: int) -> str:
        return f"the condition {self.name} {'true' if value else 'false'}"

    def covered(self, lo: int, hi: int) -> str:
        return f"the condition {self.name} true and false"


def shared(var: Any) -> bool:
    """Whether a buffer's data lives in shared memory (barriers are not data)."""
    scope = getattr(getattr(var, "type_annotation", None), "storage_scope", "")
    return str(scope).startswith("shared") and "barrier" not in str(scope)


Record = dict[str, Any]
# Loops unrolled in all, over the whole kernel: past this the check says "not checked".
MAX_STEPS = 4096
# The upper bound of a range a symbolic size leaves open: a loop variable or a block index
# whose extent depends on one (:mod:`.sizes` fixes the size for the synchronised loops only).
OPEN = 1 << 30
_SYNC_OPS = frozenset({"ptx_commit_group", "ptx_wait_group", "tvm_storage_sync",
                       "mbarrier_wait_parity", "ptx_arrive_barrier", "mbarrier_arrive",
                       "ptx_arrive_barrier_expect_tx", "mbarrier_expect_tx", "tma_load",
                       "tma_load_multicast", "ptx_init_barrier_thread_count", "warpgroup_wait",
                       "wait_wgmma", "ptx_cp_async_barrier_noinc", "ptx_cp_async_barrier",
                       "tcgen05_mma_arrive"})
# Records that name the statement they come from (redundant synchronisation is found per
# statement).
SITE_OPS = frozenset({"sync", "wait", "bwait"})
# Reads through a pointer: bytes each thread reads at its address.
_POINTER_READS = {"ptx_ldmatrix": 16}
# Stores the threads make themselves through a pointer (like a BufferStore into shared
# memory, outside the model: TileLang's thread-sync pass places their barriers).
_POINTER_STORES = frozenset({"ptx_stmatrix"})


class Trace:
    """One walk of a device function; :attr:`records` is its output."""

    def __init__(self, func: Any, boxes: dict[str, int] | None = None,
                 sizes: dict[Any, int] | None = None,
                 trips: dict[Hashable, int] | None = None,
                 memo: dict[str, dict[int, Any]] | None = None,
                 masks: dict[str, bool] | None = None,
                 decide: Callable[[int], bool] | None = None) -> None:
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
        self.where: list[str] = []
        self.steps = 0
        self.role = "all"  # "producer"/"consumer" inside a warp-specialised branch
        self.group: Interval = (0, 0)  # the threads of the role (all: every thread)
        self.aliases: set[Any] = set()  # variables bound to threadIdx.x itself
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
        # What the walk reads of the IR's structure, by a node's address: an unrolled loop
        # asks it of the same inner statements once per iteration, and the walks of one
        # function at several sizes or trip counts share ``memo`` (the IR outlives them;
        # nothing here depends on the values a walk gives its variables).
        memo = {} if memo is None else memo
        # Whether a statement holds a synchronisation.
        self.synced: dict[int, bool] = memo.setdefault("synced", {})
        # A call's name and arguments.
        self.calls: dict[int, tuple[str, list[Any]]] = memo.setdefault("calls", {})
        self.seqs: dict[int, list[Any]] = memo.setdefault("seqs", {})  # a sequence's items
        self.parts: dict[Any, Any] = memo.setdefault("parts", {})
        # An expression's shared loads, pointers passed on, TileLang templates followed.
        self.loads: dict[int, Any] = memo.setdefault("loads", {})
        self.stored: dict[int, list[Any]] = memo.setdefault("stored", {})  # scalars set
        # An access's flat index and element, by its buffer's and indices' addresses.
        self.flats: dict[Any, Any] = memo.setdefault("flats", {})
        # Conditions read from memory (:mod:`.masks`). Either each element's value is
        # fixed (``masks``, filled by ``decide(n)`` for the n-th element met, else
        # :class:`Masked`), or a loop the mask guards runs a number of its iterations
        # (``trips``) with its variable any of its values (``masking``: the mask's form,
        # its value, the loop's variable).
        known_masks = memo.setdefault("masks", {})
        if 0 not in known_masks:
            known_masks[0] = Masks(func)
        self.mask_info: Masks = known_masks[0]
        self.masks = masks
        self.decide = decide
        self.decided: dict[str, str] = {}  # an element decided -> where (``k=3``)
        self.form = ""  # the form of the first mask decided (:meth:`.Masks.form`)
        self.masking: tuple[str, bool, Any] | None = None
        self.masked_key: Hashable = None  # the trip-count key of the masked loop walked
        self.masked_loops: dict[int, str | None] = memo.setdefault("masked_loops", {})
        # The variables a mask's form reads besides its loop's (by the form).
        self.mask_vars: dict[Any, list[Any]] = memo.setdefault("mask_vars", {})
        self.iterations: dict[Any, Any] = memo.setdefault("iterations", {})
        self.uses: dict[int, set[Any]] = memo.setdefault("uses", {})
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
                                               or _global(node.buffer.data)):
                known = self.env.get((node.buffer.data, "scalar"))
                if known is None or known[0] != known[1]:
                    found[0] = False
            elif what == "Call" and short(op_name(node)) not in _PURE:
                found[0] = False  # a lane's or a warp's index, an election: per thread

        post_order_visit(expr, visit)
        return found[0]

    def extent(self, expr: Any, what: str) -> Interval:
        """A loop's trip count; one read from memory (a sequence's start in a cumulative
        array, ``s_cum[b + 1] - s_cum[b]``) is any count, like a symbolic size's."""
        try:
            return self.bound(expr, what)
        except Undecided:
            if not _memory(expr):
                raise
            return 0, OPEN

    def base(self, var: Any) -> tuple[str, int]:
        return self.bases.get(var, (str(var.name), 0))

    def region(self, buffer: Any, indices: list[Any]) -> tuple[str, str, int, int]:
        """(buffer, allocation, first byte, last byte) of a load or store's elements."""
        key = (buffer.__chandle__(), *[index.__chandle__() for index in indices])
        known = self.flats.get(key)
        if known is None:  # the flat index built once (TVM nodes): an unrolled loop asks again
            known = self.flats[key] = self.flat(buffer, indices)
        flat, size, lanes, name, data = known
        lo, hi = self.bound(flat, str(buffer.name))
        root, offset = self.base(data)
        self.last = (flat, dict(self.env), offset, size, lanes)
        return name, root, offset + lo * size, offset + (hi + lanes) * size - 1

    @staticmethod
    def flat(buffer: Any, indices: list[Any]) -> tuple[Any, int, int, str, Any]:
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

    def per_thread(self, extra: int = 0) -> Callable[[], list[Interval] | None]:
        """The bytes each thread touches in the last region bounded, as a function the
        check calls only where it needs them (each thread's interval is one bound of the
        index with ``threadIdx.x`` a point): None when a thread's bytes cannot be bounded
        apart from the others' (an index through a variable bound over every thread)."""
        index, env, offset, size, lanes = self.last
        threads = self.threads

        def bytes_of_each() -> list[Interval] | None:
            if threads is None or threads not in env:
                return None
            found = []
            for t in range(env[threads][0], env[threads][1] + 1):
                try:
                    lo, hi = interval(index, {**env, threads: (t, t)})
                except Unbounded:
                    return None
                found.append((offset + lo * size, offset + (hi + lanes) * size - 1 + extra))
            return found

        return bytes_of_each

    # --- statements -----------------------------------------------------------------
    def emit(self, record: Record) -> None:
        if len(self.spans) > 1:
            raise Undecided(f"code run by threads in {len(self.spans)} ranges, from "
                            f"{self.spans[0][0]} to {self.spans[-1][1]} (a role is one range)")
        record["at"] = " ".join(self.where)
        record["role"] = self.role
        record["group"] = self.group
        if self.threads is not None and self.threads in self.env:
            record["threads"] = self.env[self.threads]  # the threads that execute it
        self.records.append(record)

    def walk(self, stmt: Any) -> None:
        what = kind(stmt)
        handler: Callable[[Any], None] | None = getattr(self, f"_{what}", None)
        if handler is not None:
            handler(stmt)
        elif hasattr(stmt, "body") and stmt.body is not None:
            self.walk(stmt.body)

    def _SeqStmt(self, stmt: Any) -> None:
        key = stmt.__chandle__()
        items = self.seqs.get(key)
        if items is None:
            items = self.seqs[key] = list(stmt.seq)
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
        if kind(value) == "Call" and short(op_name(value)) == "handle_add_byte_offset":
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
        form = self.loop_mask(stmt) if self.masks is None else None
        if form is not None:
            self.masked_loop(stmt, form, lo_c, max(low, 0))
            return
        extent_c = max(low, 0)
        self.steps += extent_c
        if self.steps > MAX_STEPS:
            raise Undecided(f"more than {MAX_STEPS} loop iterations to unroll")
        for value in range(lo_c, lo_c + extent_c):
            self.env[stmt.loop_var] = (value, value)
            self.where.append(f"{stmt.loop_var.name}={value}")
            try:
                self.walk(stmt.body)
            finally:
                self.where.pop()
        self.env.pop(stmt.loop_var, None)

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
        if (self.masks is not None or self.masking is not None) and self.by_mask(stmt):
            return
        if self.has_sync(stmt.then_case) or (stmt.else_case is not None
                                         and self.has_sync(stmt.else_case)):
            self.branch(stmt)
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

    def by_mask(self, stmt: Any) -> bool:
        """Walk the branch a mask takes (:mod:`.masks`): the element's fixed value
        (:attr:`masks`), or the value of the masked loop's iteration (:attr:`masking`)
        where the condition is that loop's mask. False: not such a condition."""
        cond = stmt.condition
        if self.masks is not None:
            points: dict[Any, int] = {}
            for var in self.mask_info.variables(cond):
                lo, hi = self.env.get(var, (0, -1))
                if lo == hi:
                    points[var] = lo
                elif var in self.env and var not in self.blocks:
                    return False  # a summarised loop's variable: no one element
            key = self.mask_info.key(cond, points)
            if key is None:
                return False
            if key.startswith("="):
                case = stmt.then_case if key != "=0" else stmt.else_case
                if case is not None:
                    self.walk(case)
                return True
            if key not in self.masks:
                if self.decide is None:
                    raise Masked(key)
                self.masks[key] = self.decide(len(self.masks))
            if key not in self.decided:  # where it was met, and the mask's form there
                self.decided[key] = " ".join(self.where)
                self.form = self.form or next(
                    (form for var in points
                     if (form := self.mask_info.form(cond, var)) is not None), "")
            holds = self.masks[key]
        else:
            assert self.masking is not None
            form, holds, var = self.masking
            if self.mask_info.form(cond, var) != form:
                return False
        case = stmt.then_case if holds else stmt.else_case
        if case is not None:
            self.walk(case)
        return True

    def loop_mask(self, stmt: Any) -> str | None:
        """The form of the mask a synchronised loop's synchronisation sits under (None:
        none does); :class:`Undecided` where its conditions read memory in two forms."""
        handle = stmt.__chandle__()
        if handle not in self.masked_loops:
            forms: set[str] = set()
            synced: list[bool] = []
            var = stmt.loop_var

            def visit(node: Any) -> None:
                if kind(node) == "IfThenElse":
                    form = self.mask_info.form(node.condition, var)
                    if form is not None:
                        forms.add(form)
                        synced.append(self.has_sync(node))
                        self.mask_vars.setdefault(form, [
                            v for v in self.mask_info.variables(node.condition)
                            if not v.same_as(var)])

            post_order_visit(stmt.body, visit)
            self.masked_loops[handle] = None
            if any(synced):
                if len(forms) > 1:
                    raise Undecided(f"the loop over {var.name} has synchronisations under "
                                    f"conditions read from memory of {len(forms)} forms")
                self.masked_loops[handle] = forms.pop()
        return self.masked_loops[handle]

    def masked_loop(self, stmt: Any, form: str, first: int, trips: int) -> None:
        """A synchronised loop whose iterations a mask runs or skips (``if
        BlockMask[by, k]:`` around the copies and the GEMM): walked as ``m`` iterations
        that run, ``m`` from the walk's :attr:`trips` (:class:`Ranged`: the driver tries
        each count), with the loop's variable any of its values, after one iteration the
        mask skips, which must leave no record and no scalar changed. Then every mask
        pattern's trace is one of these walks' (the hazards chapter, "Conditions read from
        memory"): a skipped iteration is nothing to the check, and what a run iteration
        records does not depend on which iteration it is beyond what the bounds over every
        value of the variable include."""
        var = stmt.loop_var
        if self.masking is not None:
            raise Undecided(f"a loop under a mask inside the loop over "
                            f"{self.masking[2].name} under a mask")
        # One count of run iterations per mask row: the values of the other variables
        # the mask reads (an outer loop's, walked unrolled) are part of the key.
        row = [self.env.get(v) for v in self.mask_vars.get(form, [])]
        key = ("mask", form, tuple(row))
        if key not in self.trips:
            raise Ranged(key, 0, trips, f"the loop over {var.name}", form)
        runs, self.masked_key = self.trips[key], key
        if runs > trips:
            raise Undecided(f"loops of {trips} and more iterations under the mask {form}")
        self.steps += runs + 1
        if self.steps > MAX_STEPS:
            raise Undecided(f"more than {MAX_STEPS} loop iterations to unroll")
        if trips <= 0:
            return
        self.env[var] = (first, first + trips - 1)
        try:
            self.masked_walk(stmt, form, runs, trips)
        except (Ranged, Masked):
            raise
        except Undecided as exc:
            if form in str(exc):
                raise
            raise Undecided(f"{exc}, with {var.name} any iteration the mask {form} runs or "
                            "skips") from None
        self.env.pop(var, None)

    def masked_walk(self, stmt: Any, form: str, runs: int, trips: int) -> None:
        """:meth:`masked_loop`'s walk: a skipped iteration, then ``runs`` run ones."""
        var = stmt.loop_var
        try:
            if runs < trips:
                before, saved = len(self.records), dict(self.env)
                self.masking = (form, False, var)
                self.where.append(f"{var.name} skipped")
                self.run_once(stmt)
                self.where.pop()
                changed = [key for key in {*saved, *self.env}
                           if kind(key) != "Var" and self.env.get(key) != saved.get(key)]
                if len(self.records) != before or changed:
                    raise Undecided(f"an iteration the mask {form} skips still "
                                    + ("synchronises or touches shared memory"
                                       if len(self.records) != before
                                       else "changes a counter"))
                self.env = saved
            for number in range(runs):
                self.masking = (form, True, var)
                self.where.append(f"{var.name}={number}")
                try:
                    self.run_once(stmt)
                finally:
                    self.where.pop()
        finally:
            self.masking = None

    def run_once(self, loop: Any) -> None:
        """One run iteration of a masked loop. The walks for each number of run
        iterations repeat the same iterations from the same states: what one walked
        (its records, and what it changed of the state) is kept in the memo by the
        state it started from (of the environment, the variables its body reads), and
        copied."""
        handle = loop.__chandle__()
        uses = self.uses.get(handle)
        if uses is None:
            found: set[Any] = set()
            post_order_visit(loop.body, lambda n: found.add(n) if kind(n) == "Var" else
                             found.add((n.buffer.data, "scalar"))
                             if kind(n) == "BufferLoad" else None)
            uses = self.uses[handle] = found
        before = {var: value for var, value in self.env.items()
                  if var in uses or var is self.threads}
        key = (handle, self.masking, tuple(self.where), self.role, self.elected,
               self.summarised, self.fallback, frozenset(  # inner loops' trip counts
                   (loop, n) for loop, n in self.trips.items() if loop != self.masked_key),
               self.threads, frozenset(before.items()),
               frozenset((var, tuple(region)) for var, region in self.descriptors.items()),
               frozenset(self.batch), frozenset(self.bases.items()))
        known = self.iterations.get(key)
        if known is None:
            first, entry = len(self.records), dict(self.env)
            self.walk(loop.body)
            changed = {var: value for var, value in self.env.items()
                       if entry.get(var) != value}
            dropped = [var for var in entry if var not in self.env]
            self.iterations[key] = (
                [dict(r) for r in self.records[first:]], changed, dropped,
                {var: list(region) for var, region in self.descriptors.items()},
                set(self.batch), dict(self.bases))
            return
        records, changed, dropped, descriptors, batch, bases = known
        self.records.extend(dict(r) for r in records)
        for var in dropped:
            self.env.pop(var, None)
        self.env.update(changed)
        self.batch, self.bases = set(batch), dict(bases)
        self.descriptors = {var: list(region) for var, region in descriptors.items()}

    def branch(self, stmt: Any) -> None:
        """A synchronisation under a condition on the thread index: one elected thread
        (``T.tl_shuffle_elect``, ``tx == c``), or the roles of a warp-specialised loop
        (``if tx < P:`` producer ``else:`` consumer)."""
        cond = stmt.condition
        if has_call(cond, ("block_rank_in_cluster",)):
            self.cluster_branch(stmt)
            return
        name = short(op_name(cond)) if kind(cond) == "Call" else kind(cond)
        if name in ("tl_shuffle_elect", "EQ") and stmt.else_case is None:
            outer, self.elected = self.elected, True
            self.forget(stmt.then_case)  # one thread's scalars: the others' differ
            self.summarised += 1
            try:
                self.walk(stmt.then_case)
            finally:
                self.elected = outer
                self.summarised -= 1
            self.forget(stmt.then_case)
            return
        if self.uniform(cond):
            self.fork(stmt)
            return
        # The roles' thread ranges: ``if tx < P: ... else: ...`` (TileLang's split), or a
        # branch per role (``if P <= tx:``) in a kernel that specialises its warps itself;
        # inside a role, a split of its threads again (``if tx < 128: ... elif tx < 256:
        # ... else: ...``: a producer and two consumer warp groups) makes a role of each
        # branch, run by its own threads beside the others.
        if self.threads is None:
            raise Undecided(f"a synchronisation under the condition {cond}")
        cases = [(case, holds, self.thread_set(cond, holds))
                 for case, holds in ((stmt.then_case, True), (stmt.else_case, False))
                 if case is not None]
        cases = [entry for entry in cases if entry[2] != []]  # run by none
        if not cases or any(spans is None for _, _, spans in cases):
            raise Undecided(f"a synchronisation under the condition {cond}")
        key = (stmt.__chandle__(), tuple(holds for _, holds, _ in cases))
        kinds = self.parts.get(key)
        if kinds is None:  # read once: every walk of an unrolled loop asks again
            kinds = self.parts[key] = branch_roles([case for case, _, _ in cases])
        nested = self.role != "all"
        parent, group, spans_before = self.role, self.group, self.spans
        for (case, _, spans), kind_ in zip(cases, kinds, strict=True):
            assert spans is not None
            lo, hi = spans[0][0], spans[-1][1]
            # Each branch its own role; named by its threads where the kinds do not tell
            # the branches apart (two of one kind, or a split inside a role). Threads in
            # several ranges (the else of ``128 <= tx < 160``) are no role: only a split
            # of them again may run code.
            self.role = kind_ if len(set(kinds)) == len(kinds) and not nested \
                else f"threads {lo}-{hi}"
            self.set_threads((lo, hi))
            self.spans = spans
            self.walk(case)
        self.set_threads(group)
        self.role, self.spans = parent, spans_before

    def thread_set(self, cond: Any, holds: bool) -> list[Interval] | None:
        """The threads, of those running, for which ``cond`` is ``holds``: ranges, in
        order (None: a thread for which it cannot be decided)."""
        if len(self.spans) == 1:
            found = self.thread_range(narrowed(cond, holds, self.env))
            if found is not None:
                return [found]
        if sum(hi - lo + 1 for lo, hi in self.spans) > 1024:
            return None
        names = (self.threads, *self.aliases)
        spans: list[Interval] = []
        for lo, hi in self.spans:
            for t in range(lo, hi + 1):
                try:
                    value = interval(cond, {**self.env, **{v: (t, t) for v in names}})
                except Unbounded:
                    return None
                if value[0] != value[1]:
                    return None
                if bool(value[0]) == holds:
                    if spans and spans[-1][1] == t - 1:
                        spans[-1] = (spans[-1][0], t)
                    else:
                        spans.append((t, t))
        return spans

    def thread_range(self, ranges: dict[Any, Interval]) -> Interval | None:
        """The range of the thread index among narrowed ranges (through a name for it)."""
        for var in (self.threads, *self.aliases):
            if var in ranges:
                return ranges[var]
        return None

    def set_threads(self, span: Interval) -> None:
        """The threads running from here on: a role's (its group), under every name."""
        self.group = span
        for var in (self.threads, *self.aliases):
            self.env[var] = span

    def fork(self, stmt: Any) -> None:
        """A synchronisation under a condition every thread of the block decides alike
        (:class:`Forked`): the branch the driver chose for this walk. A block mask read in
        each iteration of the synchronised loop it guards never comes here (:meth:`_For`
        gives that loop to :meth:`masked_loop`); any other condition met again in one walk
        (in a loop unrolled: each time may read another value) is not decided."""
        key = ("if", stmt.__chandle__())
        if key in self.forked:
            raise Undecided(f"a synchronisation under the condition {stmt.condition}, "
                            "read from memory each time a loop runs")
        self.forked.add(key)
        if key not in self.trips:
            raise Forked(key, str(stmt.condition))
        branch = stmt.then_case if self.trips[key] else stmt.else_case
        if branch is not None:
            self.walk(branch)

    def _Evaluate(self, stmt: Any) -> None:
        value = stmt.value
        if kind(value) == "Call":
            self.call(value)
        else:
            self.reads(value)

    def _BufferStore(self, stmt: Any) -> None:
        handle = stmt.__chandle__()
        known = self.parts.get(handle)
        if known is None:  # read from TVM once: an unrolled loop stores here each time
            known = self.parts[handle] = (stmt.value, list(stmt.indices),
                                          shared(stmt.buffer.data), _scalar(stmt))
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

    def forget(self, stmt: Any) -> None:
        """Drop the values of the scalars ``stmt`` stores to: code walked once for many
        runs (a summarised loop, both branches of a condition) leaves them unknown."""
        handle = stmt.__chandle__()
        found = self.stored.get(handle)
        if found is None:
            found = self.stored[handle] = [_scalar(node) for node in statements(stmt)
                                           if kind(node) == "BufferStore"]
        for key in found:
            if key is not None:
                self.env.pop(key, None)

    def has_sync(self, stmt: Any) -> bool:
        return has_call(stmt, _SYNC_OPS, self.synced)

    # --- calls ----------------------------------------------------------------------
    def call(self, call: Any) -> None:
        # An unrolled loop walks the same calls once per iteration: their names and
        # arguments are read from TVM once.
        key = call.__chandle__()
        known = self.calls.get(key)
        if known is None:
            known = self.calls[key] = (short(op_name(call)), list(call.args))
        name, args = known
        first = len(self.records)
        if name == "ptx_cp_async":
            load = args[0].args[0]
            count = self.constant(args[2], "the size of a cp.async")
            buffer, root, lo, hi = self.region(load.buffer, list(load.indices))
            size = load.buffer.dtype.bits // 8
            self.emit({"op": "copy", "buffer": buffer, "root": root, "lo": lo,
                       "hi": hi + (count - 1) * size,
                       "own": self.per_thread((count - 1) * size)})
            self.reads(args[1])
        elif name == "ptx_commit_group":
            self.emit({"op": "commit"})
        elif name == "ptx_wait_group":
            self.emit({"op": "wait", "n": self.constant(args[0], "a wait's count")})
        elif name == "tvm_storage_sync":
            scope = args[0].value if kind(args[0]) == "StringImm" else ""
            if scope in ("shared", "shared.dyn", "cluster"):  # a cluster's holds the CTA's
                # ``tvm_storage_sync(scope, id, count)`` is a named barrier (``bar.sync id,
                # count``, TileLang's ``__sync_thread_partial``): PTX ISA, "Parallel
                # Synchronization and Communication Instructions: bar, barrier": it orders
                # the memory accesses of the threads that take part in it only, here the
                # threads executing it. A plain ``__syncthreads`` names every thread.
                named = len(args) >= 3 and integer(args[2]) not in (None, 0)
                what = "cluster sync" if scope == "cluster" else \
                    "named barrier" if len(args) > 1 else "__syncthreads"
                self.emit({"op": "sync", "named": named, "what": what})
        elif name in BARRIER_OPS:
            self.mbarrier(args, name)
        elif name in _POINTER_READS:
            for arg in args:
                if kind(arg) == "Call" and short(op_name(arg)) == "address_of":
                    load = arg.args[0]
                    if shared(load.buffer.data):
                        buffer, root, lo, hi = self.region(load.buffer, list(load.indices))
                        # From each thread's address (the last element's first byte on).
                        last = hi - load.buffer.dtype.bits * load.buffer.dtype.lanes // 8 + 1
                        self.emit({"op": "read", "buffer": buffer, "root": root, "lo": lo,
                                   "hi": last + _POINTER_READS[name] - 1, "how": name})
        elif name == "tma_store":
            # (descriptor, source, coordinates...): the box is read from shared memory
            # (asynchronously, after the threads' stores are fenced for it).
            found = self.pointer(args[1])
            if found is None:
                raise Undecided("a TMA store from an address the check cannot read")
            buffer, root, lo, _ = found
            self.emit({"op": "read", "buffer": buffer, "root": root, "lo": lo, "hi": None,
                       "bytes": self.boxes.get(str(getattr(args[0], "name", ""))),
                       "how": "tma_store"})
        elif name in _POINTER_STORES:
            for arg in args:
                if kind(arg) == "Call" and short(op_name(arg)) == "address_of" \
                        and shared(arg.args[0].buffer.data):
                    self.store(arg.args[0].buffer, list(arg.args[0].indices), wide=True)
        else:
            self.other(name, args)
        # Every dynamic instance of a synchronisation statement names the statement
        # (its node's address while the IR lives; :func:`.verdict.sites` numbers them).
        for record in self.records[first:]:
            if record["op"] in SITE_OPS:
                record["site"] = key

    def other(self, name: str, args: list[Any]) -> None:
        """A call the model has no rule for: harmless unless it touches shared memory
        (``args``: its arguments, read from TVM once by :meth:`call`)."""
        if name == "ptx_init_tensor_memory":
            # ``tcgen05.alloc`` writes the address of the tensor memory it allocates into
            # the shared word it is given: a store, as the threads' own (outside the model).
            target = args[0].args[0]
            self.store(target.buffer, list(target.indices))
            return
        if name in _TMEM_OPS:
            for arg in args:
                if kind(arg) == "Call" and short(op_name(arg)) == "address_of" \
                        and shared(arg.args[0].buffer.data):
                    load = arg.args[0]
                    buffer, root, lo, hi = self.region(load.buffer, list(load.indices))
                    self.emit({"op": "read", "buffer": buffer, "root": root, "lo": lo,
                               "hi": hi, "how": name})
                elif kind(arg) != "Call" or short(op_name(arg)) != "address_of":
                    self.reads(arg)
            return
        if "tcgen05" in name or "tensor_memory" in name or "tmem" in name:
            raise Undecided(f"Blackwell's tensor-memory operation {name} is not modelled")
        for arg in args:
            if kind(arg) == "Call" and short(op_name(arg)) in ("address_of",
                                                                "tvm_access_ptr"):
                target = arg.args[0] if short(op_name(arg)) == "address_of" else arg.args[1]
                data = getattr(getattr(target, "buffer", None), "data", target)
                if shared(data):
                    raise Undecided(f"{name} accesses {data.name}, which the check "
                                    "does not model")
            else:
                self.reads(arg)

    def reads(self, expr: Any) -> None:
        """Every shared element an expression loads."""
        handle = expr.__chandle__()
        cached = self.loads.get(handle)
        if cached is None:
            cached = self.loads[handle] = _loads(expr)
        found, passed, known = cached
        if passed:
            raise Undecided(f"a pointer into {passed[0]} is passed to a helper the check "
                            "does not know")
        for call in known:
            self.all_reduce(call)
        for load in found:
            try:
                buffer, root, lo, hi = self.region(load.buffer, list(load.indices))
                own: Any = self.per_thread()
            except Undecided:
                if not any(_memory(index) for index in load.indices):
                    raise
                # An index read from memory (``s_cum[group[0]]``, the group a search
                # found): any element of the buffer, so every byte of it.
                buffer, root, lo, hi = self.whole(load.buffer)
                own = None
            self.emit({"op": "read", "buffer": buffer, "root": root, "lo": lo, "hi": hi,
                       "how": "load", "own": own})

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

    def all_reduce(self, call: Any) -> None:
        """TileLang's ``tl::AllReduce<Reducer, threads, scale, thread_offset[, Barrier[,
        batch, stride]]>::run(x, red_buf)`` (``tl_templates/cuda/reduce.h``): at each level
        of its butterfly whose offset (``threads / 2``, halved down to ``scale``) is 32 or
        more, it synchronises, stores each thread's value at ``red_buf[tid - offset (+ i *
        stride)]``, synchronises again and reads its partner's. Its stores are the threads'
        own (outside the model, as every store); its reads of the workspace are records, and
        its barrier is a ``__syncthreads`` for the model where it spans every thread running
        the call (``SyncThreadsBarrier``, or ``NamedBarrier<n>`` with ``n`` those threads)."""
        name = str(call.args[0].value)
        inner = name[len("tl::AllReduce<"):name.rindex(">")]
        parts = [part.strip() for part in inner.split(",")]
        pointer = next((arg for arg in call.args[1:] if kind(arg) == "Call"
                        and short(op_name(arg)) == "address_of"), None)
        if pointer is None:
            return  # no workspace: warp shuffles only
        try:
            threads, scale = int(parts[1]), int(parts[2])
            offset = int(parts[3])
        except (IndexError, ValueError):
            raise Undecided(f"a pointer into a workspace is passed to {name}") from None
        batch, stride = 1, 0
        if len(parts) >= 7:
            batch, stride = int(parts[5]), int(parts[6])
        levels = 0
        half = threads // 2
        while half >= scale and half >= 32:
            levels += 1
            half //= 2
        if not levels:
            return
        lo_t, hi_t = self.env.get(self.threads, (0, 0)) if self.threads is not None \
            else (0, 0)
        running = hi_t - lo_t + 1
        barrier = parts[4] if len(parts) >= 5 else "tl::SyncThreadsBarrier"
        whole = barrier == "tl::SyncThreadsBarrier" or barrier == f"tl::NamedBarrier<{running}>"
        if barrier.startswith("tl::NamedBarrier<") and not barrier.endswith(">"):
            raise Undecided(f"a pointer into a workspace is passed to {name}")
        load = pointer.args[0]
        first = max(hi_t - offset + 1, threads)
        span = (1 << (first - 1).bit_length()) + (batch - 1) * stride
        size = load.buffer.dtype.bits * load.buffer.dtype.lanes // 8
        buffer, root, lo, _ = self.region(load.buffer, list(load.indices))
        for _ in range(levels):
            if whole:
                self.emit({"op": "sync"})
                self.emit({"op": "sync"})
            self.emit({"op": "read", "buffer": buffer, "root": root, "lo": lo,
                       "hi": lo + span * size - 1, "how": "tl::AllReduce"})

    # --- the barrier operations of TMA pipelines (Hopper, Blackwell): mbarrier
    # initialisation, waits with their parity, arrivals with their count, expected bytes,
    # TMA copies into shared memory, the shared tiles wgmma reads through its descriptors.

    def barrier(self, load: Any) -> str:
        """``mbarrier[3]``: a barrier by its array and index."""
        key = load.__chandle__()
        known = self.parts.get(key)
        if known is None:
            if kind(load) != "BufferLoad" or len(load.indices) != 1:
                raise Undecided(f"a barrier the check cannot name: {load}")
            known = self.parts[key] = (str(load.buffer.data.name), load.indices[0])
        name, index = known
        return f"{name}[{self.constant(index, 'a barrier index')}]"

    def arrivals(self) -> int:
        if self.elected:
            return 1
        lo, hi = self.env[self.threads] if self.threads is not None else (0, 0)
        return hi - lo + 1

    def pointer(self, arg: Any) -> tuple[str, str, int, int] | None:
        """The shared region ``&buffer[indices]`` points to (None: not such a pointer)."""
        key = arg.__chandle__()
        if key not in self.parts:
            self.parts[key] = None
            name = short(op_name(arg)) if kind(arg) == "Call" else ""
            if name == "address_of" and shared(arg.args[0].buffer.data):
                load = arg.args[0]
                self.parts[key] = (load.buffer, list(load.indices))
            elif name == "handle_add_byte_offset":  # a slot past the buffer's first
                self.parts[key] = (arg.args[0], arg.args[1], None)
        found = self.parts[key]
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

    def mbarrier(self, args: list[Any], name: str) -> None:
        """The barrier operations of TMA pipelines (Hopper, Blackwell), from a call's
        name and arguments."""
        if name == "ptx_init_barrier_thread_count":
            self.emit({"op": "init", "bar": self.barrier(args[0]),
                       "count": self.constant(args[1], "a barrier's count")})
        elif name == "mbarrier_wait_parity":
            self.emit({"op": "bwait", "bar": self.barrier(args[0]),
                       "parity": self.constant(args[1], "a wait's parity")})
        elif name in ("ptx_arrive_barrier", "mbarrier_arrive"):
            if len(args) != 1:
                raise Undecided(f"{name} with {len(args)} arguments (a cluster barrier?)")
            self.emit({"op": "arrive", "bar": self.barrier(args[0]), "n": self.arrivals()})
        elif name in ("ptx_cp_async_barrier_noinc", "ptx_cp_async_barrier"):
            # ``cp.async.mbarrier.arrive{.noinc}`` (PTX ISA, "Parallel Synchronization and
            # Communication Instructions: cp.async.mbarrier.arrive"): an arrive-on made by
            # the system once every earlier cp.async of the executing thread completes.
            # With ``.noinc`` it is one of the arrivals the init count counts; without, the
            # pending count is raised first: a net change of zero.
            noinc = name.endswith("noinc")
            self.emit({"op": "arrive", "bar": self.barrier(args[0]),
                       "n": self.arrivals() if noinc else 0, "cp": True})
        elif name in ("ptx_arrive_barrier_expect_tx", "mbarrier_expect_tx"):
            if len(args) != 2:
                raise Undecided(f"{name} with {len(args)} arguments (a cluster barrier?)")
            self.emit({"op": "expect", "bar": self.barrier(args[0]),
                       "bytes": self.constant(args[1], "expected bytes") * self.arrivals(),
                       "n": self.arrivals() if name.startswith("ptx_arrive") else 0})
        elif name == "tma_load":
            # Bulk copy: (dst, src, barrier, bytes, ...); tensor copy: (descriptor,
            # barrier, dst, coordinates...), whose box size only the descriptor knows.
            dst = self.pointer(args[0])
            bar, size = (args[2], self.constant(args[3], "a copy's bytes")) \
                if dst is not None else (args[1], None)
            if dst is None:  # the box's bytes: from the descriptor the host builds
                dst, size = self.pointer(args[2]), self.boxes.get(_name(args[0]))
            if dst is None:
                raise Undecided("a TMA load into an address the check cannot read")
            buffer, root, lo, _ = dst
            self.emit({"op": "tma", "bar": self.barrier(bar), "buffer": buffer, "root": root,
                       "lo": lo, "bytes": size})
        elif name == "tma_load_multicast":
            # (descriptor, barrier, dst, CTA mask, coordinates...): the box and its
            # completion land at the same offsets in every CTA of the mask, this one too.
            dst = self.pointer(args[2])
            if dst is None:
                raise Undecided("a TMA multicast into an address the check cannot read")
            buffer, root, lo, _ = dst
            self.emit({"op": "tma", "bar": self.barrier(args[1]), "buffer": buffer,
                       "root": root, "lo": lo, "bytes": self.boxes.get(_name(args[0])),
                       "multicast": True})
        elif name == "ptx_fence_barrier_init":
            self.emit({"op": "fence"})
        elif name == "fence_proxy_async":
            self.emit({"op": "pfence"})
        elif name in ("warpgroup_wait", "wait_wgmma"):
            # ``T.wait_wgmma(n)`` is ``tl::wait_wgmma<n>``: ``cute::warpgroup_wait<n>`` too.
            self.emit({"op": "wgwait", "n": self.constant(args[0], "a warpgroup wait")})
        elif name == "warpgroup_commit_batch":
            self.batch = set()
            self.emit({"op": "wgcommit"})
        elif name == "tcgen05_mma_arrive":
            self.commit(args)
        elif name in ("initialize_wgmma_descriptor", "initialize_tcgen05_descriptor"):
            found = self.pointer(args[1])
            if found is None:
                raise Undecided("a wgmma descriptor of an address the check cannot read")
            self.descriptors[args[0].buffer.data] = list(found)
        elif name == "increase_descriptor_offset":
            region = self.descriptors.get(args[0].buffer.data)
            if region is None:
                raise Undecided("a wgmma descriptor offset before its initialisation")
            region[2] += self.constant(args[1], "a descriptor offset")
        elif name.startswith("ptx_tcgen05_mma"):
            # PTX ISA, "tcgen05.mma": the MMA reads its shared-memory operands through
            # their matrix descriptors asynchronously; it completes only as tracked by a
            # later ``tcgen05.commit`` (see :meth:`commit`).
            for arg in args:
                region = self.descriptors.get(arg) if kind(arg) == "Var" else None
                if region is not None:
                    buffer, root, lo, _ = region
                    self.emit({"op": "read", "buffer": buffer, "root": root, "lo": lo,
                               "hi": None, "how": "tcgen05.mma", "umma": True})
                    self.umma.append(self.records[-1])
        elif name.startswith("ptx_wgmma"):
            for arg in args:
                region = self.descriptors.get(arg) if kind(arg) == "Var" else None
                if region is not None and tuple(region) not in self.batch:
                    self.batch.add(tuple(region))
                    buffer, root, lo, _ = region
                    self.emit({"op": "read", "buffer": buffer, "root": root, "lo": lo,
                               "hi": None, "how": "wgmma", "async": True})

    def commit(self, args: list[Any]) -> None:
        """``tl::tcgen05_mma_arrive(&bar)`` (``tl_templates/cuda/tcgen_05.h``): one elected
        lane of each warp running it issues ``tcgen05.commit.cta_group::1.mbarrier::
        arrive::one.shared::cluster.b64 [bar]``. PTX ISA, "tcgen05.commit": the barrier
        tracks the completion of every earlier asynchronous tcgen05 operation of the
        executing thread, and one arrive-on it is made when they complete. The reads of the
        MMAs issued since the previous commit are marked with this commit's number: they
        retire when its arrival's phase completes (:mod:`...core.hazards.rings`). A commit
        to other CTAs' barriers (``cta_group::2``, a multicast mask) is outside the
        model."""
        if len(args) != 1:
            raise Undecided(f"tcgen05_mma_arrive with {len(args)} arguments (two CTAs' "
                            "MMA?)")
        if kind(args[0]) != "Call" or short(op_name(args[0])) != "address_of":
            raise Undecided("a tcgen05 commit to a barrier the check cannot name")
        lo, hi = self.env[self.threads] if self.threads is not None else (0, 0)
        warps = 1 if self.elected else max((hi - lo + 1 + 31) // 32, 1)
        self.commits += 1
        self.emit({"op": "arrive", "bar": self.barrier(args[0].args[0]), "n": warps,
                   "commit": self.commits})
        for read in self.umma:
            read["commit"] = self.commits
        self.umma = []

    def cluster_branch(self, stmt: Any) -> None:
        """A TMA copy under a condition on the CTA's rank in its cluster, as
        ``T.copy_cluster(..., cluster_mask=m)`` lowers: the leader multicasts the box to
        every CTA of the mask, a CTA outside the mask loads its own (``else: if not in m:
        tma_load``). Every CTA then receives the same box at the same offset, signalled on
        its own barrier: the records are one path's, when both paths agree."""
        if stmt.else_case is None:
            if not self.fallback:
                raise Undecided(f"a synchronisation under the condition {stmt.condition}")
            self.walk(stmt.then_case)  # a CTA in the mask gets the leader's multicast
            return
        paths: list[list[dict[str, Any]]] = []
        outer, kept = self.fallback, self.records
        for number, case in enumerate((stmt.then_case, stmt.else_case)):
            self.records, self.fallback = [], number == 1
            try:
                self.walk(case)
            finally:
                paths.append(self.records)
                self.records, self.fallback = kept, outer

        def same(path: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
            return [(r["op"], r.get("bar"), r.get("buffer"), r.get("lo"), r.get("bytes"))
                    for r in path]

        if not any(r.get("multicast") for r in paths[0]) or same(paths[0]) != same(paths[1]):
            raise Undecided(f"a synchronisation under the condition {stmt.condition}")
        self.records.extend(paths[0])


def _loads(expr: Any) -> tuple[list[Any], list[str], list[Any]]:
    """An expression's shared loads, the shared buffers it passes a pointer to, and the
    calls of TileLang's templates it makes whose arguments the check follows itself (those
    arguments, not what they hold, are left out of the first two)."""
    candidates: list[Any] = []  # loads and address_of calls, in post-order
    known: list[Any] = []

    def visit(node: Any) -> None:
        what = kind(node)
        if what == "BufferLoad":
            candidates.append(node)
        elif what == "Call":
            name = short(op_name(node))
            if name == "address_of":
                candidates.append(node)
            elif name == "call_extern" and kind(node.args[0]) == "StringImm" \
                    and str(node.args[0].value).startswith("tl::AllReduce<"):
                known.append(node)

    post_order_visit(expr, visit)
    # Read after the walk, which is then whole: an argument is known to be followed only
    # once its call (after it, in post-order) is seen.
    followed = {arg.__chandle__() for call in known for arg in call.args}
    found: list[Any] = []
    passed: list[str] = []  # raised after the visit (TVM wraps what a visitor raises)
    for node in candidates:
        if node.__chandle__() in followed:
            continue
        if kind(node) == "BufferLoad":
            if shared(node.buffer.data):
                found.append(node)
        elif shared(node.args[0].buffer.data):
            passed.append(str(node.args[0].buffer.name))
    return found, passed, known


def _memory(expr: Any) -> bool:
    """Whether an expression reads memory (a buffer's element: a value the data sets)."""
    found: list[Any] = []
    post_order_visit(expr, lambda node: found.append(node)
                     if kind(node) == "BufferLoad" else None)
    return bool(found)


def _scalar(stmt: Any) -> tuple[Any, str] | None:
    """The key of a local integer scalar a store sets (``T.alloc_var``: a one-element
    local buffer at index 0), in the walk's environment; None for any other store."""
    buffer = stmt.buffer
    scope = str(getattr(buffer.data.type_annotation, "storage_scope", ""))
    if not scope.startswith("local") or not str(buffer.dtype).startswith(("int", "uint")):
        return None
    if len(stmt.indices) != 1 or integer(stmt.indices[0]) != 0:
        return None
    return buffer.data, "scalar"


def branch_roles(cases: list[Any]) -> list[str]:
    """Each branch's role: the producer issues the TMA loads (or, with none, the cp.async
    copies: a consumer may copy too, in a later loop TileLang did not split)."""
    for copies in (("tma_load", "tma_load_multicast"), ("ptx_cp_async",)):
        found = ["producer" if has_call(case, copies) else "consumer" for case in cases]
        if len(set(found)) == len(found):
            return found
    return ["producer"] * len(cases)


def has_call(stmt: Any, names: Any, known: dict[int, bool] | None = None) -> bool:
    """Whether a statement calls one of ``names``. ``known``: what was found before of
    some statements, by a node's address, for these same names (a walk's memo, the IR
    alive): a statement in it is not walked again, and the answer found is added. The
    walk stops at the first call found."""
    if known is not None:
        answer = known.get(stmt.__chandle__())
        if answer is not None:
            return answer
    found = [False]

    def visit(node: Any) -> bool:  # False: do not walk the node's children
        if found[0]:
            return False
        if known is not None:
            answer = known.get(node.__chandle__())
            if answer is not None:
                found[0] = answer
                return False
        if type(node).__name__ == "Call" and _op_name(node.op) in names:
            found[0] = True
            return False
        return True

    pre_order_visit(stmt, visit)
    if known is not None:
        known[stmt.__chandle__()] = found[0]
    return found[0]


# An operator's short name, by its address: operators are registered once and live as
# long as the process (``str(op.name)`` crosses into TVM at every call otherwise).
_OP_NAMES: dict[int, str] = {}


def _op_name(op: Any) -> str:
    key = op.__chandle__()
    name = _OP_NAMES.get(key)
    if name is None:
        name = _OP_NAMES[key] = short(str(op.name))
    return name
