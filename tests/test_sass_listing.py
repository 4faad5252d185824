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
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sphinx_tlstages.core.hardware import sass_listing
from sphinx_tlstages.core.hardware.resources import sass_counts, strip_encodings
from sphinx_tlstages.core.plan.toolkit import find

from .kernels import GEMM_PARAMS, ROOT

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


def one_function(name: str, *lines: str) -> str:
    """nvdisasm's listing of one function: ``lines`` are labels (``k:``) or instructions
    given as ``ADDRESS TEXT`` (``0010 BRA `(.L_x_0);``), laid out as nvdisasm prints them."""
    body = [text if text.endswith(":") else f"        /*{text[:4]}*/{' ' * 19}{text[5:]}"
            for text in lines]
    return "\n".join([f"//--------------------- .text.{name} --------------------------",
                      *body, "//--------------------- SYMBOLS --------------------------"]) + "\n"


def test_a_label_no_instruction_follows_is_left_as_it_is() -> None:
    disassembly = one_function("k", "k:", ".L_x_0:", "0000 BRA `(.L_x_0);",
                               "0010 BRA `(.L_x_9);", ".L_x_9:")
    made = sass_listing.listing(disassembly, "sm_90a", "k")
    assert made is not None
    assert "/*0000*/                   BRA 0x0;" in made
    assert "BRA `(.L_x_9);" in made


def test_calls_and_returns_of_the_compilers_subroutines_name_addresses() -> None:
    """An fp32 division's slow path is a subroutine of the kernel's own code: nvdisasm
    names the call's target and the return's (the kernel) by label, cuobjdump by
    address."""
    disassembly = one_function("k", "k:", ".text.k:", "0000 LDC R1, c[0x0][0x28] ;",
                               "0010 CALL.REL.NOINC `($__internal_0_$__slowpath) ;",
                               "0020 EXIT ;", "$__internal_0_$__slowpath:",
                               "0030 RET.REL.NODEC R2 `(k) ;")
    made = sass_listing.listing(disassembly, "sm_80", "k")
    assert made is not None
    assert "/*0010*/                   CALL.REL.NOINC 0x30 ;" in made
    assert "/*0030*/                   RET.REL.NODEC R2 0x0 ;" in made
    assert "`(" not in made


# Lower each kernel for its target, compile each variant as the part does (keeping its
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
cases, cuobjdump, folder = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3]
toolkit = find("auto")
out = []
for index, (path, factory, arch, params, depth) in enumerate(cases):
    source = Path(path).read_text(encoding="utf-8")
    (variant,) = with_toolkit(matrix(source, Path(path).name, factory,
                                     options.parse_params(params), {}, (depth,),
                                     (parse_target(arch),)), toolkit)
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
GEMM_FILE = str(ROOT / "book" / "kernels" / "gemm.py")
# The book's flash attention divides in fp32 (the softmax's denominator): the compiler
# calls a division subroutine of its own and returns from it to the kernel's label.
ATTENTION_FILE = str(ROOT / "book" / "kernels" / "attention.py")
ATTENTION_PARAMS = "batch=1 heads=8 seq_len=2048 dim=64 block_M=64 block_N=64 threads=128"
CASES = [(GEMM_FILE, "matmul", "sm_80", GEMM_PARAMS, 3),
         (GEMM_FILE, "matmul", "sm_80", SPILLING, 2),
         (GEMM_FILE, "matmul", "sm_90a", GEMM_PARAMS, 2),
         (GEMM_FILE, "matmul", "sm_100a", GEMM_PARAMS, 2),
         (ATTENTION_FILE, "attention", "sm_80", ATTENTION_PARAMS, 2),
         (ATTENTION_FILE, "attention", "sm_90a", ATTENTION_PARAMS, 2)]


@pytest.mark.skipif((TOOLKIT is None or _cuobjdump() is None) and not CI,
                    reason="no NVIDIA compiler with cuobjdump installed "
                           "(pip install sphinx-tlstages[test,resources])")
def test_the_parts_listing_is_cuobjdumps_on_each_target(tmp_path: Path) -> None:
    cuobjdump = _cuobjdump()
    assert cuobjdump is not None, "the test extra installs cuobjdump beside nvcc"
    done = subprocess.run([sys.executable, "-c", _BOTH, json.dumps(CASES), cuobjdump,
                           str(tmp_path)], capture_output=True, text=True, check=True)
    found = json.loads(done.stdout)
    for case, each in zip(CASES, found, strict=True):
        assert each["error"] is None, (case, each["error"])
        assert each["part"] == without_headerflags(strip_encodings(each["cuobjdump"])), case
        assert sass_counts(each["part"])["total"] > 100, case
    assert any(" STL [" in line for line in found[1]["part"].splitlines())  # spills
    for attention in found[4:]:  # the division subroutine, called and returned from
        assert re.search(r"CALL\.REL\.NOINC 0x[0-9a-f]+ ;", attention["part"])
        assert re.search(r"RET\.REL\.NODEC R\d+ 0x0 ;", attention["part"])
