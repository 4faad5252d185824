# Flash-attention forward, one (batch, head, block of queries) per thread block: the
# K and V tiles stream through shared memory while an online softmax keeps a running
# row maximum and denominator, so the full score matrix never exists.
@tilelang.jit(out_idx=[3])
def attention(batch, heads, seq_len, dim, block_M, block_N, num_stages, threads):
    scale = 1.44269504 / dim**0.5  # log2(e) / sqrt(dim): the softmax uses exp2
    dtype = "float16"
    accum = "float"

    @T.prim_func
    def forward(
        Q: T.Tensor((batch, seq_len, heads, dim), dtype),
        K: T.Tensor((batch, seq_len, heads, dim), dtype),
        V: T.Tensor((batch, seq_len, heads, dim), dtype),
        O: T.Tensor((batch, seq_len, heads, dim), dtype),
    ):
        with T.Kernel(T.ceildiv(seq_len, block_M), heads, batch, threads=threads) as (bx, by, bz):
            Q_shared = T.alloc_shared([block_M, dim], dtype)
            K_shared = T.alloc_shared([block_N, dim], dtype)
            V_shared = T.alloc_shared([block_N, dim], dtype)
            scores = T.alloc_fragment([block_M, block_N], accum)
            probs = T.alloc_fragment([block_M, block_N], dtype)
            acc = T.alloc_fragment([block_M, dim], accum)
            row_max = T.alloc_fragment([block_M], accum)
            prev_max = T.alloc_fragment([block_M], accum)
            rescale = T.alloc_fragment([block_M], accum)
            row_sum = T.alloc_fragment([block_M], accum)
            denom = T.alloc_fragment([block_M], accum)

            T.copy(Q[bz, bx * block_M:(bx + 1) * block_M, by, :], Q_shared)
            T.fill(acc, 0)
            T.fill(denom, 0)
            T.fill(row_max, -T.infinity(accum))
            for k in T.Pipelined(T.ceildiv(seq_len, block_N), num_stages=num_stages):
                T.copy(K[bz, k * block_N:(k + 1) * block_N, by, :], K_shared)
                T.clear(scores)
                T.gemm(Q_shared, K_shared, scores, transpose_B=True,
                       policy=T.GemmWarpPolicy.FullRow)
                T.copy(row_max, prev_max)
                T.reduce_max(scores, row_max, dim=1, clear=False)
                for i in T.Parallel(block_M):
                    rescale[i] = T.exp2(prev_max[i] * scale - row_max[i] * scale)
                for i, j in T.Parallel(block_M, block_N):
                    scores[i, j] = T.exp2(scores[i, j] * scale - row_max[i] * scale)
                T.reduce_sum(scores, row_sum, dim=1)
                for i in T.Parallel(block_M):
                    denom[i] = denom[i] * rescale[i] + row_sum[i]
                T.copy(scores, probs)
                for i, j in T.Parallel(block_M, dim):
                    acc[i, j] *= rescale[i]
                T.copy(V[bz, k * block_N:(k + 1) * block_N, by, :], V_shared)
                T.gemm(probs, V_shared, acc, policy=T.GemmWarpPolicy.FullRow)
            for i, j in T.Parallel(block_M, dim):
                acc[i, j] /= denom[i]
            T.copy(acc, O[bz, bx * block_M:(bx + 1) * block_M, by, :])

    return forward
