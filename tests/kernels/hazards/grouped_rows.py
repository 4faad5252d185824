@tilelang.jit
def grouped_rows(groups, total_rows, N, K, num_stages, block_M=64, block_N=64, block_K=32):
    # Row groups of different sizes, one weight matrix each. The grid has a block for the
    # most tiles the rows can need; each block counts the groups' tiles in shared memory,
    # finds the group its tile falls in, and skips the work when it has no tile.
    @T.prim_func
    def kernel(A: T.Tensor((total_rows, K), "float16"), B: T.Tensor((groups, K, N), "float16"),
               sizes: T.Tensor((groups,), "int32"), offsets: T.Tensor((groups,), "int32"),
               C: T.Tensor((total_rows, N), "float16")):
        with T.Kernel(T.ceildiv(N, block_N), total_rows // block_M + groups,
                      threads=128) as (bx, by):
            A_s = T.alloc_shared((block_M, block_K), "float16")
            B_s = T.alloc_shared((block_K, block_N), "float16")
            acc = T.alloc_fragment((block_M, block_N), "float32")
            tiles = T.alloc_shared((groups + 1,), "int32")
            group = T.alloc_local((1,), "int32")
            tiles[0] = 0
            for g in T.serial(groups):
                tiles[g + 1] = tiles[g] + T.ceildiv(sizes[g], block_M)
            group[0] = 0
            for g in T.serial(groups):
                if tiles[g + 1] <= by:
                    group[0] = g + 1
            if by < tiles[groups]:
                row = offsets[group[0]] + (by - tiles[group[0]]) * block_M
                T.clear(acc)
                for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                    T.copy(A[row, k * block_K], A_s)
                    T.copy(B[group[0], k * block_K, bx * block_N], B_s)
                    T.gemm(A_s, B_s, acc)
                T.copy(acc, C[row, bx * block_N])

    return kernel
