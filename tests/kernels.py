"""Kernel sources the tests lower for real, and helpers that wrap them in directives."""

from __future__ import annotations

import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

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
