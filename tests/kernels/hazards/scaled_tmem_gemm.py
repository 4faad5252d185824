@tilelang.jit
def scaled_tmem_gemm(M, N, K, alpha=0.5, block_M=128, block_N=128, block_K=64, num_stages=2):
    @T.prim_func
    def kernel(A: T.Tensor((M, K), "bfloat16"), B: T.Tensor((N, K), "bfloat16"),
               C: T.Tensor((M, N), "bfloat16")):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            a_tile = T.alloc_shared((block_M, block_K), "bfloat16")
            b_tile = T.alloc_shared((block_N, block_K), "bfloat16")
            acc = T.alloc_tmem((block_M, block_N), "float32")  # the accumulator, in tensor memory
            mma_finished = T.alloc_barrier(1)
            out = T.alloc_fragment((block_M, block_N), "float32")
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A[by * block_M, k * block_K], a_tile)
                T.copy(B[bx * block_N, k * block_K], b_tile)
                T.gemm(a_tile, b_tile, acc, transpose_B=True, mbar=mma_finished,
                       clear_accum=k == 0)
            T.copy(acc, out)
            for i, j in T.Parallel(block_M, block_N):
                out[i, j] = out[i, j] * alpha
            T.copy(out, C[by * block_M, bx * block_N])

    return kernel
