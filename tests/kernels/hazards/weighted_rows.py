@tilelang.jit
def weighted_rows(N, K, num_stages):
    @T.prim_func
    def kernel(A: T.Tensor((K, 64, N), "float16"), W: T.Tensor((K, 64), "float32"),
               Out: T.Tensor((64, N), "float32")):
        with T.Kernel(1, threads=128) as bx:
            tile = T.alloc_shared((64, N), "float16")
            w = T.alloc_shared((64,), "float32")
            acc = T.alloc_fragment((64, N), "float32")
            T.clear(acc)
            for k in T.Pipelined(K, num_stages=num_stages):
                T.copy(A[k, :, :], tile)
                T.copy(W[k, :], w)
                for i, j in T.Parallel(64, N):
                    acc[i, j] += tile[i, j] * w[i]
            T.copy(acc, Out)

    return kernel
