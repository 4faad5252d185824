"""Eager style with subscripted annotations (``T.Tensor[shape, dtype]``) and the pipeline
depth written into the loop, as many published kernels have it: no num_stages parameter."""
import tilelang
import tilelang.language as T


@tilelang.jit
def scaled_gemv(x, W, rows_per_block=32, k_tile=128):
    N, K = T.const("N, K")
    x: T.Tensor[(K,), T.float16]
    W: T.Tensor[(N, K), T.float16]
    y = T.empty((N,), T.float32)

    with T.Kernel(T.ceildiv(N, rows_per_block), threads=128) as bn:
        w_s = T.alloc_shared((rows_per_block, k_tile), T.float16)
        x_s = T.alloc_shared((k_tile,), T.float16)
        partial = T.alloc_fragment((rows_per_block, k_tile), T.float32)
        total = T.alloc_fragment((rows_per_block,), T.float32)
        T.clear(partial)
        for kt in T.Pipelined(T.ceildiv(K, k_tile), num_stages=3):
            T.copy(W[bn * rows_per_block, kt * k_tile], w_s)
            T.copy(x[kt * k_tile], x_s)
            for r, c in T.Parallel(rows_per_block, k_tile):
                partial[r, c] += w_s[r, c] * x_s[c]
        T.reduce_sum(partial, total, dim=1)
        T.copy(total, y[bn * rows_per_block])

    return y
