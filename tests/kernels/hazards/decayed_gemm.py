@tilelang.jit
def decayed_gemm(M, N, K, block_M=64, block_N=64, block_K=64, num_stages=2):
    @T.prim_func
    def kernel(A: T.Tensor((M, K), "bfloat16"), B: T.Tensor((K, N), "bfloat16"),
               decay: T.Tensor((K,), "float32"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            a = T.alloc_shared((block_M, block_K), "bfloat16")
            b = T.alloc_shared((block_K, block_N), "bfloat16")
            g = T.alloc_shared((block_K, block_N), "float32")
            g_frag = T.alloc_fragment((block_K, block_N), "float32")
            acc = T.alloc_fragment((block_M, block_N), "float32")
            T.clear(acc)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A[by * block_M, k * block_K], a)
                for i, j in T.Parallel(block_K, block_N):
                    g[i, j] = decay[k * block_K + i]
                T.copy(B[k * block_K, bx * block_N], b)
                T.copy(g, g_frag)
                T.gemm(a, b, acc)
                for i, j in T.Parallel(block_M, block_N):
                    acc[i, j] *= g_frag[i % block_K, j]
            T.copy(acc, C[by * block_M, bx * block_N])

    return kernel
