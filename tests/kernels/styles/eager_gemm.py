"""Eager style: tensors as parameters, sizes from T.const, output from T.empty."""
import tilelang
import tilelang.language as T


@tilelang.jit
def gemm_bt(A, B, block_M=128, block_N=64, block_K=32, num_stages=2, threads=128,
            in_dtype=T.float16, out_dtype=T.float32):
    M, N, K = T.const("M, N, K")

    A: T.Tensor((M, K), in_dtype)
    B: T.Tensor((N, K), in_dtype)
    C = T.empty((M, N), out_dtype)

    with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
        a_s = T.alloc_shared((block_M, block_K), in_dtype)
        b_s = T.alloc_shared((block_N, block_K), in_dtype)
        c_f = T.alloc_fragment((block_M, block_N), out_dtype)
        T.clear(c_f)
        for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
            T.copy(A[by * block_M, ko * block_K], a_s)
            T.copy(B[bx * block_N, ko * block_K], b_s)
            T.gemm(a_s, b_s, c_f, transpose_B=True)
        T.copy(c_f, C[by * block_M, bx * block_N])

    return C
