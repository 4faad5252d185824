import tilelang
import tilelang.language as T
from tiles import BLOCK_K

@tilelang.jit
def gemm(M, N, K, num_stages):
    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((N, K), "float16"),
             C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, 64), T.ceildiv(M, 64), threads=128) as (bx, by):
            a = T.alloc_shared((64, BLOCK_K), "float16")
            b = T.alloc_shared((64, BLOCK_K), "float16")
            c = T.alloc_fragment((64, 64), "float32")
            T.clear(c)
            for k in T.Pipelined(T.ceildiv(K, BLOCK_K), num_stages=num_stages):
                T.copy(A[by * 64, k * BLOCK_K], a)
                T.copy(B[bx * 64, k * BLOCK_K], b)
                T.gemm(a, b, c, transpose_B=True)
            T.copy(c, C[by * 64, bx * 64])
    return main
