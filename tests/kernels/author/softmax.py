import tilelang
import tilelang.language as T


@tilelang.jit(out_idx=[1])
def softmax(M, N, block_M, block_N, num_stages, threads=128):
    dtype = "float16"
    accum = "float32"

    @T.prim_func
    def kernel(X: T.Tensor((M, N), dtype), Y: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, block_M), threads=threads) as bx:
            X_s = T.alloc_shared((block_M, block_N), dtype)
            X_s2 = T.alloc_shared((block_M, block_N), dtype)
            tile = T.alloc_fragment((block_M, block_N), accum)
            row_max = T.alloc_fragment((block_M,), accum)
            tile_max = T.alloc_fragment((block_M,), accum)
            row_sum = T.alloc_fragment((block_M,), accum)
            tile_sum = T.alloc_fragment((block_M,), accum)
            T.fill(row_max, -T.infinity(accum))
            T.fill(row_sum, 0)
            for k in T.Pipelined(T.ceildiv(N, block_N), num_stages=num_stages):
                T.copy(X[bx * block_M, k * block_N], X_s)
                T.copy(X_s, tile)
                T.reduce_max(tile, tile_max, dim=1)
                for i in T.Parallel(block_M):
                    row_sum[i] = row_sum[i] * T.exp2(row_max[i] - T.max(row_max[i], tile_max[i]))
                    row_max[i] = T.max(row_max[i], tile_max[i])
                for i, j in T.Parallel(block_M, block_N):
                    tile[i, j] = T.exp2(tile[i, j] - row_max[i])
                T.reduce_sum(tile, tile_sum, dim=1)
                for i in T.Parallel(block_M):
                    row_sum[i] += tile_sum[i]
            for k in T.Pipelined(T.ceildiv(N, block_N), num_stages=num_stages):
                T.copy(X[bx * block_M, k * block_N], X_s2)
                T.copy(X_s2, tile)
                for i, j in T.Parallel(block_M, block_N):
                    tile[i, j] = T.exp2(tile[i, j] - row_max[i]) / row_sum[i]
                T.copy(tile, Y[bx * block_M, k * block_N])

    return kernel
