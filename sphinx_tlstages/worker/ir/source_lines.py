"""``#line`` directives for generated code TileLang prints without them (Metal).

TileLang's CUDA and HIP printers write ``#line N "file"`` before each statement whose IR
carries a source span, and the page links each line of code to the kernel line it came
from through them (:func:`...core.results.cuda.source_map`). Its Metal printer writes
none, though the IR it prints from carries the same spans. So the module the printer
was given is printed again with a marker call before each statement that has a span
(a ``for``, a store, a call, an ``if``), and each marker becomes the ``#line`` directive
TileLang's other printers would have written there.

The marked module differs from TileLang's only by those calls: the result is used only
when the code without its markers is TileLang's code byte for byte; else the code is
returned as TileLang printed it, without directives (and without line links).
"""

from __future__ import annotations

import json
import re
from typing import Any

from tilelang import tvm

# The printers that print without directives, by target kind: TileLang's own entry points.
PRINTERS = {"metal": "target.build.tilelang_metal_without_compile"}

# Statements a marker may stand before: those TileLang's C-family printers give a
# directive. Scoping statements (allocations, let bindings, attributes) are left alone: a
# marker wrapped with one would change what is in scope.
_MARKED = frozenset({"tirx.For", "tirx.While", "tirx.BufferStore", "tirx.Evaluate",
                     "tirx.IfThenElse"})
_PREFIX = "tlstages_line_mark_"
_MARKER = re.compile(rf"^(?P<indent>[ \t]*){_PREFIX}(?P<n>\d+)\(\);\n", re.MULTILINE)


def _marked(mod: Any) -> tuple[Any, list[tuple[str, int]]]:
    """``mod`` with a marker call before each spanned statement, and what each marker
    stands for: (file, line).

    TVM prints no span from Python, but its JSON form keeps them. There each spanned
    statement becomes a sequence of the marker and itself; every reference to the
    statement then reaches the sequence, and nothing else moves."""
    graph = json.loads(tvm.ir.save_json(mod))
    nodes: list[dict[str, Any]] = graph["nodes"]

    def add(node: dict[str, Any]) -> int:
        nodes.append(node)
        return len(nodes) - 1

    none = add({"type": "None"})
    extern = add({"type": "ir.Op", "data": "tirx.call_extern"})
    no_annotations = add({"type": "ffi.Map", "data": []})
    places: list[tuple[str, int]] = []
    for index in range(len(nodes)):
        node = nodes[index]
        if node["type"] not in _MARKED:
            continue
        span = node["data"].get("span")
        if not isinstance(span, int) or nodes[span]["type"] != "ir.Span":
            continue
        where = nodes[span]["data"]
        places.append((str(nodes[where["source_name"]]["data"]), int(where["line"])))
        name = add({"type": "ffi.String", "data": f"{_PREFIX}{len(places) - 1}"})
        text = add({"type": "tirx.StringImm",
                    "data": {"span": none, "dtype": "handle", "value": name}})
        call = add({"type": "tirx.Call", "data": {
            "span": none, "dtype": "", "op": extern,
            "args": add({"type": "ffi.Array", "data": [text]}),
            "annotations": no_annotations}})
        marker = add({"type": "tirx.Evaluate", "data": {"span": none, "value": call}})
        moved = add(dict(node))
        nodes[index] = {"type": "tirx.SeqStmt", "data": {
            "span": span, "seq": add({"type": "ffi.Array", "data": [marker, moved]})}}
    return tvm.ir.load_json(json.dumps(graph)), places


def with_line_directives(mod: Any, target: Any, code: str) -> str:
    """``code`` (TileLang's printing of ``mod`` for ``target``) with a ``#line`` directive
    before each statement the IR has a source span for; ``code`` itself where the target
    has its own directives, or the marked printing does not give ``code`` back."""
    printer = PRINTERS.get(str(target.kind.name))
    if printer is None or mod is None:
        return code
    try:
        marked, places = _marked(mod)
        printed = str(tvm.ffi.get_global_func(printer)(marked, target).inspect_source())
    except Exception:  # code without links, never a failed variant
        return code
    if _MARKER.sub("", printed) != code:
        return code

    def directive(found: re.Match[str]) -> str:
        path, line = places[int(found["n"])]
        return f'{found["indent"]}#line {line} "{path}"\n'

    return _MARKER.sub(directive, printed)
