"""The races the hazard check found in others' kernels, run on a GPU under
compute-sanitizer as ``tlstages hardware`` runs the book's.

    python verification/hazards_on_gpu/others.py OUT --root tile-ai/tilelang=PATH ...

Reads the findings marked ``real`` in ``verification/hazard_sweep/hazard-sweep-sources.json``
(the kernels at the commits recorded there, found under each ``--root``; kernels of a
repository without a root are left out, and said so), adds the tests' ``gathered_gemm``
(the missing proxy fence), writes a book of one directive each under OUT (nothing of it is
kept in this repository: the kernels are other projects' code), runs ``tlstages
hardware`` on it, and writes OUT/summary.json: per kernel, variant and target, the static
verdict and what the tools observed.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
SOURCES = ROOT / "verification" / "hazard_sweep" / "hazard-sweep-sources.json"
OURS = [{"name": "gathered_gemm", "file": str(ROOT / "tests" / "kernels" / "hazards"
                                            / "gathered_gemm.py"),
         "factory": "gathered_gemm", "params": "M=256 N=256 K=512 rows=1024",
         "stages": [2, 3], "targets": ["sm_90a"]}]


def _params(kwargs: str) -> str:
    """``dict(a=1, dtype=T.bfloat16)`` -> ``a=1 dtype=T.bfloat16``, as :params: takes it."""
    call = ast.parse(kwargs, mode="eval").body
    assert isinstance(call, ast.Call)
    return " ".join(f"{k.arg}={ast.get_source_segment(kwargs, k.value)}" for k in call.keywords)


def kernels(roots: dict[str, Path]) -> tuple[list[dict[str, Any]], list[str]]:
    """The runnable kernels, and the names left out (with why)."""
    found, left = [], []
    for entry in json.loads(SOURCES.read_text(encoding="utf-8")):
        if not entry.get("real"):
            continue
        if "module" in entry or entry["repo"] not in roots:
            left.append(f"{entry['name']}: " + ("a module of a package, not a file" if
                                                "module" in entry else
                                                f"no --root for {entry['repo']}"))
            continue
        found.append({"name": entry["name"].replace("_", "-"),
                      "file": str(roots[entry["repo"]] / entry["path"]),
                      "factory": entry["factory"], "params": _params(entry["kwargs"]),
                      "stages": entry["stages"] if entry["stages_key"] else None,
                      "targets": entry["targets"], "real": entry["real"]})
    return found + [{**k, "name": k["name"].replace("_", "-")} for k in OURS], left


def write_book(folder: Path, found: list[dict[str, Any]]) -> None:
    folder = folder.resolve()
    folder.mkdir(parents=True, exist_ok=True)
    files = sorted({str(Path(k["file"]).parent) for k in found})
    (folder / "conf.py").write_text(
        f'project = "others"\nextensions = ["sphinx_tlstages"]\n'
        f'tlstages_snapshots = "off"\ntlstages_file_roots = {files!r}\n', encoding="utf-8")
    text = ["Others' kernels", "===============", ""]
    for kernel in found:
        text += [f".. tl-pipeline:: {kernel['name']}", f"   :name: {kernel['name']}",
                 # Relative to the book: a leading / would mean its source folder.
                 f"   :file: {os.path.relpath(kernel['file'], folder)}",
                 f"   :factory: {kernel['factory']}",
                 f"   :target: {' '.join(kernel['targets'])}",
                 f"   :params: {kernel['params']}", "   :hardware:"]
        if kernel["stages"]:
            text.append(f"   :num-stages: {' '.join(map(str, kernel['stages']))}")
        text.append("")
    (folder / "index.rst").write_text("\n".join(text) + "\n", encoding="utf-8")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--root", action="append", default=[], metavar="OWNER/NAME=PATH")
    parser.add_argument("--parallel", type=int, default=8)
    parser.add_argument("--timeout", type=float, default=120)
    args = parser.parse_args(argv)
    roots = {name: Path(path).resolve()
             for name, _, path in (r.partition("=") for r in args.root)}
    found, left = kernels(roots)
    book = args.out / "book"
    write_book(book, found)
    subprocess.run([sys.executable, "-m", "sphinx_tlstages", "hardware", str(book),
                    "--out", str(args.out / "records"), "--keep", str(args.out / "runs"),
                    "--parallel", str(args.parallel), "--timeout", str(args.timeout)],
                   check=True)
    (record,) = (args.out / "records").glob("*.json")
    data = json.loads(record.read_text(encoding="utf-8"))
    summary = {"left_out": left, "gpu": data["gpu"], "date": data["date"], "kernels": {}}
    for kernel in found:
        entry = data["directives"][kernel["name"]]["variants"]
        summary["kernels"][kernel["name"]] = {
            "sweep_says": kernel.get("real"), "params": kernel["params"],
            "variants": {vid: {key: record.get(key) for key in
                               ("target", "static", "not_run", "racecheck", "synccheck",
                                "inputs", "built", "same_code")}
                         for vid, record in entry.items()}}
    (args.out / "summary.json").write_text(json.dumps(summary, indent=1, sort_keys=True)
                                           + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
