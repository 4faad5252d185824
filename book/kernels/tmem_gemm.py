@tilelang.jit
def matmul_tmem(M, N, K, block_M, block_N, block_K, num_stages, threads):
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
            C_tmem = T.alloc_tmem((block_M, block_N), accum_dtype)
            mma_done = T.alloc_barrier(1)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A[by * block_M, ko * block_K], A_shared)
                T.copy(B[bx * block_N, ko * block_K], B_shared)
                T.gemm(A_shared, B_shared, C_tmem, transpose_B=True, mbar=mma_done,
                       clear_accum=ko == 0)
            T.copy(C_tmem, C_local)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return kernel
