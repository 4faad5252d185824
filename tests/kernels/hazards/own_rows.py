@tilelang.jit
def own_rows(M, cols=64, rows=32, shift=0, num_stages=2):
    @T.prim_func
    def kernel(X: T.Tensor((M, cols), "float32"), S: T.Tensor((128, 4), "float32")):
        with T.Kernel(1, threads=128) as bx:
            x_s = T.alloc_shared((rows, cols), "float32")
            part = T.alloc_local((4,), "float32")
            tx = T.get_thread_binding()
            T.clear(part)
            for k in T.Pipelined(T.ceildiv(M, rows), num_stages=num_stages):
                T.copy(X[k * rows, 0], x_s)
                # T.copy gives thread tx the 16 bytes at row tx // 16 + 8 * r, column
                # (tx % 16) * 4 of each of its rows // 8 copies; it sums them back (shift 0),
                # or the rows the next sixteen threads copied (shift 1).
                for r in T.serial(rows // 8):
                    for v in T.vectorized(4):
                        part[v] += x_s[(tx // 16 + 8 * r + shift) % rows, (tx % 16) * 4 + v]
            for v in T.vectorized(4):
                S[tx, v] = part[v]

    return kernel
