import tilelang
import tilelang.language as T


@tilelang.jit(out_idx=[-1])
def scaled_gemm(M, N, K, block_M=64, block_N=128, num_stages=2, group=128):
    block_K = group  # one scale per 128 columns of K

    @T.prim_func
    def kernel(A: T.Tensor((M, K), "float8_e4m3"), B: T.Tensor((N, K), "float8_e4m3"),
               scale_a: T.Tensor((M, K // group), "float32"),
               scale_b: T.Tensor((N // group, K // group), "float32"),
               C: T.Tensor((M, N), "bfloat16")):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_s = T.alloc_shared((block_M, block_K), "float8_e4m3")
            B_s = T.alloc_shared((block_N, block_K), "float8_e4m3")
            partial = T.alloc_fragment((block_M, block_N), "float32")
            total = T.alloc_fragment((block_M, block_N), "float32")
            T.clear(total)
            for k in T.Pipelined(K // block_K, num_stages=num_stages):
                T.copy(A[by * block_M, k * block_K], A_s)
                T.copy(B[bx * block_N, k * block_K], B_s)
                b_scale = scale_b[bx * block_N // group, k]
                T.gemm(A_s, B_s, partial, transpose_B=True, clear_accum=True)
                for i, j in T.Parallel(block_M, block_N):
                    total[i, j] += partial[i, j] * scale_a[by * block_M + i, k] * b_scale
            T.copy(total, C[by * block_M, bx * block_N])

    return kernel
