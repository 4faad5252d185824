import tilelang
import tilelang.language as T


@tilelang.jit
def attn_bwd_piece(batch, seq, heads, dim, block, num_stages, threads=128):
    dtype = "float16"

    @T.prim_func
    def kernel(Q: T.Tensor((batch, seq, heads, dim), dtype),
               K: T.Tensor((batch, seq, heads, dim), dtype),
               dO: T.Tensor((batch, seq, heads, dim), dtype),
               dK: T.Tensor((batch, seq, heads, dim), "float32")):
        with T.Kernel(T.ceildiv(seq, block), heads, batch, threads=threads) as (bx, by, bz):
            k_s = T.alloc_shared((block, dim), dtype)
            q_s = T.alloc_shared((block, dim), dtype)
            s_do = T.alloc_shared((block, dim), dtype)
            acc = T.alloc_fragment((block, block), "float32")
            acc_h = T.alloc_shared((block, block), dtype)
            dk = T.alloc_fragment((block, dim), "float32")
            T.copy(K[bz, bx * block, by, 0], k_s)
            T.clear(dk)
            for i_k in T.Pipelined(T.ceildiv(seq, block), num_stages=num_stages):
                T.copy(Q[bz, i_k * block, by, 0], q_s)
                T.copy(dO[bz, i_k * block, by, 0], s_do)
                T.gemm(k_s, q_s, acc, transpose_B=True, clear_accum=True)
                if by // 4 == by % 4:
                    for i, j in T.Parallel(block, block):
                        acc[i, j] = acc[i, j] * 0.5
                T.copy(acc, acc_h)
                T.gemm(acc_h, s_do, dk)
            T.copy(dk, dK[bz, bx * block, by, 0])

    return kernel
