import tilelang
import tilelang.language as T


@T.macro
def load_rows(src, dst, row, col):
    T.copy(src[row, col], dst)


@tilelang.jit
def gathered_gemm(M, N, K, tiles, block_M=64, block_N=64, block_K=32, num_stages=2):
    """C += A[rows of a table] @ B: each step of the loop reads which K tile to take."""

    @T.prim_func
    def kernel(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"),
               Order: T.Tensor((tiles,), "int32"), Weight: T.Tensor((tiles,), "float32"),
               C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_s = T.alloc_shared((block_M, block_K), "float16")
            B_s = T.alloc_shared((block_K, block_N), "float16")
            acc = T.alloc_fragment((block_M, block_N), "float32")
            part = T.alloc_fragment((block_M, block_N), "float32")
            T.clear(acc)
            for t in T.Pipelined(tiles, num_stages=num_stages):
                tile = Order[t]
                col = tile * block_K
                w = Weight[t]
                load_rows(A, A_s, by * block_M, col)
                load_rows(B, B_s, col, bx * block_N)
                T.gemm(A_s, B_s, part, clear_accum=True)
                if w > 0:
                    for i, j in T.Parallel(block_M, block_N):
                        acc[i, j] += part[i, j] * w
                else:
                    for i, j in T.Parallel(block_M, block_N):
                        acc[i, j] -= part[i, j]
            T.copy(acc, C[by * block_M, bx * block_N])

    return kernel
