@tilelang.jit
def direct_matmul(M, N, K, block_M, block_N, block_K, num_stages, threads):
    dtype = "float16"
    accum_dtype = "float32"

    @T.prim_func
    def kernel(
        A: T.Tensor((M, K), dtype),
        B: T.Tensor((K, N), dtype),
        C: T.Tensor((M, N), accum_dtype),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            C_shared = T.alloc_shared((block_M, block_N), accum_dtype)
            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.gemm(A[by * block_M:(by + 1) * block_M, ko * block_K:(ko + 1) * block_K],
                       B[ko * block_K:(ko + 1) * block_K, bx * block_N:(bx + 1) * block_N],
                       C_shared, clear_accum=ko == 0)
            T.copy(C_shared, C[by * block_M, bx * block_N])

    return kernel
