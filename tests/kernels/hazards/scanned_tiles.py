@tilelang.jit
def scanned_tiles(N, chunk=512, num_stages=2):
    # Each streamed tile scanned in place by a device function of the author's own
    # (``block_scan``, defined in a header the kernel includes), then summed per thread.
    @T.prim_func
    def kernel(X: T.Tensor((N,), "float32"), S: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            x_s = T.alloc_shared((chunk,), "float32")
            part = T.alloc_local((1,), "float32")
            tx = T.get_thread_binding()
            T.clear(part)
            for k in T.Pipelined(T.ceildiv(N, chunk), num_stages=num_stages):
                T.copy(X[k * chunk], x_s)
                T.call_extern("handle", "block_scan", T.address_of(x_s[0]), chunk)
                for v in T.serial(chunk // 128):
                    part[0] += x_s[tx * (chunk // 128) + v]
            S[tx] = part[0]

    return kernel
