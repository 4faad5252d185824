import itertools


def get_configs():
    # The tuning list: two tile widths at three and four stages.
    block_N = [64, 128]
    num_stages = [3, 4]
    return [dict(block_N=n, num_stages=s) for n, s in itertools.product(block_N, num_stages)]


@tilelang.autotune(configs=get_configs(), warmup=3, rep=10)
@tilelang.jit(out_idx=[-1])
def tuned_matmul(M, N, K, block_M=128, block_N=128, block_K=64, num_stages=2, threads=128):
    dtype = "float16"
    accum_dtype = "float32"

    @T.prim_func
    def kernel(
        A: T.Tensor((M, K), dtype),
        B: T.Tensor((N, K), dtype),
        C: T.Tensor((M, N), dtype),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_N, block_K), dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            T.clear(C_local)
            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A[by * block_M, ko * block_K], A_shared)
                T.copy(B[bx * block_N, ko * block_K], B_shared)
                T.gemm(A_shared, B_shared, C_local, transpose_B=True)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return kernel
