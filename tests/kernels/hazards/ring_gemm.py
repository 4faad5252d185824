@tilelang.jit
def ring_gemm(M, N, K, block_M=128, block_N=128, block_K=64, stages=2):
    @T.prim_func
    def kernel(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"),
               C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=256) as (bx, by):
            a_ring = T.alloc_shared((stages, block_M, block_K), "float16")
            b_ring = T.alloc_shared((stages, block_K, block_N), "float16")
            acc = T.alloc_fragment((block_M, block_N), "float32")
            full_empty = T.alloc_barrier([128] * (2 * stages))
            with T.ws(0):
                T.clear(acc)
            for k in range(T.ceildiv(K, block_K)):
                with T.ws(1):  # the loader
                    T.mbarrier_wait_parity(full_empty[stages + k % stages],
                                           (k // stages) % 2 ^ 1)
                    T.tma_copy(A[by * block_M:(by + 1) * block_M, k * block_K:(k + 1) * block_K],
                               a_ring[k % stages, :, :], barrier=full_empty[k % stages])
                    T.tma_copy(B[k * block_K:(k + 1) * block_K, bx * block_N:(bx + 1) * block_N],
                               b_ring[k % stages, :, :], barrier=full_empty[k % stages])
                    T.mbarrier_arrive(full_empty[k % stages])
                with T.ws(0):  # the math warpgroup
                    T.mbarrier_wait_parity(full_empty[k % stages], (k // stages) % 2)
                    T.gemm(a_ring[k % stages, :, :], b_ring[k % stages, :, :], acc)
                    T.mbarrier_arrive(full_empty[stages + k % stages])
            with T.ws(0):
                T.copy(acc, C[by * block_M, bx * block_N])

    return kernel
