import tilelang
import tilelang.language as T


@tilelang.jit(out_idx=[-1], pass_configs={tilelang.PassConfigKey.TL_ENABLE_FAST_MATH: True})
def sparse_attention(batch, heads, seq, dim, blocks_kept, causal=False, block=64,
                     num_stages=1, threads=128):
    """Attention over the key blocks a table keeps for each query block (-1: none)."""
    scale = dim**-0.5 * 1.44269504
    shape = (batch, heads, seq, dim)

    @T.macro
    def scores(Q_s, K_s, s, qb, kb):
        if causal:
            for i, j in T.Parallel(block, block):
                s[i, j] = T.if_then_else(qb * block + i >= kb * block + j, 0,
                                         -T.infinity("float32"))
        else:
            T.clear(s)
        T.gemm(Q_s, K_s, s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)

    @T.prim_func
    def kernel(Q: T.Tensor(shape, "float16"), K: T.Tensor(shape, "float16"),
               V: T.Tensor(shape, "float16"),
               Kept: T.Tensor((batch, heads, T.ceildiv(seq, block), blocks_kept), "int32"),
               Out: T.Tensor(shape, "float16")):
        with T.Kernel(T.ceildiv(seq, block), heads, batch, threads=threads) as (qb, h, b):
            Q_s = T.alloc_shared((block, dim), "float16")
            K_s = T.alloc_shared((block, dim), "float16")
            V_s = T.alloc_shared((block, dim), "float16")
            s = T.alloc_fragment((block, block), "float32")
            p = T.alloc_fragment((block, block), "float16")
            o = T.alloc_fragment((block, dim), "float32")
            m = T.alloc_fragment((block,), "float32")
            m_prev = T.alloc_fragment((block,), "float32")
            rescale = T.alloc_fragment((block,), "float32")
            row_sum = T.alloc_fragment((block,), "float32")
            total = T.alloc_fragment((block,), "float32")
            T.copy(Q[b, h, qb * block, 0], Q_s)
            T.fill(o, 0)
            T.fill(total, 0)
            T.fill(m, -T.infinity("float32"))
            for n in T.Pipelined(blocks_kept, num_stages=num_stages):
                kb = Kept[b, h, qb, n]
                if kb >= 0:
                    T.copy(K[b, h, kb * block, 0], K_s)
                    scores(Q_s, K_s, s, qb, kb)
                    T.copy(m, m_prev)
                    T.reduce_max(s, m, dim=1, clear=False)
                    for i in T.Parallel(block):
                        rescale[i] = T.exp2(m_prev[i] * scale - m[i] * scale)
                    for i, j in T.Parallel(block, block):
                        s[i, j] = T.exp2(s[i, j] * scale - m[i] * scale)
                    T.reduce_sum(s, row_sum, dim=1)
                    for i in T.Parallel(block):
                        total[i] = total[i] * rescale[i] + row_sum[i]
                    T.copy(s, p)
                    for i, j in T.Parallel(block, dim):
                        o[i, j] *= rescale[i]
                    T.copy(V[b, h, kb * block, 0], V_s)
                    T.gemm(p, V_s, o, policy=T.GemmWarpPolicy.FullRow)
            for i, j in T.Parallel(block, dim):
                o[i, j] /= total[i]
            T.copy(o, Out[b, h, qb * block, 0])

    return kernel
