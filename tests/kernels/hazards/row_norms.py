@tilelang.jit
def row_norms(M, N, block_M, block_N, num_stages):
    # Each row's sum of squares over tiles streamed through shared memory; the sum across
    # the 128 threads that share a row goes through TileLang's reduction workspace.
    @T.prim_func
    def kernel(X: T.Tensor((M, N), "float16"), Norm: T.Tensor((M,), "float32")):
        with T.Kernel(T.ceildiv(M, block_M), threads=128) as bx:
            tile = T.alloc_shared((block_M, block_N), "float16")
            squares = T.alloc_fragment((block_M, block_N), "float32")
            row = T.alloc_fragment((block_M,), "float32")
            T.clear(squares)
            for k in T.Pipelined(T.ceildiv(N, block_N), num_stages=num_stages):
                T.copy(X[bx * block_M, k * block_N], tile)
                for i, j in T.Parallel(block_M, block_N):
                    squares[i, j] += tile[i, j] * tile[i, j]
            T.reduce_sum(squares, row, dim=1)
            T.copy(row, Norm[bx * block_M])

    return kernel
