"""Column sums of X, a tile of rows at a time: no T.gemm, so it lowers for WebGPU and for
TileLang's CPU target too, which no gemm into a fragment does."""
import tilelang
import tilelang.language as T


@tilelang.jit
def column_sums(rows, cols, block_rows=32, block_cols=128, num_stages=2, threads=128,
                dtype=T.float32):

    @T.prim_func
    def main(X: T.Tensor((rows, cols), dtype), Sums: T.Tensor((cols,), dtype)):
        with T.Kernel(T.ceildiv(cols, block_cols), threads=threads) as bx:
            tile = T.alloc_shared((block_rows, block_cols), dtype)
            for j in T.Parallel(block_cols):
                Sums[bx * block_cols + j] = 0
            for r in T.Pipelined(T.ceildiv(rows, block_rows), num_stages=num_stages):
                T.copy(X[r * block_rows, bx * block_cols], tile)
                for j in T.Parallel(block_cols):
                    for i in T.serial(block_rows):
                        Sums[bx * block_cols + j] += tile[i, j]

    return main
