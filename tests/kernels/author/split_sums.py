import tilelang
import tilelang.language as T


@tilelang.jit(out_idx=[-1])
def combine_splits(rows, dim, splits=4, block=64, num_stages=2):
    """Add up the partial results of a split-K pass, one split per iteration."""

    @T.prim_func
    def kernel(Partial: T.Tensor((splits, rows, dim), "float32"),
               Out: T.Tensor((rows, dim), "float16")):
        with T.Kernel(T.ceildiv(rows, block), threads=128) as bx:
            part = T.alloc_fragment((block, dim), "float32")
            total = T.alloc_fragment((block, dim), "float32")
            T.clear(total)
            for s in T.Pipelined(splits, num_stages=num_stages):
                T.copy(Partial[s, bx * block, 0], part)
                for i, j in T.Parallel(block, dim):
                    total[i, j] += part[i, j]
            T.copy(total, Out[bx * block, 0])

    return kernel
