@tilelang.jit
def column_totals(N, num_stages, block_rows=16):
    # The number of rows is only known at launch (a batch of variable-length sequences
    # concatenated, say): the loop's trip count is symbolic.
    rows = T.dynamic("rows")

    @T.prim_func
    def kernel(X: T.Tensor((rows, N), "float16"), Out: T.Tensor((N,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            tile = T.alloc_shared((block_rows, N), "float16")
            total = T.alloc_fragment((N,), "float32")
            T.clear(total)
            for r in T.Pipelined(T.ceildiv(rows, block_rows), num_stages=num_stages):
                T.copy(X[r * block_rows, 0], tile)
                for i, j in T.Parallel(block_rows, N):
                    total[j] += tile[i, j]
            T.copy(total, Out)

    return kernel
