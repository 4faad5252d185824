"""分块矩阵乘法示例：流水线 GEMM，附带计时与正确性检查。"""
import time

import torch
import tilelang
import tilelang.language as T


# --- kernel ---
@tilelang.jit(out_idx=[-1])
def matmul(M, N, K, block_M=64, block_N=64, block_K=32, num_stages=2, threads=128):
    dtype, accum_dtype = T.float16, T.float32

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype),
             C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            # 共享内存中的 A、B 分块
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            T.clear(C_local)
            # 软件流水线：num_stages 级缓冲
            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A[by * block_M, ko * block_K], A_shared)
                T.copy(B[ko * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)  # 张量核心乘加
            T.copy(C_local, C[by * block_M, bx * block_N])

    return main
# --- end kernel ---


def main():
    M = N = K = 4096
    a = torch.randn(M, K, device="cuda", dtype=torch.float16)
    b = torch.randn(K, N, device="cuda", dtype=torch.float16)
    start = time.perf_counter()
    kernel = matmul(M, N, K)
    print(f"编译耗时 {time.perf_counter() - start:.2f} 秒")
    c = kernel(a, b)
    torch.testing.assert_close(c, (a @ b), rtol=1e-2, atol=1e-2)
    profiler = kernel.get_profiler()
    latency = profiler.do_bench()
    print(f"延迟: {latency:.3f} ms, {2 * M * N * K / latency * 1e-9:.1f} TFLOPS")


if __name__ == "__main__":
    main()
