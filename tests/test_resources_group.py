"""The resources part compiled a group at a time: one nvcc for the variants that share
their flags and includes, each kernel renamed in the shared file. Every figure of the
part, and the SASS listing a page shows, must be those of a compile of the variant alone
with TileLang's flags; a variant that breaks the shared compile must not cost the others
their part.

The same holds for the SASS by kernel line: each variant's lines are numbered in the
shared file as in its own CUDA.

The variants are lowered for real, in a process of their own (this one does not import
TileLang), and compiled both ways with the real nvcc."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

from sphinx_tlstages.core.hardware.sass_lines import class_counts, summed
from sphinx_tlstages.core.plan.toolkit import find

from .kernels import GEMM, GEMM_PARAMS

TOOLKIT = find("auto")
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "nvcc"
needs_toolkit = pytest.mark.skipif(TOOLKIT is None, reason="no NVIDIA compiler installed "
                                   "(pip install sphinx-tlstages[resources])")

# Lower each variant, compile it alone (compile_variant, TileLang's flags), then compile
# them all with compile_group; print both, per variant.
_BOTH_WAYS = """
import json, sys
from sphinx_tlstages.core.plan import options
from sphinx_tlstages.core.plan.targets import parse_target
from sphinx_tlstages.core.hardware.sass_lines import class_counts, summed
from sphinx_tlstages.core.plan.toolkit import find
from sphinx_tlstages.core.plan.variants import matrix, with_toolkit
from sphinx_tlstages.worker import resources
from sphinx_tlstages.worker.lowering import lower_variant
from sphinx_tlstages.worker.tasks import import_tilelang

import_tilelang()
source, cases = sys.argv[1], json.loads(sys.argv[2])
toolkit = find("auto")
alone, requests = [], []
for arch, params, depth in cases:
    (variant,) = with_toolkit(matrix(source, "gemm.py", "matmul", options.parse_params(params),
                                     {}, (depth,), (parse_target(arch),)), toolkit)
    lowered = lower_variant(variant.task(), compile_now=False)
    request = resources.Request.decode(lowered["resources_request"])
    requests.append(request)
    alone.append(resources.compile_variant(
        request.cuda, arch, {}, dict(request.toolkit), request.threads,
        request.dynamic_shared, request.tensor_memory, kernel=request.kernel))
print(json.dumps({"alone": alone, "grouped": resources.compile_group(requests)}))
"""

SPILLING = GEMM_PARAMS.replace("block_M=128", "block_M=256").replace("block_K=64", "block_K=32")
# Two groups: Ampere (two depths and a tile that spills) and Hopper (two depths).
CASES = [("sm_80", GEMM_PARAMS, 1), ("sm_80", GEMM_PARAMS, 3), ("sm_80", SPILLING, 2),
         ("sm_90a", GEMM_PARAMS, 2), ("sm_90a", GEMM_PARAMS, 4)]


@needs_toolkit
def test_a_group_compile_gives_every_variant_the_figures_of_its_own_compile() -> None:
    done = subprocess.run([sys.executable, "-c", _BOTH_WAYS, GEMM, json.dumps(CASES)],
                          capture_output=True, text=True, check=True)
    found = json.loads(done.stdout)
    for case, alone, grouped in zip(CASES, found["alone"], found["grouped"], strict=True):
        assert "resources" in alone and "sass_lines" in alone, (case, alone)
        # registers, spills, stack, shared memory, barriers, occupancy, SASS family
        # counts, setmaxnreg budgets: every figure, the listing a page shows, and the
        # SASS by kernel line (read off the renamed kernel's section of the shared
        # cubin, its lines numbered as the variant's own CUDA).
        assert grouped == alone, case
        # Per class, the lines and the unattributed add up to the kernel's listing.
        assert summed(grouped["sass_lines"]) == class_counts(grouped["sass"]), case
    spilled = found["grouped"][2]["resources"]
    assert spilled["spill_stores"] > 0 and spilled["stack"] > 0
    assert [f["resources"]["sass"]["HMMA"] for f in found["grouped"][:2]] == [256, 384]
    # The T.gemm line (20 in tests/kernels' GEMM) holds the MMA of both depths.
    assert [f["sass_lines"]["lines"]["20"]["mma"] for f in found["grouped"][:2]] == [256, 384]
    assert "Function : kernel_kernel" in found["grouped"][3]["sass"]


_BROKEN = """
import json, sys
from sphinx_tlstages.worker import resources
good = resources.Request.decode(json.loads(sys.argv[1]))
wrong = good.cuda.replace("__syncthreads();", "__syncthreads(); no_such_call();", 1)
broken = resources.Request.decode({**json.loads(sys.argv[1]), "cuda": wrong})
print(json.dumps(resources.compile_group([good, broken, good])))
"""


@needs_toolkit
def test_a_variant_that_does_not_compile_costs_only_itself_its_part() -> None:
    assert TOOLKIT is not None
    cuda = gzip.decompress((FIXTURES / "sm_90a-ns3.cu.gz").read_bytes()).decode()
    assert "__syncthreads();" in cuda
    request = {"cuda": cuda, "arch": "sm_90a", "toolkit": sorted(TOOLKIT.payload.items()),
               "flags": ["--cubin", "-O3", "-lineinfo", "-arch=sm_90a", "-std=c++20",
                         *_includes(), "--ptxas-options=--verbose", "-w"],
               "threads": 256, "dynamic_shared": 98304, "tensor_memory": 0}
    done = subprocess.run([sys.executable, "-c", _BROKEN, json.dumps(request)],
                          capture_output=True, text=True, check=True)
    good, broken, again = json.loads(done.stdout)
    assert good["resources"]["registers"] == 240 and again == good
    assert "no_such_call" in broken["resources_error"]


def _includes() -> list[str]:
    """TileLang's include folders, as its device build gives them, asked of a process
    that imports it."""
    done = subprocess.run([sys.executable, "-c", "import json; from tilelang.env import "
                           "CUTLASS_INCLUDE_DIR as c, TILELANG_TEMPLATE_PATH as t; "
                           "print(json.dumps([f'-I{t}', f'-I{c}']))"],
                          capture_output=True, text=True, check=True)
    return list(json.loads(done.stdout))
