"""``:assert:``: a chapter's claims about the compiler, checked on every build.

Each line is a Python expression over one variant's facts, evaluated for every variant
that lowered; a false one (or one that raises) is an error at its line and fails the
build, as a snapshot drift does. The names an expression can use are listed in
:func:`namespace`.
"""

from __future__ import annotations

import ast
import difflib
import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass
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


# What each assertion name reads of the fact it is declared on (core.results.fact_table):
# the one place a fact becomes a name. A fact the result lacks (a page built from a
# snapshot recorded before it) gives no name, and a claim using it is skipped there.
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
    # By the classes core.hardware.sass_lines names; numbered as the kernel's listing
    # numbers its lines in names_of.
    "sass_lines": {"sass_line": lambda found: {
        int(line): dict(counts) for line, counts in found["lines"].items()}},
    # Pass records say what each run changed only where the variant recorded them (see
    # reads_passes); a page built from a snapshot has the counts its claims name.
    "hazards": {"hazards": lambda found: SimpleNamespace(
        verdict=found["verdict"], text=found["text"],
        findings=[f"{f['kind']} on {f['buffer']}" for f in found["findings"]])},
    "passes": {"passes": lambda records: counts(records) if recorded(records) else _ABSENT},
    "pass_counts": {"passes": lambda kept: {k: v for k, v in kept.items() if v is not None}},
}


@dataclass(frozen=True)
class Name:
    """One name an ``:assert:`` expression can use, as the reference lists it."""

    name: str
    type: str  # what the expression gets, in Python's words
    about: str
    example: str  # true for the book's seed GEMM on sm_80 at every default depth


# Every name, once: the reference's table, the unknown-name message and the test that
# evaluates each example against real lowerings are made from this.
NAMES: tuple[Name, ...] = (
    Name("num_stages", "int", "the variant's pipeline depth", "num_stages in (1, 2, 3, 4)"),
    Name("params", "dict[str, object]", "the factory's keywords, swept ones included",
         'params["block_K"] == 64'),
    Name("target", "str", "the target's label", 'target == "sm_80"'),
    Name("stage", "list[int]", "each statement's stage in the first pipelined loop",
         "stage == [0, 0, num_stages - 1 if num_stages > 1 else 1]"),
    Name("order", "list[int]", "each statement's order in the first pipelined loop",
         "sorted(order) == [0, 1, 2]"),
    Name("shared", "dict[str, namespace]", "shared buffers by name: ``.shape`` (with the "
         "version dimension only where num_stages > 1), ``.dtype``, ``.bytes``",
         'shared["A_shared"].shape[-2:] == (128, 64)'),
    Name("dynamic_shared_bytes", "int", "the merged dynamic shared allocation",
         "dynamic_shared_bytes == 32768 * max(num_stages, 1)"),
    Name("threads", "int", "threads per block", 'threads == params["threads"]'),
    Name("sync", "dict[str, list[int] | int]", "synchronisation and async operations "
         "by kind: ``sync['cp_async_wait']`` lists each wait's count",
         'max(sync["cp_async_wait"]) == num_stages - 1'),
    Name("cuda_lines", "int", "lines of generated code", "cuda_lines > 0"),
    Name("warp_specialized", "namespace | None", "None, or ``.threads``, "
         "``.producer_threads``, ``.barriers``",
         '(warp_specialized is None) == (target != "sm_90a")'),
    Name("gemm", "list[str]", "the instruction each ``T.gemm`` became, in source order: "
         "``mma_sync``, ``wgmma``, ``tcgen05``, ``mfma``, ``simdgroup_multiply_accumulate`` "
         "or ``matmul2d`` (Metal), or ``fma``",
         'gemm[0] == ("wgmma" if target == "sm_90a" else "mma_sync")'),
    Name("tmem", "dict[str, namespace]", "tensor-memory buffers by name: ``.columns``, "
         "``.shape``, ``.dtype`` (sm_100a)", 'tmem == {} or tmem["C_tmem"].columns == 128'),
    Name("hazards", "namespace", "the hazard check's ``.verdict`` (``\"none\"``, "
         "``\"hazard\"``, ``\"not checked\"``), ``.text`` and ``.findings`` "
         "(``\"RAW on S\"``)", 'hazards.verdict == "none"'),
    Name("passes", "dict[str, int]", "lines of IR each pass run changed, by "
         "``name#run``", 'passes["tl.PipelinePlanning#1"] > 0'),
    Name("registers", "int", "registers per thread (``:show: resources``)",
         "registers <= 255"),
    Name("spills", "int", "bytes spilled, stored and loaded (``:show: resources``)",
         "spills == 0"),
    Name("stack", "int", "stack bytes per thread (``:show: resources``)", "stack == 0"),
    Name("occupancy", "namespace | None", "``.blocks_per_sm``, ``.warps_per_sm``, "
         "``.occupancy``, ``.limiter`` (``:show: resources``)",
         "occupancy.blocks_per_sm >= 1"),
    Name("sass", "dict[str, int]", "static SASS instruction counts (``:show: resources``)",
         'sass["HMMA"] > 0'),
    # Not a fact of one variant: the fit part's table, which reads lowerings for other
    # targets (core.hardware.fit); the checks give it to every claim of a directive that
    # names it, and a page built from a snapshot, which lacks those lowerings, skips it.
    Name("fit", "dict[str, namespace]", "this variant's row of the fit table, by GPU or "
         "target (``fit[\"H100\"]``, ``fit[\"sm_86\"]``): ``.fits``, ``.shared`` and "
         "``.limit`` (bytes per block), ``.misses`` (bytes over), ``.deepest`` (the "
         "largest depth of these swept values that fits), ``.blocks_per_sm`` (``:show: "
         "resources``), ``.tried`` (in the kernel's tuning list; None: it lists none), "
         "``.target``", 'fit["H100"].deepest == 4 and fit["RTX 4090"].deepest == 3'),
    Name("sass_line", "dict[int, dict[str, int]]", "static SASS counts by kernel line, "
         "numbered as the kernel's listing numbers it (a kernel written in the page: the "
         "page's line numbers), by class: ``mma``, ``global``, "
         "``shared``, ``async`` (cp.async, TMA), ``sync``, ``spill`` (local memory), "
         "``total``; lines with no instruction are absent (``:show: resources``)",
         'max(c["mma"] for c in sass_line.values()) == sass["HMMA"]'),
)
BUILTIN_NAMES = tuple(sorted(_BUILTINS))


def namespace(result: Result, variant: VariantSpec, first_line: int = 1) -> dict[str, Any]:
    """The names ``result`` gives an expression on ``variant``: see :data:`NAMES`;
    ``first_line``: the number the kernel's listing gives its first line (a kernel
    written in the page is numbered as the page's lines)."""
    return names_of(result, variant.num_stages, dict(variant.params), variant.target.label,
                    first_line)


def names_of(result: Result, num_stages: int, params: dict[str, str],
             target: str, first_line: int = 1) -> dict[str, Any]:
    """The names of :data:`NAMES` a result has (a page built from an older snapshot may
    lack some), for a variant of ``num_stages``, ``params`` (as written) and ``target``,
    whose kernel's listing numbers its first line ``first_line``."""
    names: dict[str, Any] = {}
    for fact in FACTS:
        if fact.name not in result:
            continue
        for name, read in _READERS.get(fact.name, {}).items():
            value = read(result[fact.name])  # type: ignore[literal-required]
            if value is not _ABSENT and name not in names:
                names[name] = value
    if "sass_line" in names:  # numbered as the listing numbers the kernel's lines
        names["sass_line"] = {line + first_line - 1: counts
                              for line, counts in names["sass_line"].items()}
    return {**names,
            "num_stages": num_stages,
            "params": {k: literal_value(v) for k, v in params.items()},
            "target": target}


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
    """None when ``expression`` holds, else why not: for a false one, the value of every
    name and subexpression it compared (as pytest shows a failed assert)."""
    try:
        value = eval(_compiled(expression), {"__builtins__": _BUILTINS}, names)
    except NameError as exc:
        if exc.name in ASSERT_NAMES:
            # A fact the result lacks: only a page built from a snapshot recorded before
            # the fact existed (a lowered result has every fact its claims read), and
            # the build reports that snapshot as not guarding the page.
            return None
        return unknown_name(str(exc.name), names)
    except Exception as exc:
        return f"raised {type(exc).__name__}: {exc}" + _values(expression, names)
    return None if value else "is false" + _values(expression, names)


def one_line(why: str) -> str:
    """:func:`check`'s answer on one line (for a report's table): ``is false
    (num_stages = 1, ...)``."""
    first, *values = why.split("\n  ")
    return f"{first} ({'; '.join(values)})" if values else first


def _evaluate(expression: str | ast.Expression, names: dict[str, Any]) -> Any:
    code = compile(expression, "<assert>", "eval")
    return eval(code, {"__builtins__": _BUILTINS}, names)


def unknown_name(name: str, names: dict[str, Any]) -> str:
    """Why a claim that reads ``name`` cannot be checked: the nearest valid name, and
    every one."""
    valid = sorted({n.name for n in NAMES} | names.keys())
    close = difflib.get_close_matches(name, valid, n=1, cutoff=0.4)
    hint = f"; did you mean {close[0]}?" if close else "."
    return (f"uses {name!r}, which is not a name a claim can use{hint} The names: "
            f"{', '.join(valid)}; and the functions {', '.join(BUILTIN_NAMES)}")


_SHOWN_CHARS = 160


def _outer_first(top: ast.expr) -> list[ast.expr]:
    """The subexpressions under ``top``, outer first; not constants, and nothing inside a
    comprehension or lambda (their own names have no value outside)."""
    found: list[ast.expr] = []
    queue: list[ast.AST] = list(ast.iter_child_nodes(top))
    while queue:
        node = queue.pop(0)
        if isinstance(node, ast.Lambda):
            continue
        if isinstance(node, ast.GeneratorExp | ast.ListComp | ast.SetComp | ast.DictComp):
            queue.append(node.generators[0].iter)  # the one part evaluated outside
            continue
        if isinstance(node, ast.expr) and not isinstance(node, ast.Constant):
            found.append(node)
        queue.extend(ast.iter_child_nodes(node))
    return found


def _values(expression: str, names: dict[str, Any]) -> str:
    """``\n  shared["A_shared"].shape = (128, 64)``...: each name and subexpression of
    ``expression`` (outer first, each once; not constants, functions or names bound in
    a comprehension) with its value on this variant."""
    try:
        tree = ast.parse(expression, mode="eval")
    except SyntaxError:
        return ""
    bases = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Attribute | ast.Subscript)}
    said: dict[str, str] = {}
    for node in _outer_first(tree.body):
        # As the author wrote it (their quotes, no added parentheses).
        text = ast.get_source_segment(expression, node) or ast.unparse(node)
        if text in said:
            continue
        try:
            value = _evaluate(ast.Expression(body=node), names)
        except NameError:
            continue  # a name reported otherwise
        except Exception as exc:
            said[text] = f"raised {type(exc).__name__}: {exc}"
            continue
        # A function says nothing; a dict or namespace indexed further is shown by the
        # value read from it.
        if callable(value) or (id(node) in bases and isinstance(value, SimpleNamespace)):
            continue
        if id(node) in bases and isinstance(value, dict):
            said[f"{text} has"] = ", ".join(map(repr, value)) or "no keys"
            continue
        shown = repr(value)
        said[text] = shown if len(shown) <= _SHOWN_CHARS \
            else shown[:_SHOWN_CHARS - 3] + "..."
    return "".join(f"\n  {text}{'' if text.endswith(' has') else ' ='} {shown}"
                   for text, shown in said.items())
