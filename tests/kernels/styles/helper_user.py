"""A kernel whose tile size and epilogue come from a module beside it."""
import tilelang
import tilelang.language as T

from tile_helpers import k_tile_for, scale_into


@tilelang.jit(out_idx=[-1])
def scaled_gemm(M, N, K, num_stages, tile_m=64, tile_n=128, alpha=0.5, threads=128):
    tile_k = k_tile_for(K)
    dtype, acc_dtype = T.float16, T.float32

    @T.prim_func
    def scaled(X: T.Tensor((M, K), dtype), W: T.Tensor((N, K), dtype),
               Y: T.Tensor((M, N), acc_dtype)):
        with T.Kernel(T.ceildiv(N, tile_n), T.ceildiv(M, tile_m), threads=threads) as (bn, bm):
            xs = T.alloc_shared((tile_m, tile_k), dtype)
            ws = T.alloc_shared((tile_n, tile_k), dtype)
            acc = T.alloc_fragment((tile_m, tile_n), acc_dtype)
            out = T.alloc_fragment((tile_m, tile_n), acc_dtype)
            T.clear(acc)
            for k in T.Pipelined(T.ceildiv(K, tile_k), num_stages=num_stages):
                T.copy(X[bm * tile_m, k * tile_k], xs)
                T.copy(W[bn * tile_n, k * tile_k], ws)
                T.gemm(xs, ws, acc, transpose_B=True)
            scale_into(acc, out, alpha)
            T.copy(out, Y[bm * tile_m, bn * tile_n])

    return scaled
