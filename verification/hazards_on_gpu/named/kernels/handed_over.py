import tilelang
import tilelang.language as T


@tilelang.jit
def handed_over(M, N=64, block=64, handoff=True, wait_first=True, num_stages=1):
    # Two warp groups: the second copies a tile of X into shared memory with cp.async,
    # waits for its own copies and says the tile is in with a one-sided arrive on named
    # barrier 1 (bar.arrive); the first waits at that barrier (bar.sync 1, 256), then sums
    # one row of the tile per thread. Without the handoff nothing orders the two; reading
    # before the wait (wait_first=False) reads a tile still being copied.
    @T.prim_func
    def kernel(X: T.Tensor((M, N), "float32"), S: T.Tensor((M,), "float32")):
        with T.Kernel(T.ceildiv(M, block), threads=256) as bx:
            tile = T.alloc_shared((block, N), "float32")
            tx = T.get_thread_binding()
            if tx < 128:
                if handoff and wait_first:
                    T.sync_threads(1, 256)
                if tx < block:
                    total = T.alloc_var("float32")
                    total = 0.0
                    for j in T.serial(N):
                        total += tile[tx, j]
                    S[bx * block + tx] = total
                if handoff and not wait_first:
                    T.sync_threads(1, 256)
            else:
                t = tx - 128
                for i in T.serial(block * N // 4 // 128):
                    at = (i * 128 + t) * 4
                    T.ptx_cp_async(T.access_ptr(tile[at // N, at % N], "w", 4),
                                   T.access_ptr(X[bx * block + at // N, at % N], "r", 4), 4)
                T.ptx_commit_group()
                T.ptx_wait_group(0)
                if handoff:
                    T.named_barrier_arrive(1, 256)

    return kernel
