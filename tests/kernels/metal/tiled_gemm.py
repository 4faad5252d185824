"""C = A @ B on Apple's GPUs: 64x64 tiles of C, K in steps of 32, fp16 in, fp32 sums."""
import argparse

import torch
import tilelang
import tilelang.language as T


@tilelang.jit(out_idx=[-1])
def matmul(M, N, K, block_M=64, block_N=64, block_K=32, num_stages=2, threads=128,
           dtype=T.float16, accum_dtype=T.float32):

    @T.prim_func
    def gemm(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype),
             C: T.Tensor((M, N), accum_dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_tile = T.alloc_shared((block_M, block_K), dtype)
            B_tile = T.alloc_shared((block_K, block_N), dtype)
            C_acc = T.alloc_fragment((block_M, block_N), accum_dtype)
            T.clear(C_acc)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A[by * block_M, k * block_K], A_tile)
                T.copy(B[k * block_K, bx * block_N], B_tile)
                T.gemm(A_tile, B_tile, C_acc)
            T.copy(C_acc, C[by * block_M, bx * block_N])

    return gemm


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=1024)
    args = parser.parse_args(argv)
    kernel = matmul(args.size, args.size, args.size)
    a = torch.randn(args.size, args.size, dtype=torch.float16, device="mps")
    b = torch.randn(args.size, args.size, dtype=torch.float16, device="mps")
    torch.testing.assert_close(kernel(a, b), (a @ b).float(), rtol=1e-2, atol=1e-2)


if __name__ == "__main__":
    main()
