@tilelang.jit
def gathered_gemm(M, N, K, rows, block_M=64, block_N=64, block_K=64, num_stages=2):
    @T.prim_func
    def kernel(A: T.Tensor((rows, K), "float16"), index: T.Tensor((M,), "int32"),
               B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            a = T.alloc_shared((block_M, block_K), "float16")
            b = T.alloc_shared((block_K, block_N), "float16")
            acc = T.alloc_fragment((block_M, block_N), "float32")
            T.clear(acc)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                for i, j in T.Parallel(block_M, block_K):
                    a[i, j] = A[index[by * block_M + i], k * block_K + j]
                T.copy(B[k * block_K, bx * block_N], b)
                T.gemm(a, b, acc)
            T.copy(acc, C[by * block_M, bx * block_N])

    return kernel
