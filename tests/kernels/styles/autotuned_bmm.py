"""@autotune over @tilelang.jit, dtype objects as parameters, tuning configs."""
import argparse
import itertools

import torch
import tilelang
import tilelang.language as T
from tilelang.autotuner import autotune


def bmm_configs():
    grid = itertools.product([64, 128], [64, 128], [32, 64], [1, 2, 3], [128, 256])
    return [dict(block_M=m, block_N=n, block_K=k, num_stages=s, threads=t) for m, n, k, s, t in grid]


@autotune(configs=bmm_configs(), warmup=5, rep=20)
@tilelang.jit(out_idx=[-1], pass_configs={tilelang.PassConfigKey.TL_ENABLE_FAST_MATH: True})
def batched_matmul(batch, M, N, K, block_M=128, block_N=128, block_K=32, num_stages=2, threads=128,
                   in_dtype=T.float16, acc_dtype=T.float32):
    @T.prim_func
    def bmm(A: T.Tensor((batch, M, K), in_dtype), B: T.Tensor((batch, K, N), in_dtype),
            C: T.Tensor((batch, M, N), in_dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), batch, threads=threads) as (bx, by, bz):
            a_s = T.alloc_shared((block_M, block_K), in_dtype)
            b_s = T.alloc_shared((block_K, block_N), in_dtype)
            acc = T.alloc_fragment((block_M, block_N), acc_dtype)
            T.clear(acc)
            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A[bz, by * block_M, ko * block_K], a_s)
                T.copy(B[bz, ko * block_K, bx * block_N], b_s)
                T.gemm(a_s, b_s, acc)
            T.copy(acc, C[bz, by * block_M, bx * block_N])

    return bmm


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--size", type=int, default=1024)
    args = parser.parse_args(argv)
    kernel = batched_matmul(args.batch, args.size, args.size, args.size)
    a = torch.randn(args.batch, args.size, args.size, device="cuda", dtype=torch.float16)
    b = torch.randn(args.batch, args.size, args.size, device="cuda", dtype=torch.float16)
    torch.testing.assert_close(kernel(a, b), torch.bmm(a, b), rtol=1e-2, atol=1e-2)


if __name__ == "__main__":
    main()
