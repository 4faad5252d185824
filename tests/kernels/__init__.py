"""Kernel sources the tests lower for real, and helpers that wrap them in directives.

Every kernel a test lowers lives in a file of its own under this folder, read as text
(:func:`read`), never imported: ``hazards/`` holds directive bodies as a page gives them
(no imports: a kernel's namespace already has
``tilelang`` and ``T``), ``styles/`` and ``listing/`` whole modules as their
authors write them (copied into a test's project and lowered through ``:file:``),
``helpers/`` a kernel with a helper module beside it, ``metal/`` modules for Apple's GPUs
and for the targets the extension refuses (WebGPU, TileLang's CPU target), ``shapes/``
modules whose code has the shapes a page must say the subject of (two kernels per variant,
two pipelined loops). The files are ruff-excluded: they keep their authors' style, and a
test that asserts a line number counts in them.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent

# The seed GEMM is the book's own kernel file: one text, so the tests check what the
# book shows. Its line numbers matter (T.copy of A is line 18).
GEMM = (ROOT / "book" / "kernels" / "gemm.py").read_text(encoding="utf-8")

GEMM_PARAMS = "M=1024 N=1024 K=1024 block_M=128 block_N=128 block_K=64 threads=128"

# The same GEMM as a plain function returning the prim_func (no @tilelang.jit).
GEMM_PLAIN = GEMM.replace("@tilelang.jit\ndef matmul(", "def matmul(")

# The same GEMM behind @autotune, as TileLang's own examples write it.
GEMM_AUTOTUNE = (
    "from tilelang.autotuner import autotune\n\n"
    "@autotune(configs=[{'block_K': 32}, {'block_K': 64}], warmup=1, rep=1)\n" + GEMM
)


def read(name: str) -> str:
    """The text of the kernel file ``name`` (``"hazards/rolling_sum.py"``) in this folder."""
    return (HERE / name).read_text(encoding="utf-8")


# One shared buffer pair used by two pipelined loops: TileLang 0.1.15 fails on sm_90a in
# layout inference with a C++ check that names neither the pass nor the statement.
TWO_LOOPS = GEMM.replace(
    """                T.gemm(A_shared, B_shared, C_local, transpose_B=True)
""", """                T.gemm(A_shared, B_shared, C_local, transpose_B=True)
            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A[by * block_M, ko * block_K], A_shared)
                T.copy(B[bx * block_N, ko * block_K], B_shared)
                T.gemm(A_shared, B_shared, C_local, transpose_B=True)
""")


def rst(source: str, title: str = "", **options: str) -> str:
    """A ``tl-pipeline`` directive in reStructuredText."""
    lines = [f".. tl-pipeline:: {title}".rstrip()]
    lines += [f"   :{key.rstrip('_').replace('_', '-')}: {value}"
              for key, value in options.items()]
    return "\n".join(lines) + "\n\n" + textwrap.indent(source, "   ") + "\n"


def myst(source: str, title: str = "", **options: str) -> str:
    """The same directive as a MyST fenced block."""
    lines = [f"```{{tl-pipeline}} {title}".rstrip()]
    lines += [f":{key.replace('_', '-')}: {value}" for key, value in options.items()]
    return "\n".join(lines) + "\n\n" + source + "```\n"
