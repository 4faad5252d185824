"""A split-K GEMM and the kernel that combines its partial tiles, in one prim_func: two
``T.Kernel`` blocks of different sizes (128 threads, then 64), so TileLang's CUDA holds
two kernels whose threads, shared memory and ``__syncthreads`` differ (the combine reads
its staged tile transposed, so it needs barriers of its own; the pattern of a
split-KV decode and its combine kernel)."""
import tilelang
import tilelang.language as T


@tilelang.jit
def split_then_combine(M, N, K, block_M, block_N, block_K, splits, num_stages):
    part_k = K // splits

    @T.prim_func
    def split_combine(
        A: T.Tensor((M, K), "float16"),
        B: T.Tensor((K, N), "float16"),
        Partial: T.Tensor((splits, M, N), "float32"),
        C: T.Tensor((M, N), "float32"),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), splits,
                      threads=128) as (bx, by, bz):
            A_s = T.alloc_shared((block_M, block_K), "float16")
            B_s = T.alloc_shared((block_K, block_N), "float16")
            acc = T.alloc_fragment((block_M, block_N), "float32")
            T.clear(acc)
            for k in T.Pipelined(T.ceildiv(part_k, block_K), num_stages=num_stages):
                T.copy(A[by * block_M, bz * part_k + k * block_K], A_s)
                T.copy(B[bz * part_k + k * block_K, bx * block_N], B_s)
                T.gemm(A_s, B_s, acc)
            T.copy(acc, Partial[bz, by * block_M, bx * block_N])

        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=64) as (bx, by):
            total = T.alloc_fragment((block_M, block_N), "float32")
            staged = T.alloc_shared((block_M, block_N), "float32")
            T.clear(total)
            for s in T.serial(splits):
                T.copy(Partial[s, by * block_M, bx * block_N], staged)
                for i, j in T.Parallel(block_M, block_N):
                    total[i, j] += staged[j, i]  # another thread's element
            T.copy(total, C[by * block_M, bx * block_N])

    return split_combine
