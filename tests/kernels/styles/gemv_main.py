"""A tiled GEMV with a __main__ block that needs a GPU."""
import torch
import tilelang
import tilelang.language as T


@tilelang.jit(out_idx=[-1])
def tiled_gemv(N, K, block_N=64, block_K=128, num_stages=2, threads=128):
    dtype, acc_dtype = T.float16, T.float32

    @T.prim_func
    def gemv(W: T.Tensor((N, K), dtype), x: T.Tensor((K,), dtype), y: T.Tensor((N,), acc_dtype)):
        with T.Kernel(T.ceildiv(N, block_N), threads=threads) as bn:
            w_s = T.alloc_shared((block_N, block_K), dtype)
            x_s = T.alloc_shared((block_K,), dtype)
            part = T.alloc_fragment((block_N, block_K), acc_dtype)
            y_f = T.alloc_fragment((block_N,), acc_dtype)
            T.clear(part)
            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(W[bn * block_N, ko * block_K], w_s)
                T.copy(x[ko * block_K], x_s)
                for i, j in T.Parallel(block_N, block_K):
                    part[i, j] += T.cast(w_s[i, j], acc_dtype) * T.cast(x_s[j], acc_dtype)
            T.reduce_sum(part, y_f, dim=1)
            T.copy(y_f, y[bn * block_N])

    return gemv


if __name__ == "__main__":
    n, k = 4096, 8192
    kernel = tiled_gemv(n, k)
    w = torch.randn(n, k, device="cuda", dtype=torch.float16)
    x = torch.randn(k, device="cuda", dtype=torch.float16)
    torch.testing.assert_close(kernel(w, x), (w.float() @ x.float()), rtol=1e-2, atol=1e-1)
    print("gemv ok")
