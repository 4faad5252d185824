@tilelang.jit
def panel_sum(M, N, chunks, block_M=64, block_N=64):
    @T.prim_func
    def kernel(X: T.Tensor((chunks, M, N), "float16"), Out: T.Tensor((M, N), "float32")):
        with T.ClusterKernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128,
                             cluster_dims=(2, 1, 1)) as (bx, by):
            tiles = T.alloc_shared((chunks, block_M, block_N), "float16")
            ready = T.alloc_cluster_barrier([1])
            acc = T.alloc_fragment((block_M, block_N), "float32")
            T.clear(acc)
            for s in T.serial(chunks):
                T.copy_cluster(X[s, by * block_M, bx * block_N], tiles[s, :, :],
                               cluster_mask=0b11, remote_barrier=ready[0])
                for i, j in T.Parallel(block_M, block_N):
                    acc[i, j] += tiles[s, i, j]
            T.copy(acc, Out[by * block_M, bx * block_N])

    return kernel
