"""``:assert:``: a chapter's claims about the compiler, checked on every build.

Each line is a Python expression over one variant's facts, evaluated for every variant
that lowered; a false one (or one that raises) is an error at its line and fails the
build, as a snapshot drift does. The names an expression can use are listed in
:func:`namespace`.
"""

from __future__ import annotations

import ast
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from .options import literal_value
from .passes import recorded

if TYPE_CHECKING:
    from .result import Result
    from .spec import VariantSpec

_BUILTINS = {f.__name__: f for f in (abs, all, any, len, list, max, min, range, sorted, sum,
                                     tuple)}
# Facts added after some snapshots were taken: a page built from such a snapshot has
# none, and a claim about them is skipped there rather than failed. Pass records are in
# no snapshot at all (see namespace).
LATER_FACTS = ("gemm", "tmem")
_NOT_IN_SNAPSHOTS = (*LATER_FACTS, "passes")


def namespace(result: Result, variant: VariantSpec) -> dict[str, Any]:
    """``num_stages``, ``params`` (swept ones included), ``target`` (the arch),
    ``shared["A_shared"].shape``, ``sync["cp_async_wait"]``, ``stage``/``order`` (of the
    first pipelined loop), ``passes`` (lines of IR each pass run changed, by ``name#run``
    counted in this variant's own pipeline), ``threads``, ``cuda_lines``,
    ``dynamic_shared_bytes``, ``warp_specialized`` (None, or ``.threads``,
    ``.producer_threads``, ``.barriers``), ``gemm`` (the instruction each tile-level gemm
    call became, in source order: ``gemm[0] == "wgmma"``; one of ``mma_sync``, ``wgmma``,
    ``tcgen05``, ``mfma``, ``fma``), ``tmem`` (tensor-memory buffers by name:
    ``tmem["C_tmem"].columns``, ``.shape``, ``.dtype``)."""
    loops = result.get("pipeline") or []
    ws = result.get("warp_specialized")
    later: dict[str, Any] = {}
    if "gemm" in result:
        later["gemm"] = [g["instruction"] for g in result["gemm"]]
    if "tmem" in result:
        later["tmem"] = {b["name"]: SimpleNamespace(shape=tuple(b["shape"]), dtype=b["dtype"],
                                                    columns=b["columns"])
                         for b in result["tmem"]}
    records = result.get("passes") or []
    if recorded(records):  # see reads_passes; never so in a snapshot
        later["passes"] = {f"{p['name']}#{p['run']}": p["added"] + p["removed"]
                           for p in records}
    return {**later,
        "num_stages": variant.num_stages,
        "params": {k: literal_value(v) for k, v in variant.params},
        "target": variant.target.label,
        "shared": {b["name"]: SimpleNamespace(shape=tuple(b["shape"]), dtype=b["dtype"],
                                              bytes=b["bytes"]) for b in result["shared"]},
        "sync": dict(result["sync"]),
        "stage": list(loops[0]["stage"]) if loops else [],
        "order": list(loops[0]["order"]) if loops else [],
        "threads": result["threads"],
        "cuda_lines": result["cuda_lines"],
        "dynamic_shared_bytes": result["dynamic_shared_bytes"],
        "warp_specialized": SimpleNamespace(**ws) if ws else None,
    }


def reads_passes(expression: str) -> bool:
    """Whether ``expression`` uses ``passes``: its variants must record their pass
    changes (see :attr:`VariantSpec.record_passes`)."""
    try:
        tree = ast.parse(expression, mode="eval")
    except SyntaxError:
        return False
    return any(isinstance(node, ast.Name) and node.id == "passes" for node in ast.walk(tree))


def check(expression: str, names: dict[str, Any]) -> str | None:
    """None when ``expression`` holds, else why not."""
    try:
        value = eval(compile(expression, "<assert>", "eval"), {"__builtins__": _BUILTINS},
                     names)
    except NameError as exc:
        if exc.name in _NOT_IN_SNAPSHOTS:
            return None  # not recorded in the snapshot this page was built from
        return f"raised NameError: {exc}"
    except Exception as exc:
        return f"raised {type(exc).__name__}: {exc}"
    return None if value else "is false"
