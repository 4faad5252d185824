@tilelang.jit
def ragged_totals(batch, total_rows, N, num_stages, block_rows=16):
    # Sequences of different lengths packed one after another: ``starts[b]`` is where
    # sequence b begins, so its trip count is read from memory.
    @T.prim_func
    def kernel(X: T.Tensor((total_rows, N), "float16"), starts: T.Tensor((batch + 1,), "int32"),
               Out: T.Tensor((batch, N), "float32")):
        with T.Kernel(batch, threads=128) as b:
            tile = T.alloc_shared((block_rows, N), "float16")
            total = T.alloc_fragment((N,), "float32")
            first = starts[b]
            rows = starts[b + 1] - first
            T.clear(total)
            for r in T.Pipelined(T.ceildiv(rows, block_rows), num_stages=num_stages):
                T.copy(X[first + r * block_rows, 0], tile)
                for i, j in T.Parallel(block_rows, N):
                    total[j] += tile[i, j]
            T.copy(total, Out[b, 0])

    return kernel
