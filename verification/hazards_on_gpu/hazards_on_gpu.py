"""``tlstages hardware`` checked on a GPU against races made on purpose.

    python verification/hazards_on_gpu/hazards_on_gpu.py run OUT [--json FILE]

On a machine with an NVIDIA GPU, TileLang, nvcc and compute-sanitizer: the seed GEMM of
``book/`` (two stages, ``sm_80`` and ``sm_90a``) checked as it is, then its ``sm_80`` code
with one ``cp_async_wait`` deleted (the main loop's, then the epilogue's) by ``--edit
delete-wait:N``. The unedited GEMM must be clean under both tools and each edited one must
be flagged by racecheck; exit 1 otherwise. It also asks whether TileLang's own ``sm_80``
build (a cubin) loads on this GPU, which is why ``tlstages hardware`` builds older
architectures' code as PTX. Writes the records under OUT and a summary as JSON.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
BOOK = HERE / "book"
RUNS = {  # name -> (tlstages hardware arguments, racecheck must report hazards)
    "as-lowered": ([], False),
    "main-loop-wait-deleted": (["--name", "gemm-sm80", "--edit", "delete-wait:1"], True),
    "epilogue-wait-deleted": (["--name", "gemm-sm80", "--edit", "delete-wait:2"], True),
}

PROBE = """
import json, tilelang, torch
from sphinx_tlstages.core.protocol.messages import Task
from sphinx_tlstages.worker import gpu
source = open(%r).read()
task = Task(source, "gemm.py", "matmul", (("M", "256"), ("N", "256"), ("K", "256"),
            ("block_M", "128"), ("block_N", "128"), ("block_K", "64"), ("threads", "128")), 2,
            {"kind": "cuda", "arch": "sm_80"})
try:
    kernel, tensors = gpu.compile_variant(task, {"kind": "cuda", "arch": "sm_80"})
    args = [torch.randn(t["shape"]).half().cuda() for t in tensors]
    kernel(*args)
    torch.cuda.synchronize()
    print(json.dumps({"loads": True}))
except Exception as exc:
    print(json.dumps({"loads": False, "error": f"{type(exc).__name__}: {str(exc)[:300]}"}))
"""


def probe_sm80_cubin() -> dict[str, Any]:
    """Whether TileLang's own sm_80 build runs on this GPU."""
    code = PROBE % str(HERE.parent.parent / "book" / "kernels" / "gemm.py")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    return json.loads(lines[-1]) if lines else {"loads": None, "error": done.stderr[-500:]}


def judge(records: dict[str, Any], flagged: bool) -> list[str]:
    """What disagrees with the expectation, in words (nothing: all agree)."""
    wrong = []
    for name, entry in records["directives"].items():
        for variant, record in entry["variants"].items():
            race, sync = record.get("racecheck", {}), record.get("synccheck", {})
            where = f"{name} {variant}"
            if "not_run" in record or not race.get("ran") or not sync.get("ran"):
                why = record.get("not_run") or race.get("why") or sync.get("why")
                wrong.append(f"{where}: not checked ({why})")
            elif flagged and race["hazards"] == 0:
                wrong.append(f"{where}: the deleted wait was not observed")
            elif not flagged and (race["hazards"] or sync["errors"]):
                wrong.append(f"{where}: the unedited kernel was flagged "
                             f"({race['hazards']} hazards, {sync['errors']} sync errors)")
    return wrong


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=("run",))
    parser.add_argument("out", type=Path)
    parser.add_argument("--json", type=Path, help="the summary (default OUT/summary.json)")
    args = parser.parse_args(argv)
    summary: dict[str, Any] = {"sm80_cubin": probe_sm80_cubin(), "runs": {}}
    print(f"TileLang's sm_80 cubin on this GPU: {summary['sm80_cubin']}", flush=True)
    failed = False
    for name, (extra, flagged) in RUNS.items():
        out = args.out / name
        command = [sys.executable, "-m", "sphinx_tlstages", "hardware", str(BOOK),
                   "--out", str(out), "--keep", str(args.out / f"{name}-runs"), *extra]
        subprocess.run(command, check=True)
        (record,) = out.glob("*.json")
        records = json.loads(record.read_text(encoding="utf-8"))
        wrong = judge(records, flagged)
        failed |= bool(wrong)
        summary["runs"][name] = {"command": " ".join(command[1:]), "expected_flagged": flagged,
                                 "disagreements": wrong, "record": records}
        print(f"{name}: {'; '.join(wrong) or 'as expected'}", flush=True)
    path = args.json or args.out / "summary.json"
    path.write_text(json.dumps(summary, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
