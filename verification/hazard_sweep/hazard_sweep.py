#!/usr/bin/env python3
"""The hazard check over real TileLang kernels: never a false "hazard".

Each example below is lowered as a worker lowers it, for each target and each
``num_stages`` it is swept over (its own where the example fixes it), and the check's
verdict recorded. The examples are TileLang's (its repository's ``examples/`` folder,
which this script does not ship): every verdict must be "none" or "not checked"; a
"hazard" is a false alarm to fix (or a real bug of TileLang's, to report). An example
that does not lower here is listed with its error and is no verdict. Some examples import
``einops`` for their reference code: install it beside TileLang to sweep them. Each example runs
in a process of its own, so that one that crashes its process costs only its rows.

    python verification/hazard_sweep/hazard_sweep.py --examples PATH/TO/tilelang/examples \\
        [--json verification/hazard_sweep/hazard-sweep.json] [--only NAME]

The wider sweep reads its kernels from a JSON list (``hazard-sweep-sources.json`` beside it:
each entry's ``name``, ``repo`` (``owner/name``), ``commit``, ``path`` in that repository,
``factory`` (an expression in the file's namespace, or in the module ``module`` names),
``kwargs``, ``stages_key``, ``stages`` and optionally ``targets``, ``paths`` (folders of
the repository put first on the import path) and ``real`` (per target, the text of a
finding read and confirmed as a race of the lowered code: it does not fail the sweep)) and
a local checkout of each repository::

    python verification/hazard_sweep/hazard_sweep.py \\
        --sources verification/hazard_sweep/hazard-sweep-sources.json \\
        --root tile-ai/tilelang=PATH --root tile-ai/TileOPs=PATH \\
        [--json verification/hazard_sweep/hazard-sweep-wide.json] [--only NAME]
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import importlib
import json
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
TARGETS = ("sm_80", "sm_90a", "sm_100a")
GEMM = "M=1024, N=1024, K=1024"
# name: (file under examples/, factory, keyword arguments (evaluated in the example's
# namespace), its num_stages argument or None, the num_stages values swept).
EXAMPLES: dict[str, tuple[str, str, str, str | None, tuple[int, ...]]] = {
    "gemm": ("gemm/example_gemm.py", "matmul",
             f"dict({GEMM}, block_M=128, block_N=128, block_K=32)", None, (3,)),
    "gemm_fp8": ("gemm_fp8/example_tilelang_gemm_fp8.py", "matmul",
                 f"dict({GEMM}, block_M=128, block_N=128, block_K=64, "
                 "dtype=T.float8_e4m3fn)", None, (3,)),
    "gemm_fp8_2xacc": ("gemm_fp8/example_tilelang_gemm_fp8_2xAcc.py", "matmul",
                       f"dict({GEMM}, block_M=128, block_N=128, block_K=64, "
                       "dtype=T.float8_e4m3fn)", None, (3,)),
    "gemm_splitk": ("gemm_splitk/example_tilelang_gemm_splitk.py", "matmul",
                    f"dict({GEMM}, block_M=128, block_N=128, block_K=32, split_k=4)",
                    None, (0,)),
    "deepgemm_fp8": ("deepseek_deepgemm/example_deepgemm_fp8_2xAcc.py", "tl_gemm",
                     f"dict({GEMM}, block_N=128, in_dtype=T.float8_e4m3fn, "
                     "out_dtype=T.bfloat16, accum_dtype=T.float32)", None, (4,)),
    "ws_gemm_copy_1_gemm_0": ("warp_specialize/example_warp_specialize_gemm_copy_1_gemm_0.py",
                             "matmul_warp_specialize_copy_1_gemm_0",
                             f"dict({GEMM}, block_M=128, block_N=128, block_K=64)", None, (2,)),
    "ws_gemm_copy_0_gemm_1": ("warp_specialize/example_warp_specialize_gemm_copy_0_gemm_1.py",
                             "matmul_warp_specialize_copy_0_gemm_1",
                             f"dict({GEMM}, block_M=128, block_N=128, block_K=64)", None, (2,)),
    "ws_gemm_copy_gemm_0_1": ("warp_specialize/example_warp_specialize_gemm_copy_gemm_0_1.py",
                             "matmul_warp_specialize_copy_gemm_0_1",
                             f"dict({GEMM}, block_M=128, block_N=128, block_K=64)", None, (2,)),
    "ws_gemm_barrierpipe": ("warp_specialize/example_warp_specialize_gemm_barrierpipe_stage2.py",
                           "matmul",
                           f"dict({GEMM}, block_M=128, block_N=128, block_K=64)", None, (2,)),
    "ws_gemm_softpipe": ("warp_specialize/example_warp_specialize_gemm_softpipe_stage2.py",
                        "matmul",
                        f"dict({GEMM}, block_M=128, block_N=128, block_K=64)", None, (2,)),
    "mha_fwd": ("flash_attention/example_mha_fwd_bshd.py", "flashattn",
                "dict(batch=1, heads=8, seq_len=1024, dim=64, is_causal=False, block_M=64, "
                "block_N=64, threads=128)", "num_stages", (1, 2, 3)),
    "mha_fwd_causal": ("flash_attention/example_mha_fwd_bshd.py", "flashattn",
                       "dict(batch=1, heads=8, seq_len=1024, dim=128, is_causal=True, "
                       "block_M=128, block_N=128, threads=128)", "num_stages", (1, 2)),
    "gqa_fwd": ("flash_attention/example_gqa_fwd_bshd.py", "flashattn",
                "dict(batch=1, heads=16, seq_len=1024, dim=128, is_causal=False, groups=4, "
                "block_M=64, block_N=64, threads=128)", "num_stages", (0, 2, 3)),
    "mha_bwd": ("flash_attention/example_mha_bwd_bshd.py", "flashattn_bwd",
                "dict(batch=1, heads=8, seq_len=1024, dim=64, is_causal=False, block_M=64, "
                "block_N=64)", None, (2,)),
    "mla_decode": ("deepseek_mla/example_mla_decode.py", "flashattn",
                   "dict(batch=1, heads=128, kv_head_num=1, seqlen_kv=1024, dim=512, "
                   "pe_dim=64, block_N=64, block_H=64, num_split=1, softmax_scale=0.04)",
                   None, (2,)),
    "mamba_chunk_scan": ("linear_attention/example_mamba_chunk_scan.py", "chunk_scan_fwd",
                         "dict(batch=1, seqlen=1024, chunk_size=256, ngroups=1, nheads=8, "
                         "headdim=64, dstate=128, block_M=64, block_N=64, block_K=64, "
                         "block_Dstate=128, threads=128)", "num_stages", (2, 3)),
    "retention_fwd": ("linear_attention/example_retention_fwd.py",
                      "chunk_retention_fwd_kernel", "dict(B=1, S=512, H=4, DK=128, DV=128)",
                      None, (0,)),
    "convolution": ("convolution/example_convolution.py", "convolution",
                    "dict(N=16, C=64, H=32, W=32, F=64, K=3, S=1, D=1, P=1, block_M=64, "
                    "block_N=128, block_K=32, threads=256)", "num_stages", (2, 3)),
    "dequant_gemm": ("dequantize_gemm/example_dequant_gemm_fine_grained.py", "matmul",
                     f"dict({GEMM}, block_M=128, block_N=128, block_K=32, "
                     "in_dtype=T.float16, out_dtype=T.float16, accum_dtype=T.float32, "
                     "threads=128)", "num_stages", (2, 3)),
    "elementwise_add": ("elementwise/example_elementwise_add.py", "elementwise_add",
                        "dict(M=1024, N=1024, block_M=32, block_N=32, threads=128, "
                        "in_dtype=T.float32, out_dtype=T.float32)", None, (0,)),
}


def _entries(sources: Path | None) -> dict[str, dict[str, Any]]:
    """The kernels to sweep, by name: TileLang's examples above, or the JSON list."""
    if sources is None:
        return {name: {"name": name, "repo": "tile-ai/tilelang", "path": f"examples/{path}",
                       "factory": factory, "kwargs": kwargs, "stages_key": key,
                       "stages": list(stages)}
                for name, (path, factory, kwargs, key, stages) in EXAMPLES.items()}
    listed = json.loads(sources.read_text(encoding="utf-8"))
    return {entry["name"]: entry for entry in listed}


@contextlib.contextmanager
def _namespace(entry: dict[str, Any], root: Path) -> Iterator[dict[str, Any]]:
    """The namespace the entry's factory is read in: its file run as a kernel module, or
    (``module``) a module of a package imported with the entry's ``paths`` first."""
    from sphinx_tlstages.worker.kernel_module import kernel_module

    folders = [str(root / folder) for folder in entry.get("paths", [])]
    if entry.get("module"):
        sys.path[:0] = folders
        yield dict(vars(importlib.import_module(entry["module"])))
        return
    file = root / entry["path"]
    source = file.read_text(encoding="utf-8")
    with kernel_module(source, file.name, str(file), [str(file.parent), *folders]) as module:
        yield dict(module.namespace)


def _ir_file(folder: Path, row: dict[str, Any]) -> Path:
    return folder / f"{row['kernel']}-{row['target']}-ns{row['ns']}.json.gz"


def save_ir(folder: Path, row: dict[str, Any], after: dict[str, Any]) -> None:
    """The modules a lowering kept, for :func:`replay` (TVM's own JSON, compressed)."""
    from tilelang import tvm

    folder.mkdir(parents=True, exist_ok=True)
    with gzip.open(_ir_file(folder, row), "wt", encoding="utf-8") as out:
        json.dump({**row, "ir": tvm.ir.save_json(tvm.runtime.convert(dict(after)))}, out)


def checked_row(row: dict[str, Any], after: dict[str, Any], real: str | None) -> None:
    """The check as the worker runs it (the verdict and, where clean, the search for
    synchronisation no dependence needs), its CPU time, into ``row``."""
    from sphinx_tlstages.worker.hazards import verdict as hazard_check
    from sphinx_tlstages.worker.ir import facts as ir_facts

    began = time.process_time()
    checked = hazard_check.check(after, {"kind": "cuda", "arch": row["target"]},
                                 ir_facts.main_function, ir_facts.device_function)
    row.setdefault("cpu_ms", {})["check"] = round((time.process_time() - began) * 1000)
    found = checked["hazards"]
    row.update(verdict=found["verdict"], text=found["text"],
               unneeded_sync=len(checked["unneeded_sync"]))
    if found["verdict"] == "hazard" and real == found["text"]:
        row["real"] = True  # a race TileLang's code has, recorded as such


def replay(folder: Path, entries: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """The check run again on the modules :func:`save_ir` kept, without lowering: what a
    change to the check does to each variant, in seconds."""
    from tilelang import tvm

    rows: list[dict[str, Any]] = []
    for path in sorted(folder.glob("*.json.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as saved:
            row = json.load(saved)
        after = {str(key): value for key, value in tvm.ir.load_json(row.pop("ir")).items()}
        real = entries.get(row["kernel"], {}).get("real", {}).get(row["target"])
        row.pop("real", None)
        checked_row(row, after, real)
        rows.append(row)
    return rows


def changes(before: list[dict[str, Any]], after: list[dict[str, Any]]) -> list[str]:
    """Each variant whose verdict (or its words) differs between two sweeps, by kernel."""
    def key(row: dict[str, Any]) -> tuple[str, str, str]:
        return row["kernel"], row["target"], str(row["ns"])

    was = {key(row): row for row in before}
    said = []
    for row in after:
        old = was.get(key(row))
        if old is not None and (old["verdict"], old.get("text")) != (row["verdict"],
                                                                     row.get("text")):
            said.append(f"{row['kernel']} {row['target']} ns{row['ns']}: {old['verdict']} "
                        f"-> {row['verdict']}\n    was: {old.get('text')}\n    now: "
                        f"{row.get('text')}")
    return said


def one(roots: dict[str, Path], entry: dict[str, Any],
        keep: Path | None = None) -> list[dict[str, Any]]:
    """Lower one kernel for every target and num_stages; its rows (``keep``: where to save
    what each lowering kept, for :func:`replay`)."""
    from sphinx_tlstages.worker.kernel_module import prim_func
    from sphinx_tlstages.worker.lowering import lower_kept

    name, stages_key = entry["name"], entry.get("stages_key")
    rows: list[dict[str, Any]] = []
    with _namespace(entry, roots[entry["repo"]]) as namespace:
        arguments = eval(entry["kwargs"], namespace)
        factory = eval(entry["factory"], namespace)
        for arch in entry.get("targets", TARGETS):
            for ns in entry["stages"]:
                row: dict[str, Any] = {"kernel": name, "repo": entry["repo"],
                                       "file": entry["path"], "target": arch, "ns": ns}
                if entry.get("commit"):
                    row["commit"] = entry["commit"]
                try:
                    given = {**arguments, **({stages_key: ns} if stages_key else {})}
                    began = time.process_time()  # the factory's call is TileLang's parse
                    func, configs = prim_func(factory, given)
                    after, _ = lower_kept(func, configs, {"kind": "cuda", "arch": arch})
                    lowered = time.process_time() - began
                except Exception as exc:  # an example that does not lower here
                    row.update(verdict="does not lower",
                               text=f"{type(exc).__name__}: {exc}".splitlines()[0][:200])
                    rows.append(row)
                    continue
                if keep is not None:
                    save_ir(keep, row, after)
                row["cpu_ms"] = {"lowering": round(lowered * 1000)}
                checked_row(row, after, entry.get("real", {}).get(arch))
                rows.append(row)
    return rows


NO_COPY = "no asynchronous copy into shared memory"


def reason(text: str) -> str:
    """A "not checked" row's reason without what names its kernel: the condition's or
    the size's expression, the values walked."""
    said = re.sub(r" \(with [^)]*\)$", "", text.removeprefix("not checked: "))
    said = re.sub(r"(under the condition) .*", r"\1 ...", said)
    return re.sub(r"^\S+ cannot be bounded", "a value cannot be bounded", said)


def not_checked(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The goal's figure: of the rows that lowered and copy into shared memory
    asynchronously, how many are "not checked", and the count per reason."""
    copying = [row for row in rows if row["verdict"] != "does not lower"
               and NO_COPY not in row.get("text", "")]
    unchecked = [row for row in copying if row["verdict"] == "not checked"]
    reasons: dict[str, int] = {}
    for row in unchecked:
        reasons[reason(row["text"])] = reasons.get(reason(row["text"]), 0) + 1
    return {"with_async_copy": len(copying), "not_checked": len(unchecked),
            "percent": round(100 * len(unchecked) / len(copying), 1) if copying else 0.0,
            "reasons": dict(sorted(reasons.items()))}


def check_cost(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The check's CPU time as a share of the lowering's, over the rows that lowered: the
    median and largest per variant, and the whole sweep's (percent)."""
    timed = [row["cpu_ms"] for row in rows if row.get("cpu_ms", {}).get("lowering")]
    if not timed:
        return {}
    shares = sorted(100 * t["check"] / t["lowering"] for t in timed)
    return {"variants": len(timed), "median_percent": round(statistics.median(shares), 1),
            "max_percent": round(shares[-1], 1),
            "total_percent": round(100 * sum(t["check"] for t in timed)
                                   / sum(t["lowering"] for t in timed), 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--examples", type=Path, default=None,
                        help="TileLang's examples/ folder")
    parser.add_argument("--sources", type=Path, default=None,
                        help="a JSON list of kernels to sweep instead of the examples")
    parser.add_argument("--root", action="append", default=[],
                        help="OWNER/NAME=PATH: a local checkout of a repository the list names")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--only", action="append", default=None, help="one example's name")
    parser.add_argument("--save-ir", type=Path, default=None,
                        help="a folder to keep each lowering's modules in, for --replay")
    parser.add_argument("--replay", type=Path, default=None,
                        help="check again the modules --save-ir kept, without lowering")
    parser.add_argument("--before", type=Path, default=None,
                        help="a sweep's JSON: print each variant whose verdict changed")
    parser.add_argument("--one", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    entries = _entries(args.sources)
    roots = {key: Path(value).resolve() for key, value in
             (given.split("=", 1) for given in args.root)}
    if args.examples:
        roots["tile-ai/tilelang"] = args.examples.resolve().parent
    passed = [arg for given in args.root for arg in ("--root", given)]
    passed += ["--sources", str(args.sources)] if args.sources else []
    passed += ["--examples", str(args.examples)] if args.examples else []
    passed += ["--save-ir", str(args.save_ir)] if args.save_ir else []
    if args.one:
        print(json.dumps(one(roots, entries[args.one], args.save_ir)))
        return
    import importlib.metadata

    rows: list[dict[str, Any]] = replay(args.replay, entries) if args.replay else []
    for name in [] if args.replay else args.only or list(entries):
        started = time.monotonic()
        done = subprocess.run([sys.executable, __file__, *passed, "--one", name],
                              capture_output=True, text=True, timeout=1800)
        found = json.loads(done.stdout.splitlines()[-1]) if done.returncode == 0 else [
            {"kernel": name, "repo": entries[name]["repo"], "file": entries[name]["path"],
             "target": "-", "ns": None,
             "verdict": "does not lower",
             "text": f"the process exited {done.returncode}: "
                     f"{(done.stderr.strip().splitlines() or [''])[-1][:200]}"}]
        for row in found:
            print(f"{row['kernel']:22} {row['target']:8} ns{row['ns']}  {row['text']}")
        print(f"  ({time.monotonic() - started:.0f} s)", flush=True)
        rows += found
    verdicts = sorted({r["verdict"] for r in rows})
    summary = {"tilelang": importlib.metadata.version("tilelang"), "targets": list(TARGETS),
               "examples": {name: entries[name]["path"] for name in args.only or entries},
               "counts": {v: sum(1 for r in rows if r["verdict"] == v) for v in verdicts},
               "rows": rows}
    summary["check_cost"] = check_cost(rows)
    summary["not_checked"] = not_checked(rows)
    print(json.dumps(summary["counts"]), json.dumps(summary["not_checked"]),
          json.dumps(summary["check_cost"]))
    if args.before:
        before = json.loads(args.before.read_text(encoding="utf-8"))["rows"]
        changed = changes(before, rows)
        print(f"{len(changed)} of {len(rows)} variants changed verdict or words since "
              f"{args.before}" + (":" if changed else ""))
        print("\n".join(changed))
    if args.json:
        args.json.write_text(json.dumps(summary, indent=1, sort_keys=True) + "\n",
                             encoding="utf-8")
    if any(r["verdict"] == "hazard" and not r.get("real") for r in rows):
        sys.exit(1)


if __name__ == "__main__":
    main()
