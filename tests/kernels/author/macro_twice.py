import tilelang
import tilelang.language as T


@T.macro
def stage_tile(src, dst, row, k, rows, cols):
    T.copy(src[row * rows, k * cols], dst)


@tilelang.jit
def matmul(M, N, K, block_M, block_N, block_K, num_stages, threads=128):
    dtype = "float16"

    @T.prim_func
    def kernel(A: T.Tensor((M, K), dtype), B: T.Tensor((N, K), dtype),
               C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_s = T.alloc_shared((block_M, block_K), dtype)
            B_s = T.alloc_shared((block_N, block_K), dtype)
            acc = T.alloc_fragment((block_M, block_N), "float32")
            T.clear(acc)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                stage_tile(A, A_s, by, k, block_M, block_K)
                stage_tile(B, B_s, bx, k, block_N, block_K)
                T.gemm(A_s, B_s, acc, transpose_B=True)
            T.copy(acc, C[by * block_M, bx * block_N])

    return kernel
