"""The barrier operations of TMA pipelines (Hopper, Blackwell) in the hazard trace:
mbarrier initialisation, waits with their parity, arrivals with their count, expected
bytes, TMA copies into shared memory, and the shared tiles wgmma reads through its
descriptors. A part of :class:`.trace.Trace`."""

from __future__ import annotations

from typing import Any

import tilelang  # noqa: F401  (puts TileLang's TVM on the path)
from tvm.tirx.stmt_functor import post_order_visit

from ..ir.walk import kind, op_name, short

BARRIER_OPS = frozenset({
    "ptx_init_barrier_thread_count", "mbarrier_wait_parity", "ptx_arrive_barrier",
    "mbarrier_arrive", "ptx_arrive_barrier_expect_tx", "mbarrier_expect_tx", "tma_load",
    "tma_load_multicast",
    "ptx_cp_async_barrier_noinc", "ptx_fence_barrier_init", "warpgroup_wait",
    "warpgroup_commit_batch",
    "initialize_wgmma_descriptor", "increase_descriptor_offset", "ptx_wgmma_ss",
    "ptx_wgmma_rs"})


def _name(var: Any) -> str:
    """A variable's name (``str`` of a TVM node prints it as a script: slow)."""
    return str(getattr(var, "name", "")) or str(var)


class Undecided(Exception):
    """The walk cannot say what the code does; the message says why."""


def shared(var: Any) -> bool:
    """Whether a buffer's data lives in shared memory (barriers are not data)."""
    scope = getattr(getattr(var, "type_annotation", None), "storage_scope", "")
    return str(scope).startswith("shared") and "barrier" not in str(scope)


class RingOps:
    """The barrier half of the trace; :class:`.trace.Trace` gives the rest."""

    env: dict[Any, tuple[int, int]]
    threads: Any
    elected: bool
    descriptors: dict[Any, list[Any]]
    batch: set[tuple[Any, ...]]
    boxes: dict[str, int]
    records: list[dict[str, Any]]
    fallback: bool
    parts: dict[int, Any]  # a barrier's or pointer's parts, by the node's address

    def walk(self, stmt: Any) -> None:
        raise NotImplementedError

    def constant(self, expr: Any, what: str) -> int:
        raise NotImplementedError

    def emit(self, record: dict[str, Any]) -> None:
        raise NotImplementedError

    def region(self, buffer: Any, indices: list[Any]) -> tuple[str, str, int, int]:
        raise NotImplementedError

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
        elif name == "ptx_cp_async_barrier_noinc":
            # ``cp.async.mbarrier.arrive.noinc``: each executing thread's arrival, made once
            # its earlier cp.async copies land (``.noinc``: the init count includes it).
            self.emit({"op": "arrive", "bar": self.barrier(args[0]), "n": self.arrivals()})
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
        elif name == "warpgroup_wait":
            self.emit({"op": "wgwait", "n": self.constant(args[0], "a warpgroup wait")})
        elif name == "warpgroup_commit_batch":
            self.batch = set()
            self.emit({"op": "wgcommit"})
        elif name == "initialize_wgmma_descriptor":
            found = self.pointer(args[1])
            if found is None:
                raise Undecided("a wgmma descriptor of an address the check cannot read")
            self.descriptors[args[0].buffer.data] = list(found)
        elif name == "increase_descriptor_offset":
            region = self.descriptors.get(args[0].buffer.data)
            if region is None:
                raise Undecided("a wgmma descriptor offset before its initialisation")
            region[2] += self.constant(args[1], "a descriptor offset")
        elif name.startswith("ptx_wgmma"):
            for arg in args:
                region = self.descriptors.get(arg) if kind(arg) == "Var" else None
                if region is not None and tuple(region) not in self.batch:
                    self.batch.add(tuple(region))
                    buffer, root, lo, _ = region
                    self.emit({"op": "read", "buffer": buffer, "root": root, "lo": lo,
                               "hi": None, "how": "wgmma", "async": True})

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


def branch_roles(cases: list[Any]) -> list[str]:
    """Each branch's role: the producer issues the TMA loads (or, with none, the cp.async
    copies: a consumer may copy too, in a later loop TileLang did not split)."""
    for copies in (("tma_load", "tma_load_multicast"), ("ptx_cp_async",)):
        found = ["producer" if has_call(case, copies) else "consumer" for case in cases]
        if len(set(found)) == len(found):
            return found
    return ["producer"] * len(cases)


def has_call(stmt: Any, names: Any) -> bool:
    """Whether a statement calls one of ``names``."""
    found = [False]

    def visit(node: Any) -> None:
        if not found[0] and type(node).__name__ == "Call" \
                and str(node.op.name).rsplit(".", 1)[-1] in names:
            found[0] = True

    post_order_visit(stmt, visit)
    return found[0]


