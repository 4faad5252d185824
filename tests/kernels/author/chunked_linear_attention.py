import tilelang
import tilelang.language as T


@tilelang.jit(out_idx=[3], pass_configs={tilelang.PassConfigKey.TL_DISABLE_WARP_SPECIALIZED: True})
def chunk_forward(B, S, H, D, chunk=64, num_stages=2, threads=128):
    """Causal linear attention, chunk by chunk: o = (q k^T masked) v + q h, h += k^T v."""
    shape = (B, S, H, D)

    @T.prim_func
    def kernel(Q: T.Tensor(shape, "float16"), K: T.Tensor(shape, "float16"),
               V: T.Tensor(shape, "float16"), O: T.Tensor(shape, "float32"),
               Norm: T.Tensor((B, S, H), "float32")):
        with T.Kernel(B * H, threads=threads) as bh:
            b, h_i = bh // H, bh % H
            q = T.alloc_shared((chunk, D), "float16")
            k = T.alloc_shared((chunk, D), "float16")
            v = T.alloc_shared((chunk, D), "float16")
            s = T.alloc_fragment((chunk, chunk), "float32")
            s_masked = T.alloc_shared((chunk, chunk), "float16")
            state = T.alloc_fragment((D, D), "float32")
            state_s = T.alloc_shared((D, D), "float16")
            o = T.alloc_fragment((chunk, D), "float32")
            o_s = T.alloc_shared((chunk, D), "float32")
            norm = T.alloc_fragment((chunk,), "float32")
            T.clear(state)
            for c in T.Pipelined(T.ceildiv(S, chunk), num_stages=num_stages):
                T.copy(Q[b, c * chunk, h_i, 0], q)
                T.copy(K[b, c * chunk, h_i, 0], k)
                T.copy(V[b, c * chunk, h_i, 0], v)
                T.gemm(q, k, s, transpose_B=True, clear_accum=True)
                for i, j in T.Parallel(chunk, chunk):
                    s_masked[i, j] = T.if_then_else(i >= j, s[i, j], 0)
                T.reduce_sum(s_masked, norm, dim=1)
                T.gemm(s_masked, v, o, clear_accum=True)
                T.copy(state, state_s)
                T.gemm(q, state_s, o)
                T.gemm(k, v, state, transpose_A=True)
                T.copy(o, o_s)
                T.copy(o_s, O[b, c * chunk, h_i, 0])
                T.copy(norm, Norm[b, c * chunk, h_i])

    return kernel
