@tilelang.jit
def window_scores(seq, dim, window, num_stages, block=64):
    # Local attention scores: each block of queries looks at the keys of its own block and
    # the ``window - 1`` blocks before it, so where its loop starts depends on the block.
    @T.prim_func
    def kernel(Q: T.Tensor((seq, dim), "float16"), Keys: T.Tensor((seq, dim), "float16"),
               Out: T.Tensor((seq, block), "float32")):
        with T.Kernel(T.ceildiv(seq, block), threads=128) as bx:
            q = T.alloc_shared((block, dim), "float16")
            keys = T.alloc_shared((block, dim), "float16")
            scores = T.alloc_fragment((block, block), "float32")
            T.copy(Q[bx * block, 0], q)
            T.clear(scores)
            for k in T.Pipelined(T.max(0, bx - window + 1), bx + 1, num_stages=num_stages):
                T.copy(Keys[k * block, 0], keys)
                T.gemm(q, keys, scores, transpose_B=True)
            T.copy(scores, Out[bx * block, 0])

    return kernel
