"""What each intrinsic records in the hazard trace: one rule per intrinsic, by its name.

A rule is a function of the walk (:class:`..trace.Trace`), the intrinsic's short name and
its arguments, registered with :func:`rule` under every name it handles, in the module
of its family:

- :mod:`.cp_async`: ``cp.async`` copies, their commits and waits;
- :mod:`.barriers`: ``__syncthreads`` and named barriers, mbarriers (init, waits, arrivals,
  expected bytes, ``cp.async.mbarrier.arrive``) and the fences;
- :mod:`.tma`: TMA loads, multicasts and stores, and a cluster rank's copy branch;
- :mod:`.mma`: wgmma and tcgen05 MMAs reading shared tiles through descriptors, their
  waits and commits, Blackwell's tensor memory;
- :mod:`.templates`: ``ldmatrix``/``stmatrix`` through a pointer, TileLang's templates
  the check follows (``tl::AllReduce``'s workspace), and extern functions handed a
  pointer into shared memory;
- :mod:`.atomics`: ``T.atomic_add`` and its kin on shared memory.

A call no rule names is harmless unless it touches shared memory (:func:`apply`): then it
is "not checked", saying which call (an intrinsic may copy asynchronously: no guess is
made of what it does). A new TileLang that emits a new intrinsic shows up
so on the book's pages: add its rule here, and a mutation test.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ...ir.walk import kind
from ..calls import address_of, call_name, shared
from ..undecided import Undecided

if TYPE_CHECKING:
    from ..trace import Trace

Rule = Callable[["Trace", str, list[Any]], None]
RULES: dict[str, Rule] = {}


def rule(*names: str) -> Callable[[Rule], Rule]:
    """Register a rule under the intrinsics' names it handles."""

    def register(function: Rule) -> Rule:
        for name in names:
            assert name not in RULES, f"two rules for {name}"
            RULES[name] = function
        return function

    return register


def apply(trace: Trace, name: str, args: list[Any]) -> None:
    """Record what the call ``name(*args)`` does (``args`` read from TVM once)."""
    found = RULES.get(name)
    if found is not None:
        found(trace, name, args)
        return
    if "tcgen05" in name or "tensor_memory" in name or "tmem" in name:
        raise Undecided(f"Blackwell's tensor-memory operation {name} is not modelled")
    for arg in args:
        target = address_of(arg)
        if target is None and kind(arg) == "Call" and call_name(arg) == "tvm_access_ptr":
            target = arg.args[1]
        if target is None:
            trace.reads(arg)
            continue
        data = getattr(getattr(target, "buffer", None), "data", target)
        if shared(data):
            raise Undecided(f"{name} accesses {data.name}, which the check does not model")


# The families register their rules on import.
from . import atomics, barriers, cp_async, mma, templates, tma  # noqa: E402, F401
