"""A GEMM whose schedule reader fails: IR the reader cannot follow, stood in for by
making the worker's reader raise while this kernel loads (it runs in the worker)."""
import tilelang
import tilelang.language as T
from sphinx_tlstages.worker.ir import schedule


def _unreadable(*args, **kwargs):
    raise RuntimeError("a statement of a kind the reader does not know")


schedule.read = _unreadable


@tilelang.jit
def matmul(M, N, K, block_M=64, block_N=64, block_K=32, num_stages=2):
    @T.prim_func
    def kernel(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"),
               C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_s = T.alloc_shared((block_M, block_K), "float16")
            B_s = T.alloc_shared((block_K, block_N), "float16")
            acc = T.alloc_fragment((block_M, block_N), "float32")
            T.clear(acc)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A[by * block_M, k * block_K], A_s)
                T.copy(B[k * block_K, bx * block_N], B_s)
                T.gemm(A_s, B_s, acc)
            T.copy(acc, C[by * block_M, bx * block_N])

    return kernel
