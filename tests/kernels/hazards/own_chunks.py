@tilelang.jit
def own_chunks(N, chunk=512, partner=0, num_stages=2):
    @T.prim_func
    def kernel(X: T.Tensor((N,), "float32"), S: T.Tensor((128, 4), "float32")):
        with T.Kernel(1, threads=128) as bx:
            x_s = T.alloc_shared((chunk,), "float32")
            part = T.alloc_local((4,), "float32")
            tx = T.get_thread_binding()
            T.clear(part)
            for k in T.Pipelined(T.ceildiv(N, chunk), num_stages=num_stages):
                T.copy(X[k * chunk], x_s)
                # Thread tx sums the four floats of thread tx ^ partner: with partner 0,
                # the four its own 16-byte cp.async fetched.
                for v in T.vectorized(4):
                    part[v] += x_s[(tx ^ partner) * 4 + v]
            for v in T.vectorized(4):
                S[tx, v] = part[v]

    return kernel
