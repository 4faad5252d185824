@tilelang.jit(pass_configs={tilelang.PassConfigKey.TL_DISABLE_TMA_LOWER: True,
                            tilelang.PassConfigKey.TL_DISABLE_WARP_SPECIALIZED: True})
def copied_tmem_gemm(M, N, K, block_M=128, block_N=128, block_K=64, num_stages=2):
    @T.prim_func
    def kernel(A: T.Tensor((M, K), "float16"), B: T.Tensor((N, K), "float16"),
               C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            a_tile = T.alloc_shared((block_M, block_K), "float16")
            b_tile = T.alloc_shared((block_N, block_K), "float16")
            acc = T.alloc_tmem((block_M, block_N), "float32")
            done = T.alloc_barrier(1)
            out = T.alloc_fragment((block_M, block_N), "float32")
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A[by * block_M, k * block_K], a_tile)
                T.copy(B[bx * block_N, k * block_K], b_tile)
                T.tcgen05_gemm(a_tile, b_tile, acc, False, True, mbar=done, clear_accum=k == 0)
                T.mbarrier_wait_parity(done, k % 2)
            T.copy(acc, out)
            T.copy(out, C[by * block_M, bx * block_N])

    return kernel
