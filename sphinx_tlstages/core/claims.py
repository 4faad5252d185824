"""``:assert:``: a chapter's claims about the compiler, checked on every build.

Each line is a Python expression over one variant's facts, evaluated for every variant
that lowered; a false one (or one that raises) is an error at its line and fails the
build, as a snapshot drift does. The names an expression can use are listed in
:func:`namespace`.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Callable, Iterable
from types import CodeType, SimpleNamespace
from typing import TYPE_CHECKING, Any

from .plan.options import literal_value
from .results.fact_table import ASSERT_NAMES, FACTS
from .results.passes import counts, recorded

if TYPE_CHECKING:
    from .plan.spec import VariantSpec
    from .results.result import Result

_BUILTINS = {f.__name__: f for f in (abs, all, any, len, list, max, min, range, sorted, sum,
                                     tuple)}


# What a reader gives for a name the result cannot answer (pass records that do not say
# what each run changed): the name is left out.
_ABSENT = object()


def _first_loop(key: str) -> Callable[[list[dict[str, Any]]], list[int]]:
    return lambda loops: list(loops[0][key]) if loops else []


def _by_name(buffers: list[dict[str, Any]], *fields: str) -> dict[str, SimpleNamespace]:
    return {b["name"]: SimpleNamespace(shape=tuple(b["shape"]), dtype=b["dtype"],
                                       **{f: b[f] for f in fields}) for b in buffers}


# What each assertion name reads of the fact it is declared on (core.fact_table): the
# one place a fact becomes a name. A fact the result lacks (a page built from a snapshot
# recorded before it) gives no name, and a claim using it is skipped there.
_READERS: dict[str, dict[str, Callable[[Any], Any]]] = {
    "pipeline": {"stage": _first_loop("stage"), "order": _first_loop("order")},
    "warp_specialized": {"warp_specialized": lambda ws: SimpleNamespace(**ws) if ws else None},
    "shared": {"shared": lambda buffers: _by_name(buffers, "bytes")},
    "dynamic_shared_bytes": {"dynamic_shared_bytes": int},
    "threads": {"threads": int},
    "sync": {"sync": dict},
    "cuda_lines": {"cuda_lines": int},
    "tmem": {"tmem": lambda buffers: _by_name(buffers, "columns")},
    "gemm": {"gemm": lambda calls: [g["instruction"] for g in calls]},
    "resources": {
        "registers": lambda r: r["registers"],
        "spills": lambda r: r["spill_stores"] + r["spill_loads"],
        "stack": lambda r: r["stack"],
        "occupancy": lambda r: SimpleNamespace(**r["occupancy"]) if r["occupancy"] else None,
        # No counts where the SASS could not be listed: a claim on them is skipped.
        "sass": lambda r: dict(r["sass"]) if r.get("sass") else _ABSENT,
    },
    # Pass records say what each run changed only where the variant recorded them (see
    # reads_passes); a page built from a snapshot has the counts its claims name.
    "hazards": {"hazards": lambda found: SimpleNamespace(
        verdict=found["verdict"], text=found["text"],
        findings=[f"{f['kind']} on {f['buffer']}" for f in found["findings"]])},
    "passes": {"passes": lambda records: counts(records) if recorded(records) else _ABSENT},
    "pass_counts": {"passes": lambda kept: {k: v for k, v in kept.items() if v is not None}},
}


def namespace(result: Result, variant: VariantSpec) -> dict[str, Any]:
    """``num_stages``, ``params`` (swept ones included), ``target`` (the arch),
    ``shared["A_shared"].shape``, ``sync["cp_async_wait"]``, ``stage``/``order`` (of the
    first pipelined loop), ``passes`` (lines of IR each pass run changed, by ``name#run``
    counted in this variant's own pipeline), ``threads``, ``cuda_lines``,
    ``dynamic_shared_bytes``, ``warp_specialized`` (None, or ``.threads``,
    ``.producer_threads``, ``.barriers``), ``gemm`` (the instruction each tile-level gemm
    call became, in source order: ``gemm[0] == "wgmma"``; one of ``mma_sync``, ``wgmma``,
    ``tcgen05``, ``mfma``, ``fma``), ``tmem`` (tensor-memory buffers by name:
    ``tmem["C_tmem"].columns``, ``.shape``, ``.dtype``), ``hazards`` (the hazard check's
    ``.verdict``: ``"none"``, ``"hazard"`` or ``"not checked"``; ``.text``; ``.findings``,
    each ``"RAW on S"``); where the page shows ``resources``: ``registers`` (per thread),
    ``spills`` (bytes stored and loaded), ``stack`` (bytes), ``occupancy``
    (``.blocks_per_sm``, ``.warps_per_sm``, ``.occupancy``, ``.limiter``), ``sass``
    (static counts: ``sass["HMMA"]``)."""
    names: dict[str, Any] = {}
    for fact in FACTS:
        if fact.name not in result:
            continue
        for name, read in _READERS.get(fact.name, {}).items():
            value = read(result[fact.name])  # type: ignore[literal-required]
            if value is not _ABSENT and name not in names:
                names[name] = value
    return {**names,
            "num_stages": variant.num_stages,
            "params": {k: literal_value(v) for k, v in variant.params},
            "target": variant.target.label}


def names_used(expressions: Iterable[str]) -> set[str]:
    """The names ``expressions`` read (those that do not parse read none)."""
    found: set[str] = set()
    for expression in expressions:
        found |= _names_read(expression)
    return found


@functools.lru_cache(maxsize=1024)
def _names_read(expression: str) -> frozenset[str]:
    """One claim's names, parsed once per build: every build asks them of every claim
    several times (the snapshot checks once per variant, the checks of claims again)."""
    try:
        tree = ast.parse(expression, mode="eval")
    except SyntaxError:
        return frozenset()
    return frozenset(node.id for node in ast.walk(tree) if isinstance(node, ast.Name))


def reads_passes(expression: str) -> bool:
    """Whether ``expression`` uses ``passes``: its variants must record their pass
    changes (see :attr:`VariantSpec.record_passes`)."""
    return "passes" in names_used((expression,))


@functools.lru_cache(maxsize=1024)
def _compiled(expression: str) -> CodeType:
    """A claim compiled once per build, not once per variant it is checked on."""
    return compile(expression, "<assert>", "eval")


def check(expression: str, names: dict[str, Any]) -> str | None:
    """None when ``expression`` holds, else why not."""
    try:
        value = eval(_compiled(expression), {"__builtins__": _BUILTINS}, names)
    except NameError as exc:
        if exc.name in ASSERT_NAMES:
            # A fact the result lacks: only a page built from a snapshot recorded before
            # the fact existed (a lowered result has every fact its claims read), and
            # the build reports that snapshot as not guarding the page.
            return None
        return f"raised NameError: {exc}"
    except Exception as exc:
        return f"raised {type(exc).__name__}: {exc}"
    return None if value else "is false"
