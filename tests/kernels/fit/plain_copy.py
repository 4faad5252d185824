"""A copy through shared memory with no tuning list at all (read, not lowered)."""
import tilelang
import tilelang.language as T


@tilelang.jit
def staged_copy(M, N, block_M=64, num_stages=2):
    @T.prim_func
    def kernel(A: T.Tensor((M, N), "float16"), B: T.Tensor((M, N), "float16")):
        with T.Kernel(T.ceildiv(M, block_M), threads=128) as bx:
            A_shared = T.alloc_shared((block_M, N), "float16")
            for ko in T.Pipelined(1, num_stages=num_stages):
                T.copy(A[bx * block_M, 0], A_shared)
                T.copy(A_shared, B[bx * block_M, 0])

    return kernel


if __name__ == "__main__":
    kernel = staged_copy(1024, 1024, num_stages=3)
