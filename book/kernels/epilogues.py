"""GEMMs with fused epilogues, as a project keeps them: one module, several kernels.

Each factory is a ``@tilelang.jit`` function; the epilogues are ``@T.macro`` helpers the
kernels share, and ``LAUNCH`` is what a caller would use to pick one.
"""

import tilelang
import tilelang.language as T

DTYPE = "float16"
ACCUM = "float32"


@T.macro
def bias_relu(acc, bias, col):
    """acc = max(acc + bias, 0), the bias broadcast along rows."""
    for i, j in T.Parallel(acc.shape[0], acc.shape[1]):
        acc[i, j] = T.max(acc[i, j] + bias[col + j], 0)


@T.macro
def scale(acc, alpha):
    for i, j in T.Parallel(acc.shape[0], acc.shape[1]):
        acc[i, j] = acc[i, j] * alpha


@tilelang.jit(out_idx=[-1])
def gemm_bias_relu(M, N, K, block_M=128, block_N=128, block_K=32, num_stages=2,
                   threads=128):
    @T.prim_func
    def kernel(A: T.Tensor((M, K), DTYPE), B: T.Tensor((N, K), DTYPE),
               bias: T.Tensor((N,), ACCUM), C: T.Tensor((M, N), ACCUM)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), DTYPE)
            B_shared = T.alloc_shared((block_N, block_K), DTYPE)
            acc = T.alloc_fragment((block_M, block_N), ACCUM)
            T.clear(acc)
            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A[by * block_M, ko * block_K], A_shared)
                T.copy(B[bx * block_N, ko * block_K], B_shared)
                T.gemm(A_shared, B_shared, acc, transpose_B=True)
            bias_relu(acc, bias, bx * block_N)
            T.copy(acc, C[by * block_M, bx * block_N])

    return kernel


@tilelang.jit(out_idx=[-1])
def gemm_scaled(M, N, K, alpha=0.5, block_M=128, block_N=128, block_K=32, num_stages=2,
                threads=128):
    @T.prim_func
    def kernel(A: T.Tensor((M, K), DTYPE), B: T.Tensor((N, K), DTYPE),
               C: T.Tensor((M, N), ACCUM)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), DTYPE)
            B_shared = T.alloc_shared((block_N, block_K), DTYPE)
            acc = T.alloc_fragment((block_M, block_N), ACCUM)
            T.clear(acc)
            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A[by * block_M, ko * block_K], A_shared)
                T.copy(B[bx * block_N, ko * block_K], B_shared)
                T.gemm(A_shared, B_shared, acc, transpose_B=True)
            scale(acc, alpha)
            T.copy(acc, C[by * block_M, bx * block_N])

    return kernel


LAUNCH = {"bias_relu": gemm_bias_relu, "scaled": gemm_scaled}
