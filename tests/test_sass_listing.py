"""The SASS listing a page shows, made from the ``nvdisasm -gi`` output the part reads its
line table from: it must be ``cuobjdump -sass``'s listing (encodings stripped), but for
the ``.headerflags`` line ``nvdisasm`` does not print, on recorded output and on cubins
compiled for each target the part knows (sm_80's ``cp.async`` loops, sm_90a's TMA and
warp-group MMA, sm_100a's tensor-memory MMA), from kernels lowered for real in a process
of their own."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sphinx_tlstages.core.hardware import sass_listing
from sphinx_tlstages.core.hardware.resources import sass_counts, strip_encodings
from sphinx_tlstages.core.plan.toolkit import find

from .kernels import GEMM, GEMM_PARAMS

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "nvcc"
TOOLKIT = find("auto")
CI = os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def _cuobjdump() -> str | None:
    if TOOLKIT is None:
        return None
    beside = Path(TOOLKIT.nvcc).with_name("cuobjdump")
    return str(beside) if beside.is_file() else shutil.which("cuobjdump")


def without_headerflags(listing: str) -> str:
    return "".join(line for line in listing.splitlines(True) if ".headerflags" not in line)


def recorded(name: str) -> str:
    return gzip.decompress((FIXTURES / name).read_bytes()).decode()


@pytest.mark.parametrize("depth", [1, 4])
def test_the_listing_from_nvdisasm_is_cuobjdumps_on_recorded_output(depth: int) -> None:
    disassembly = recorded(f"sm_80-ns{depth}.nvdisasm-gi.gz")
    made = sass_listing.listing(disassembly, "sm_80", "kernel_kernel")
    theirs = without_headerflags(strip_encodings(recorded(f"sm_80-ns{depth}.sass.gz")))
    assert made == theirs
    # Branches name addresses, as cuobjdump's do, not nvdisasm's labels.
    assert made is not None and " BRA 0x" in made and "`(" not in made
    assert sass_counts(made)["HMMA"] == (256 if depth == 1 else 512)


def test_a_renamed_kernel_gets_its_name_back_and_a_missing_one_no_listing() -> None:
    disassembly = recorded("sm_80-ns1.nvdisasm-gi.gz").replace("kernel_kernel",
                                                               "kernel_kernel__tls3")
    made = sass_listing.listing(disassembly, "sm_80", "kernel_kernel__tls3", "kernel_kernel")
    assert made == sass_listing.listing(recorded("sm_80-ns1.nvdisasm-gi.gz"), "sm_80",
                                        "kernel_kernel")
    assert sass_listing.listing(disassembly, "sm_80", "kernel_kernel") is None


def test_a_label_no_instruction_follows_is_left_as_it_is() -> None:
    disassembly = ("//--------------------- .text.k --------------------------\n"
                   "k:\n"
                   ".L_x_0:\n"
                   "        /*0000*/                   BRA `(.L_x_0);\n"
                   "        /*0010*/                   BRA `(.L_x_9);\n"
                   ".L_x_9:\n"
                   "//--------------------- SYMBOLS --------------------------\n")
    made = sass_listing.listing(disassembly, "sm_90a", "k")
    assert made is not None
    assert "/*0000*/                   BRA 0x0;" in made
    assert "BRA `(.L_x_9);" in made


# Lower the GEMM for each target, compile each variant as the part does (keeping its
# cubin), list the kept cubin with cuobjdump: print the part's listing and cuobjdump's.
_BOTH = """
import json, subprocess, sys
from pathlib import Path
from sphinx_tlstages.core.plan import options
from sphinx_tlstages.core.plan.targets import parse_target
from sphinx_tlstages.core.plan.toolkit import find
from sphinx_tlstages.core.plan.variants import matrix, with_toolkit
from sphinx_tlstages.worker import resources
from sphinx_tlstages.worker.lowering import lower_variant
from sphinx_tlstages.worker.tasks import import_tilelang

import_tilelang()
source, cases, cuobjdump, folder = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3], sys.argv[4]
toolkit = find("auto")
out = []
for index, (arch, params, depth) in enumerate(cases):
    (variant,) = with_toolkit(matrix(source, "gemm.py", "matmul", options.parse_params(params),
                                     {}, (depth,), (parse_target(arch),)), toolkit)
    lowered = lower_variant(variant.task(), compile_now=False)
    request = resources.Request.decode(lowered["resources_request"])
    cubin = Path(folder, f"{index}.cubin")
    found = resources.compile_variant(
        request.cuda, arch, {}, dict(request.toolkit), request.threads,
        request.dynamic_shared, request.tensor_memory, keep_cubin=cubin,
        kernel=request.kernel)
    listed = subprocess.run([cuobjdump, "-sass", str(cubin)], capture_output=True, text=True,
                            check=True).stdout
    out.append({"part": found.get("sass"), "cuobjdump": listed,
                "error": found.get("resources_error")})
print(json.dumps(out))
"""

# A tile too large for the registers spills: nvdisasm annotates its spill stores.
SPILLING = GEMM_PARAMS.replace("block_M=128", "block_M=256").replace("block_K=64", "block_K=32")
CASES = [("sm_80", GEMM_PARAMS, 3), ("sm_80", SPILLING, 2), ("sm_90a", GEMM_PARAMS, 2),
         ("sm_100a", GEMM_PARAMS, 2)]


@pytest.mark.skipif((TOOLKIT is None or _cuobjdump() is None) and not CI,
                    reason="no NVIDIA compiler with cuobjdump installed "
                           "(pip install sphinx-tlstages[test,resources])")
def test_the_parts_listing_is_cuobjdumps_on_each_target(tmp_path: Path) -> None:
    cuobjdump = _cuobjdump()
    assert cuobjdump is not None, "the test extra installs cuobjdump beside nvcc"
    done = subprocess.run([sys.executable, "-c", _BOTH, GEMM, json.dumps(CASES), cuobjdump,
                           str(tmp_path)], capture_output=True, text=True, check=True)
    for case, found in zip(CASES, json.loads(done.stdout), strict=True):
        assert found["error"] is None, (case, found["error"])
        assert found["part"] == without_headerflags(strip_encodings(found["cuobjdump"])), case
        assert sass_counts(found["part"])["total"] > 100, case
    spills = json.loads(done.stdout)[1]["part"]
    assert sass_counts(spills)["total"] > 100 and "\n        /*" in spills
    assert any(" STL [" in line for line in spills.splitlines())
