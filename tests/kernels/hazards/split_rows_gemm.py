@tilelang.jit
def split_rows_gemm(M, N, K, block_N=128, block_K=64):
    half = 64  # each math warp group owns half of the block's 128 rows

    @T.prim_func
    def kernel(A: T.Tensor((M, K), "float16"), B: T.Tensor((N, K), "float16"),
               C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, 2 * half), threads=384) as (bx, by):
            b_tile = T.alloc_shared((block_N, block_K), "float16")
            a_top = T.alloc_shared((half, block_K), "float16")
            a_bottom = T.alloc_shared((half, block_K), "float16")
            acc_top = T.alloc_fragment((half, block_N), "float32")
            acc_bottom = T.alloc_fragment((half, block_N), "float32")
            b_full = T.alloc_barrier(arrive_count=128)
            b_free = T.alloc_barrier(arrive_count=256)  # both math groups release B
            top_full = T.alloc_barrier(arrive_count=128)
            bottom_full = T.alloc_barrier(arrive_count=128)
            tx = T.get_thread_binding()
            if tx < 128:  # the loader: B's tile, shared by both math groups
                for k in T.serial(T.ceildiv(K, block_K)):
                    T.barrier_wait(b_free, (k + 1) % 2)
                    T.tma_copy(B[bx * block_N:(bx + 1) * block_N, k * block_K:(k + 1) * block_K],
                               b_tile, barrier=b_full)
                    T.barrier_arrive(b_full)
            elif tx < 256:  # the top rows: their own A tile, B's shared one
                T.clear(acc_top)
                for k in T.serial(T.ceildiv(K, block_K)):
                    T.tma_copy(A[by * 2 * half:by * 2 * half + half, k * block_K:(k + 1) * block_K],
                               a_top, barrier=top_full)
                    T.barrier_arrive(top_full)
                    T.barrier_wait(top_full, k % 2)
                    T.barrier_wait(b_full, k % 2)
                    T.wgmma_gemm(a_top, b_tile, acc_top, transpose_B=True)
                    T.wait_wgmma(0)
                    T.barrier_arrive(b_free)
                T.copy(acc_top, C[by * 2 * half, bx * block_N])
            else:  # the bottom rows
                T.clear(acc_bottom)
                for k in T.serial(T.ceildiv(K, block_K)):
                    T.tma_copy(A[by * 2 * half + half:(by + 1) * 2 * half, k * block_K:(k + 1) * block_K],
                               a_bottom, barrier=bottom_full)
                    T.barrier_arrive(bottom_full)
                    T.barrier_wait(bottom_full, k % 2)
                    T.barrier_wait(b_full, k % 2)
                    T.wgmma_gemm(a_bottom, b_tile, acc_bottom, transpose_B=True)
                    T.wait_wgmma(0)
                    T.barrier_arrive(b_free)
                T.copy(acc_bottom, C[by * 2 * half + half, bx * block_N])

    return kernel
