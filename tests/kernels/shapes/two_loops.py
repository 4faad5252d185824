"""Two GEMMs in one kernel, each in a ``T.Pipelined`` loop of its own: the second
multiplies the first's result by another matrix, so the kernel has two pipelines, each
with its own waits."""
import tilelang
import tilelang.language as T


@tilelang.jit
def two_loops(M, N, K, block_M, block_N, block_K, num_stages):
    @T.prim_func
    def chained(
        A: T.Tensor((M, K), "float16"),
        B: T.Tensor((K, N), "float16"),
        D: T.Tensor((K, N), "float16"),
        C: T.Tensor((M, N), "float32"),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_s = T.alloc_shared((block_M, block_K), "float16")
            B_s = T.alloc_shared((block_K, block_N), "float16")
            D_s = T.alloc_shared((block_K, block_N), "float16")
            first = T.alloc_fragment((block_M, block_N), "float32")
            second = T.alloc_fragment((block_M, block_N), "float32")
            T.clear(first)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A[by * block_M, k * block_K], A_s)
                T.copy(B[k * block_K, bx * block_N], B_s)
                T.gemm(A_s, B_s, first)
            T.clear(second)
            for j in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A[by * block_M, j * block_K], A_s)
                T.copy(D[j * block_K, bx * block_N], D_s)
                T.gemm(A_s, D_s, second)
            for i, n in T.Parallel(block_M, block_N):
                second[i, n] += first[i, n]
            T.copy(second, C[by * block_M, bx * block_N])

    return chained
