@tilelang.jit
def split_consumers(M, N, K, num_stages=2, block_M=64, block_N=128, block_K=64):
    # Three warp groups. The last copies tiles of X and W into a ring with cp.async; the
    # first multiplies each tile by the left half of W's columns, the second by the right
    # half once the first says the tile is in (``pair``: both arrive and wait, so neither
    # runs a tile ahead). Both release a slot together (``free``: 128 arrivals each).
    @T.prim_func
    def kernel(X: T.Tensor((M, K), "float16"), W: T.Tensor((K, N), "float16"),
               Out: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=384) as (bx, by):
            xs = T.alloc_shared((num_stages, block_M, block_K), "float16")
            ws = T.alloc_shared((num_stages, block_K, block_N), "float16")
            left = T.alloc_fragment((block_M, block_N // 2), "float32")
            right = T.alloc_fragment((block_M, block_N // 2), "float32")
            ready = T.alloc_barrier(arrive_count=[128] * num_stages)
            free = T.alloc_barrier(arrive_count=[256] * num_stages)
            pair = T.alloc_barrier(arrive_count=256)
            tx = T.get_thread_binding()
            rounds = T.ceildiv(K, block_K * num_stages)
            if tx < 128:
                T.clear(left)
                for r in T.serial(rounds):
                    for stage in T.unroll(num_stages):
                        T.barrier_wait(ready[stage], r & 1)
                        # wgmma reads through the async proxy what cp.async wrote: fenced
                        # once here, before the second warp group hears of the tile.
                        T.fence_proxy_async()
                        T.barrier_arrive(pair)
                        T.gemm(xs[stage, :, :], ws[stage, :, : block_N // 2], left)
                        T.barrier_wait(pair, (r * num_stages + stage) & 1)
                        T.barrier_arrive(free[stage])
                T.copy(left, Out[by * block_M, bx * block_N])
            elif tx < 256:
                T.clear(right)
                for r in T.serial(rounds):
                    for stage in T.unroll(num_stages):
                        T.barrier_arrive(pair)
                        T.barrier_wait(pair, (r * num_stages + stage) & 1)
                        T.gemm(xs[stage, :, :], ws[stage, :, block_N // 2 :], right)
                        T.barrier_arrive(free[stage])
                T.copy(right, Out[by * block_M, bx * block_N + block_N // 2])
            else:
                t = tx - 256
                for r in T.serial(rounds):
                    for stage in T.unroll(num_stages):
                        T.barrier_wait(free[stage], (r & 1) ^ 1)
                        k0 = (r * num_stages + stage) * block_K
                        for i in T.serial(block_M * block_K // 8 // 128):
                            row = i * 16 + t // 8
                            T.ptx_cp_async(T.access_ptr(xs[stage, row, t % 8 * 8], "w", 8),
                                           T.access_ptr(X[by * block_M + row, k0 + t % 8 * 8], "r", 8),
                                           8)
                        for i in T.serial(block_K * block_N // 8 // 128):
                            row = i * 8 + t // 16
                            T.ptx_cp_async(T.access_ptr(ws[stage, row, t % 16 * 8], "w", 8),
                                           T.access_ptr(W[k0 + row, bx * block_N + t % 16 * 8], "r", 8),
                                           8)
                        T.cp_async_barrier_noinc(ready[stage])

    return kernel
