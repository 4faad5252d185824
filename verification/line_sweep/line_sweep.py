#!/usr/bin/env python3
"""Every pipelined statement of other projects' kernels on its kernel line, every schedule
figure read: the line sweep.

The kernels are the hazard sweep's (``../hazard_sweep``: TileLang's examples, or its
JSON list of other repositories' kernels); each is lowered as a worker lowers it and its
result assembled as a page gets it. A row per target and ``num_stages`` counts the
statements of the pipelined loops (the software pipeliner's and the warp-specialised
one's) and says each that is on no kernel line, and whether the schedule figure could
be read. The sweep exits 1 where a statement is on no line or a figure is not read.

    python verification/line_sweep/line_sweep.py --examples PATH/TO/tilelang/examples \\
        [--json verification/line_sweep/line-sweep.json] [--only NAME]
    python verification/line_sweep/line_sweep.py \\
        --sources verification/hazard_sweep/hazard-sweep-sources.json \\
        --root tile-ai/tilelang=PATH --root tile-ai/TileOPs=PATH ... \\
        [--json verification/line_sweep/line-sweep-wide.json]

``line-sweep-sources.json`` beside this script adds kernels of TileLang's examples the
hazard sweep does not list (chunked linear attention, ...), in the same format. Their
modules import reference libraries (``fla``, ``einops``) for the code that checks their
results on a GPU; ``--stub NAME`` gives each such import an empty stand-in, since only the
kernel is lowered.
"""

from __future__ import annotations

import argparse
import importlib.abc
import importlib.machinery
import json
import re
import subprocess
import sys
import time
import types
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path[:0] = [str(ROOT), str(HERE.parent / "hazard_sweep")]

import hazard_sweep  # noqa: E402  (the kernels and how each is loaded)


class _Stub(types.ModuleType):
    """An empty stand-in for a module a kernel imports only for its reference code."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return lambda *args, **kwargs: None


class _Stubs(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def __init__(self, names: list[str]) -> None:
        self.names = set(names)

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname.split(".")[0] in self.names:
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec: Any) -> types.ModuleType:
        module = _Stub(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        return None


def _source(entry: dict[str, Any], root: Path) -> tuple[str, str]:
    """The text the factory is defined in, and the factory's name in it."""
    path = root / entry["path"]
    name = re.match(r"\s*([A-Za-z_]\w*)", entry["factory"])
    return path.read_text(encoding="utf-8"), name.group(1) if name else entry["factory"]


def _unlined(result: dict[str, Any]) -> list[str]:
    """The statements of the result's pipelined loops on no kernel line, as the page
    says them."""
    found = [f"{s['text']}: {s.get('why', '')}" for loop in result.get("pipeline", [])
             for s in loop["statements"] if s.get("line") is None]
    warp = result.get("warp_specialized") or {}
    found += [f"{r['text']}: {r.get('why', 'no kernel line')}" for r in warp.get("roles", [])
              if r.get("line") is None and not r.get("inserted")]
    return found


def one(roots: dict[str, Path], entry: dict[str, Any]) -> list[dict[str, Any]]:
    """Lower one kernel for every target and num_stages; its rows."""
    from sphinx_tlstages.core.results import cuda as cuda_text
    from sphinx_tlstages.core.results import facts
    from sphinx_tlstages.core.results.passes import PassLog
    from sphinx_tlstages.core.results.unread import unread
    from sphinx_tlstages.worker import lowering
    from sphinx_tlstages.worker.ir import facts as ir_facts
    from sphinx_tlstages.worker.kernel_module import prim_func

    root = roots[entry["repo"]]
    source, factory_name = _source(entry, root)
    name, stages_key = entry["name"], entry.get("stages_key")
    rows: list[dict[str, Any]] = []
    with hazard_sweep._namespace(entry, root) as namespace:
        arguments = eval(entry["kwargs"], namespace)
        factory = eval(entry["factory"], namespace)
        for arch in entry.get("targets", hazard_sweep.TARGETS):
            for ns in entry["stages"]:
                row: dict[str, Any] = {"kernel": name, "repo": entry["repo"],
                                       "file": entry["path"], "target": arch, "ns": ns}
                try:
                    given = {**arguments, **({stages_key: ns} if stages_key else {})}
                    func, configs = prim_func(factory, given)
                    after: dict[str, Any] = {}
                    built: list[Any] = []
                    recorder = lowering._recorder(after, built, PassLog((), changes=False), [])
                    cuda = lowering._lower(func, configs, {"kind": "cuda", "arch": arch},
                                           recorder)
                except Exception as exc:  # an example that does not lower here
                    row.update(outcome="does not lower",
                               text=f"{type(exc).__name__}: {exc}".splitlines()[0][:200])
                    rows.append(row)
                    continue
                ir = {**ir_facts.read(after, built[0] if built else None),
                      "schedule": lowering._schedule(after)}
                file_name = Path(entry["path"]).name
                result = facts.success(ir, cuda_text.normalise(cuda, file_name), source,
                                       factory_name, ns, 0.0, source_name=file_name)
                unlined = _unlined(dict(result))
                # As the build says it: the figure not drawn, and why.
                figure = [why for why in unread(dict(result)) if why.startswith("the schedule")]
                statements = sum(len(loop["statements"]) for loop in result["pipeline"]) \
                    + len([r for r in (result.get("warp_specialized") or {}).get("roles", [])
                           if not r.get("inserted")])
                row.update(statements=statements, unlined=unlined,
                           schedule_error=figure[0] if figure else None,
                           outcome="ok" if not unlined and not figure else "missing")
                rows.append(row)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--examples", type=Path, default=None)
    parser.add_argument("--sources", type=Path, default=None)
    parser.add_argument("--root", action="append", default=[])
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--only", action="append", default=None)
    parser.add_argument("--stub", action="append", default=[],
                        help="a module the kernels import for reference code only")
    parser.add_argument("--one", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.stub:
        sys.meta_path.insert(0, _Stubs(args.stub))
    entries = hazard_sweep._entries(args.sources)
    roots = {key: Path(value).resolve() for key, value in
             (given.split("=", 1) for given in args.root)}
    if args.examples:
        roots["tile-ai/tilelang"] = args.examples.resolve().parent
    passed = [arg for given in args.root for arg in ("--root", given)]
    passed += ["--sources", str(args.sources)] if args.sources else []
    passed += ["--examples", str(args.examples)] if args.examples else []
    passed += [arg for name in args.stub for arg in ("--stub", name)]
    if args.one:
        print(json.dumps(one(roots, entries[args.one])))
        return
    import importlib.metadata

    rows: list[dict[str, Any]] = []
    for name in args.only or list(entries):
        started = time.monotonic()
        done = subprocess.run([sys.executable, __file__, *passed, "--one", name],
                              capture_output=True, text=True, timeout=1800)
        found = json.loads(done.stdout.splitlines()[-1]) if done.returncode == 0 else [
            {"kernel": name, "repo": entries[name]["repo"], "file": entries[name]["path"],
             "target": "-", "ns": None, "outcome": "does not lower",
             "text": f"the process exited {done.returncode}: "
                     f"{(done.stderr.strip().splitlines() or [''])[-1][:200]}"}]
        for row in found:
            said = row.get("text") or row.get("schedule_error") or \
                f"{len(row['unlined'])} of {row['statements']} on no line"
            print(f"{row['kernel']:28} {row['target']:8} ns{row['ns']}  {row['outcome']}: "
                  f"{said}")
            for text in row.get("unlined", []):
                print(f"      {text}")
        print(f"  ({time.monotonic() - started:.0f} s)", flush=True)
        rows += found
    lowered = [r for r in rows if r["outcome"] != "does not lower"]
    summary = {"tilelang": importlib.metadata.version("tilelang"),
               "rows": rows, "counts": {
                   "variants": len(rows), "lowered": len(lowered),
                   "with_statements_on_no_line": sum(bool(r["unlined"]) for r in lowered),
                   "statements": sum(r["statements"] for r in lowered),
                   "statements_on_no_line": sum(len(r["unlined"]) for r in lowered),
                   "schedule_not_read": sum(bool(r["schedule_error"]) for r in lowered)}}
    print(json.dumps(summary["counts"]))
    if args.json:
        args.json.write_text(json.dumps(summary, indent=1, sort_keys=True) + "\n",
                             encoding="utf-8")
    if any(r["outcome"] == "missing" for r in rows):
        sys.exit(1)


if __name__ == "__main__":
    main()
