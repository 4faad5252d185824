"""Kernel sources the tests lower for real, and helpers that wrap them in directives."""

from __future__ import annotations

import textwrap

GEMM = '''\
@tilelang.jit
def matmul(M, N, K, block_M, block_N, block_K, num_stages, threads):
    dtype = "float16"
    accum_dtype = "float32"

    @T.prim_func
    def kernel(
        A: T.Tensor((M, K), dtype),
        B: T.Tensor((N, K), dtype),
        C: T.Tensor((M, N), dtype),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_N, block_K), dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            T.clear(C_local)
            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A[by * block_M, ko * block_K], A_shared)
                T.copy(B[bx * block_N, ko * block_K], B_shared)
                T.gemm(A_shared, B_shared, C_local, transpose_B=True)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return kernel
'''

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
    lines += [f"   :{key.replace('_', '-')}: {value}" for key, value in options.items()]
    return "\n".join(lines) + "\n\n" + textwrap.indent(source, "   ") + "\n"


def myst(source: str, title: str = "", **options: str) -> str:
    """The same directive as a MyST fenced block."""
    lines = [f"```{{tl-pipeline}} {title}".rstrip()]
    lines += [f":{key.replace('_', '-')}: {value}" for key, value in options.items()]
    return "\n".join(lines) + "\n\n" + source + "```\n"
