"""A gemm that reads its operands straight from device memory and sums into shared
memory: on a target with the metal4 key TileLang makes it Metal 4's matmul2d."""
import tilelang
import tilelang.language as T


@tilelang.jit(out_idx=[-1])
def direct_matmul(M, N, K, block_M=64, block_N=64, block_K=32, num_stages=2, threads=128,
                  dtype=T.float16, accum_dtype=T.float32):

    @T.prim_func
    def gemm(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype),
             C: T.Tensor((M, N), accum_dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            C_tile = T.alloc_shared((block_M, block_N), accum_dtype)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.gemm(A[by * block_M:(by + 1) * block_M, k * block_K:(k + 1) * block_K],
                       B[k * block_K:(k + 1) * block_K, bx * block_N:(bx + 1) * block_N],
                       C_tile, clear_accum=k == 0)
            T.copy(C_tile, C[by * block_M, bx * block_N])

    return gemm
