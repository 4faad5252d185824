"""A pipelined loop whose body is guarded: the K tiles come from a table, and a negative
entry skips its tile (as sparse-attention kernels choose their blocks)."""
import tilelang
import tilelang.language as T


@tilelang.jit
def gathered_gemm(M, N, K, S, block_M=64, block_N=64, block_K=32, num_stages=2):
    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"),
             Tiles: T.Tensor((S,), "int32"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_s = T.alloc_shared((block_M, block_K), "float16")
            B_s = T.alloc_shared((block_K, block_N), "float16")
            acc = T.alloc_fragment((block_M, block_N), "float32")
            T.clear(acc)
            for s in T.Pipelined(S, num_stages=num_stages):
                k0 = Tiles[s] * block_K
                if k0 >= 0:
                    T.copy(A[by * block_M, k0], A_s)
                    T.copy(B[k0, bx * block_N], B_s)
                    T.gemm(A_s, B_s, acc)
            T.copy(acc, C[by * block_M, bx * block_N])

    return main
