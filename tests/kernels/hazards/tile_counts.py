@tilelang.jit
def tile_counts(N, chunk=512, bins=64, num_stages=2):
    # A histogram of each streamed tile's values, counted with atomic adds into shared
    # memory, then written out.
    @T.prim_func
    def kernel(X: T.Tensor((N,), "int32"), Counts: T.Tensor((bins,), "int32")):
        with T.Kernel(1, threads=128) as bx:
            x_s = T.alloc_shared((chunk,), "int32")
            counts_s = T.alloc_shared((bins,), "int32")
            tx = T.get_thread_binding()
            T.clear(counts_s)
            for k in T.Pipelined(T.ceildiv(N, chunk), num_stages=num_stages):
                T.copy(X[k * chunk], x_s)
                for v in T.serial(chunk // 128):
                    T.atomic_add(counts_s[x_s[tx * (chunk // 128) + v] % bins], 1)
            T.copy(counts_s, Counts)

    return kernel
