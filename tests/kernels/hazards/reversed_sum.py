@tilelang.jit
def reversed_sum(N, K, num_stages):
    @T.prim_func
    def kernel(A: T.Tensor((K, N), "float32"), Out: T.Tensor((N,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            S = T.alloc_shared((N,), "float32")
            acc = T.alloc_fragment((N,), "float32")
            T.clear(acc)
            for k in T.Pipelined(K, num_stages=num_stages):
                T.copy(A[k, :], S)
                for i in T.Parallel(N):
                    acc[i] += S[N - 1 - i]
            T.copy(acc, Out)

    return kernel
