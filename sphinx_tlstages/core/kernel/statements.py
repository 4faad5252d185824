"""The statements of a kernel factory that the page names: each ``T.Pipelined`` loop's
body, and the tile-level gemm calls. Pure ``ast``; the worker matches them to the IR."""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from dataclasses import dataclass, replace

from .bindings import factory_scopes, module_functions
from .syntax import dotted_name, is_pipelined


@dataclass(frozen=True)
class Statement:
    """One statement of a pipelined loop body: its text, kernel line and the names it uses."""

    text: str
    line: int
    names: frozenset[str]
    # What it does, as the IR would say it: a call's last name (``copy``, ``gemm``,
    # ``reduce_max``, or a helper's such as ``load_tile``), else the statement's kind
    # (``For``, ``If``, ``Assign``...).
    op: str = ""
    # The module-level function it calls, when it calls one (a @T.macro, a helper): its
    # body may become several statements of the IR.
    helper: bool = False
    # For a statement of a macro's body: the call in the loop it came through, as
    # ``load(A, A_s)``; names it apart where the loop calls the macro twice.
    via: str = ""
    # A compound statement's statements (an ``if``'s branches, a ``with``'s body, a
    # Python ``for`` that TileLang unrolls while tracing), each also naming what its
    # condition names: TileLang may keep the compound whole, fold it (a condition known
    # while tracing) or split it into one guarded statement per inner statement.
    inner: tuple[Statement, ...] = ()
    # Emitted several times in a row: a statement of a loop unrolled while tracing.
    repeated: bool = False


@dataclass(frozen=True)
class PipelinedLoop:
    """A ``T.Pipelined`` loop of the kernel: its line, loop variable and body."""

    line: int
    var: str
    body: tuple[Statement, ...]


@functools.lru_cache(maxsize=8)
def _tree(source: str) -> ast.Module:
    """The kernel parsed once for the readers below, which each parsed it again for every
    variant (a worker lowers several variants of one kernel). The tree is only walked,
    never changed."""
    return ast.parse(source)


def _walk(source: str, factory_name: str) -> Iterator[ast.AST]:
    """Every node of the factory and of the module-level functions it reaches."""
    for scope in factory_scopes(_tree(source), factory_name, source):
        yield from ast.walk(scope)


def _one_line(segment: str, limit: int = 96) -> str:
    text = " ".join(segment.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _op(stmt: ast.stmt) -> str:
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        return dotted_name(stmt.value.func).rsplit(".", 1)[-1]
    return type(stmt).__name__


def _names(node: ast.AST) -> frozenset[str]:
    return frozenset(n.id for n in ast.walk(node) if isinstance(n, ast.Name))


def _traced_loop(stmt: ast.stmt) -> bool:
    """A ``for`` that Python runs while TileLang traces (``range``, a list): its body is
    emitted once per iteration; ``T.Parallel``, ``T.serial``... are loops of the IR."""
    return isinstance(stmt, ast.For) and not (
        isinstance(stmt.iter, ast.Call) and "." in dotted_name(stmt.iter.func))


def _branches(stmt: ast.stmt) -> tuple[list[ast.stmt], frozenset[str]] | None:
    """The statements inside a compound statement TileLang may take apart, and the names
    its condition (or iteration) adds to each; None for any other statement."""
    if isinstance(stmt, ast.If):
        return [*stmt.body, *stmt.orelse], _names(stmt.test)
    if isinstance(stmt, ast.With):
        return list(stmt.body), frozenset().union(*(_names(i) for i in stmt.items))
    if _traced_loop(stmt):
        assert isinstance(stmt, ast.For)
        return list(stmt.body), _names(stmt.target) | _names(stmt.iter)
    return None


# Where a kernel's calls to TileLang start (``T.copy``, ``tilelang.language.copy``).
_TILELANG = ("T", "tl", "tilelang")


def _calls_helper(stmt: ast.stmt) -> bool:
    """A statement that only calls something not TileLang's: a macro the kernel made
    elsewhere (``softmax = make_softmax(...)``, one of another module), which TileLang
    inlines into as many statements as it emits."""
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) \
        and dotted_name(stmt.value.func).split(".")[0] not in ("", *_TILELANG)


def _statement(source: str, stmt: ast.stmt, functions: dict[str, ast.FunctionDef],
               depth: int) -> Statement:
    helpers = set(functions)
    segment = ast.get_source_segment(source, stmt) or ast.unparse(stmt)
    names = _names(stmt)
    called = {dotted_name(n.func) for n in ast.walk(stmt) if isinstance(n, ast.Call)}
    found = Statement(_one_line(segment), stmt.lineno, names, _op(stmt),
                      bool(called & helpers) or _calls_helper(stmt))
    inside = _branches(stmt) if depth <= 6 else None
    if inside is None:
        return found
    body, added = inside
    inner = tuple(_under(each, added, _traced_loop(stmt))
                  for child in body for each in _expanded(source, child, functions, depth + 1))
    return replace(found, inner=inner, helper=False)


def _under(stmt: Statement, names: frozenset[str], repeated: bool) -> Statement:
    """A statement inside a compound one: also naming what its condition names, and
    emitted once per iteration where the compound is a loop unrolled while tracing; the
    statements inside it alike."""
    return replace(stmt, names=stmt.names | names, repeated=stmt.repeated or repeated,
                   inner=tuple(_under(each, names, repeated) for each in stmt.inner))


def _expanded(source: str, stmt: ast.stmt, functions: dict[str, ast.FunctionDef],
              depth: int = 0) -> list[Statement]:
    """A loop body statement, or, where it calls a function TileLang inlines (a
    ``@T.macro``, at the module's level or the factory's), that body's statements, each
    naming the buffers the call passes for its parameters (``load(A, A_s)`` into ``def
    load(X, X_s)``). A compound statement holds its statements, expanded alike."""
    call = stmt.value if isinstance(stmt, ast.Expr) else None
    if depth > 3 or not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name) \
            or call.func.id not in functions or (call.keywords and any(
                k.arg is None for k in call.keywords)):
        return [_statement(source, stmt, functions, depth)]
    helper = functions[call.func.id]
    params = [a.arg for a in [*helper.args.posonlyargs, *helper.args.args]]
    given: dict[str, ast.expr] = dict(zip(params, call.args, strict=False))
    given.update({k.arg: k.value for k in call.keywords if k.arg})
    passed = {name: frozenset(n.id for n in ast.walk(value) if isinstance(n, ast.Name))
              for name, value in given.items()}
    body = [b for b in helper.body
            if not (isinstance(b, ast.Expr) and isinstance(b.value, ast.Constant))]
    via = _one_line(ast.get_source_segment(source, stmt) or ast.unparse(stmt), 60)
    found = [_passed(each, passed, via) for inner in body
             for each in _expanded(source, inner, functions, depth + 1)]
    return found or [_statement(source, stmt, functions, depth)]


def _passed(stmt: Statement, passed: dict[str, frozenset[str]], via: str) -> Statement:
    """A macro body's statement also naming what the call passes for each parameter it
    names, and the call it came through; its inner statements alike."""
    names = frozenset(m for n in stmt.names for m in passed.get(n, {n}))
    return replace(stmt, names=names | stmt.names, via=stmt.via or via,
                   inner=tuple(_passed(each, passed, via) for each in stmt.inner))


def _apart(body: list[Statement]) -> tuple[Statement, ...]:
    """A macro the loop calls more than once gives one statement per call on the same
    line: each says the call it came through, or the page would show them as one."""
    seen: dict[tuple[str, int], int] = {}
    for each in body:
        seen[each.text, each.line] = seen.get((each.text, each.line), 0) + 1
    return tuple(replace(each, text=f"{each.text} via {each.via}")
                 if each.via and seen[each.text, each.line] > 1 else each for each in body)


def pipelined(source: str, factory_name: str) -> list[PipelinedLoop]:
    """Each ``T.Pipelined`` loop of the factory and of the module-level functions it
    reaches (a ``@T.macro``), in source order; a call in the loop body to a module-level
    function stands for that function's statements (TileLang inlines it)."""
    return list(_pipelined(source, factory_name))


@functools.lru_cache(maxsize=8)
def _pipelined(source: str, factory_name: str) -> tuple[PipelinedLoop, ...]:
    """:func:`pipelined`, read once per kernel and factory: a worker lowers several
    variants of one kernel, and the loops (frozen) are the same for each."""
    tree = _tree(source)
    functions = {name: b.node for name, b in module_functions(tree, source).items()}
    # A macro the factory defines inside itself, as attention kernels do, shadows a
    # module-level function of its name there.
    for scope in factory_scopes(tree, factory_name, source):
        functions.update({node.name: node for node in ast.walk(scope)
                          if isinstance(node, ast.FunctionDef) and node is not scope})
    loops: list[PipelinedLoop] = []
    for found in _walk(source, factory_name):
        if isinstance(found, ast.For) and is_pipelined(found):
            var = ast.unparse(found.target)
            body = [each for stmt in found.body
                    for each in _expanded(source, stmt, functions)]
            loops.append(PipelinedLoop(found.lineno, var, _apart(body)))
    return tuple(sorted(loops, key=lambda loop: loop.line))


def pipelined_loops(source: str, factory_name: str) -> list[list[Statement]]:
    """The body statements of each ``T.Pipelined`` loop in the factory, in source order."""
    return [list(loop.body) for loop in pipelined(source, factory_name)]


def loop_over(source: str, factory_name: str, variable: str) -> list[Statement]:
    """The body statements of the first loop over ``variable`` in the factory (a plain
    ``for s in T.serial(n)``): where a finding in an unpipelined loop is."""
    for found in _walk(source, factory_name):
        if isinstance(found, ast.For) and isinstance(found.target, ast.Name) \
                and found.target.id == variable:
            return [Statement(_one_line(ast.get_source_segment(source, stmt)
                                        or ast.unparse(stmt)), stmt.lineno,
                              frozenset(n.id for n in ast.walk(stmt)
                                        if isinstance(n, ast.Name)))
                    for stmt in found.body]
    return []


def _call_text(source: str, node: ast.AST) -> str:
    return _one_line(ast.get_source_segment(source, node) or ast.unparse(node))


def _base_name(node: ast.expr) -> str:
    """``A_shared`` for ``A_shared``, ``A_shared[0:64, :]`` or ``A_shared[k % 2]``."""
    while isinstance(node, (ast.Subscript, ast.Starred)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else ast.unparse(node)


def gemm_statements(source: str, factory_name: str) -> list[Statement]:
    """The tile-level gemm calls in the factory (``T.gemm``, ``T.wgmma_gemm``,
    ``T.tcgen05_gemm`` ...), in source order; ``names`` holds their first three
    arguments' buffer names (A, B, C)."""
    return list(_gemm_statements(source, factory_name))


@functools.lru_cache(maxsize=8)
def _gemm_statements(source: str, factory_name: str) -> tuple[Statement, ...]:
    """:func:`gemm_statements`, read once per kernel and factory (as :func:`_pipelined`)."""
    found = []
    for node in _walk(source, factory_name):
        if isinstance(node, ast.Call) and dotted_name(node.func).rsplit(".", 1)[-1] \
                .endswith("gemm") and "." in dotted_name(node.func):
            operands = frozenset(_base_name(arg) for arg in node.args[:3])
            found.append(Statement(_call_text(source, node), node.lineno, operands))
    found.sort(key=lambda s: s.line)
    return tuple(found)


# Loops the kernel writes whose iterations the hazard check may name: those run one after
# another by each thread (a T.Parallel or T.vectorized loop is spread over threads and
# lanes, and TileLang's own loops reuse such names).
_THREAD_LOOPS = ("Parallel", "vectorized", "Vectorized")


def serial_loop_variables(source: str, factory_name: str) -> frozenset[str]:
    """The variables of the loops the factory (and what it reaches) runs in sequence:
    ``range``, ``T.serial``, ``T.unroll``, ``T.Pipelined``, ``T.grid``... (not
    ``T.Parallel`` or ``T.vectorized``)."""
    try:
        nodes = list(_walk(source, factory_name))
    except (SyntaxError, ValueError):
        return frozenset()
    names: set[str] = set()
    for node in nodes:
        if not isinstance(node, ast.For):
            continue
        func = node.iter.func if isinstance(node.iter, ast.Call) else None
        called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if called in _THREAD_LOOPS:
            continue
        names.update(target.id for target in ast.walk(node.target)
                     if isinstance(target, ast.Name))
    return frozenset(names)
