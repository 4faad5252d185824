"""Shapes named only in the prim_func's annotations.

``a_shape``/``b_shape``/``c_shape`` are locals of the factory that the inner function
never reads in its body, so they are not in its closure: they only exist while Python
evaluates the annotations (eagerly, at ``def`` time, because this module has no
``from __future__ import annotations``).
"""
import tilelang
import tilelang.language as T


def tiled_matmul_nn(M, N, K, blk_m, blk_n, blk_k, num_stages, threads=128,
                    dtype="bfloat16", acc_dtype="float32"):
    a_shape = [M, K]
    b_shape = [K, N]
    c_shape = [M, N]

    @T.prim_func
    def nn_kernel(
        A: T.Tensor(a_shape, dtype),
        B: T.Tensor(b_shape, dtype),
        C: T.Tensor(c_shape, dtype),
    ):
        with T.Kernel(T.ceildiv(N, blk_n), T.ceildiv(M, blk_m), threads=threads) as (col, row):
            a_tile = T.alloc_shared((blk_m, blk_k), dtype)
            b_tile = T.alloc_shared((blk_k, blk_n), dtype)
            acc = T.alloc_fragment((blk_m, blk_n), acc_dtype)
            T.clear(acc)
            for kk in T.Pipelined(T.ceildiv(K, blk_k), num_stages=num_stages):
                T.copy(A[row * blk_m, kk * blk_k], a_tile)
                T.copy(B[kk * blk_k, col * blk_n], b_tile)
                T.gemm(a_tile, b_tile, acc)
            T.copy(acc, C[row * blk_m, col * blk_n])

    return nn_kernel
