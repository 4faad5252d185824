@tilelang.jit
def counted_ring(M, N, K, block_M=128, block_N=128, block_K=64, stages=2):
    @T.prim_func
    def kernel(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"),
               C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=256) as (bx, by):
            a_ring = T.alloc_shared((stages, block_M, block_K), "float16")
            b_ring = T.alloc_shared((stages, block_K, block_N), "float16")
            acc = T.alloc_fragment((block_M, block_N), "float32")
            loaded = T.alloc_barrier([128] * stages)
            drained = T.alloc_barrier([128] * stages)
            # Each side counts the tiles it has handled; the slot and the phase it waits
            # for follow from its own count.
            fills = T.alloc_var("int32", init=0)
            uses = T.alloc_var("int32", init=0)
            tx = T.get_thread_binding()
            if tx < 128:
                for k in T.serial(T.ceildiv(K, block_K)):
                    slot = fills % stages
                    phase = (fills // stages) % 2
                    for s in range(stages):
                        if slot == s:
                            T.barrier_wait(drained[s], phase ^ 1)
                            T.tma_copy(A[by * block_M:(by + 1) * block_M,
                                         k * block_K:(k + 1) * block_K],
                                       a_ring[s, :, :], barrier=loaded[s])
                            T.tma_copy(B[k * block_K:(k + 1) * block_K,
                                         bx * block_N:(bx + 1) * block_N],
                                       b_ring[s, :, :], barrier=loaded[s])
                            T.barrier_arrive(loaded[s])
                    fills = fills + 1
            else:
                T.clear(acc)
                for k in T.serial(T.ceildiv(K, block_K)):
                    slot = uses % stages
                    phase = (uses // stages) % 2
                    for s in range(stages):
                        if slot == s:
                            T.barrier_wait(loaded[s], phase)
                            T.wgmma_gemm(a_ring[s, :, :], b_ring[s, :, :], acc)
                            T.wait_wgmma(0)
                            T.barrier_arrive(drained[s])
                    uses = uses + 1
                T.copy(acc, C[by * block_M, bx * block_N])

    return kernel
