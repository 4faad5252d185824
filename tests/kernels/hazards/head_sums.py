@tilelang.jit
def head_sums(heads, N, K, chunk=128, num_stages=2):
    # For each head in turn, its rows streamed through shared memory and summed: a
    # loop over heads around the pipelined loop, as chunked kernels loop over chunks.
    @T.prim_func
    def kernel(A: T.Tensor((heads, K, N), "float32"), Out: T.Tensor((heads, N), "float32")):
        with T.Kernel(T.ceildiv(N, chunk), threads=128) as bx:
            S = T.alloc_shared((chunk,), "float32")
            acc = T.alloc_fragment((chunk,), "float32")
            for h in T.serial(heads):
                T.clear(acc)
                for k in T.Pipelined(K, num_stages=num_stages):
                    T.copy(A[h, k, bx * chunk], S)
                    for i in T.Parallel(chunk):
                        acc[i] += S[chunk - 1 - i]
                T.copy(acc, Out[h, bx * chunk])

    return kernel
