@tilelang.jit
def sparse_scores(M, N, D, block_M=64, block_N=64, num_stages=2):
    @T.prim_func
    def kernel(Q: T.Tensor((M, D), "float16"), K: T.Tensor((N, D), "float16"),
               keep: T.Tensor((M // block_M, N // block_N), "int8"),
               S: T.Tensor((M, block_N), "float16")):
        with T.Kernel(T.ceildiv(M, block_M), threads=128) as bx:
            Q_s = T.alloc_shared((block_M, D), "float16")
            K_s = T.alloc_shared((block_N, D), "float16")
            S_s = T.alloc_shared((block_M, block_N), "float16")
            acc = T.alloc_fragment((block_M, block_N), "float32")
            T.copy(Q[bx * block_M, 0], Q_s)
            T.clear(acc)
            # Scores summed over the key blocks this row block keeps.
            for k in T.Pipelined(N // block_N, num_stages=num_stages):
                if keep[bx, k] != 0:
                    T.copy(K[k * block_N, 0], K_s)
                    T.gemm(Q_s, K_s, acc, transpose_B=True)
            T.copy(acc, S_s)
            T.copy(S_s, S[bx * block_M, 0])

    return kernel
