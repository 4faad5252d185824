"""A module-level T.macro used inside the pipelined loop and in the epilogue."""
import tilelang
import tilelang.language as T


@T.macro
def fetch_pair(P, Q, p_s, q_s, r0, c0, k0):
    T.copy(P[r0, k0], p_s)
    T.copy(Q[c0, k0], q_s)


@T.macro
def add_residual(acc, R, r0, c0):
    for i, j in T.Parallel(acc.shape[0], acc.shape[1]):
        acc[i, j] = acc[i, j] + R[r0 + i, c0 + j]


def residual_gemm(M, N, K, bm, bn, bk, num_stages, threads=256):
    dtype, acc_dtype = "float16", "float32"

    @T.prim_func
    def residual(P: T.Tensor((M, K), dtype), Q: T.Tensor((N, K), dtype),
                 R: T.Tensor((M, N), acc_dtype), D: T.Tensor((M, N), acc_dtype)):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=threads) as (cx, cy):
            p_s = T.alloc_shared((bm, bk), dtype)
            q_s = T.alloc_shared((bn, bk), dtype)
            acc = T.alloc_fragment((bm, bn), acc_dtype)
            T.clear(acc)
            for k in T.Pipelined(T.ceildiv(K, bk), num_stages=num_stages):
                fetch_pair(P, Q, p_s, q_s, cy * bm, cx * bn, k * bk)
                T.gemm(p_s, q_s, acc, transpose_B=True)
            add_residual(acc, R, cy * bm, cx * bn)
            T.copy(acc, D[cy * bm, cx * bn])

    return residual
