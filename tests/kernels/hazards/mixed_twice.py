@tilelang.jit
def mixed_twice(rows, p_cols, q_cols, block=64, num_stages=1):
    @T.prim_func
    def kernel(Mix: T.Tensor((rows, rows), "bfloat16"), P: T.Tensor((rows, p_cols), "bfloat16"),
               Q: T.Tensor((rows, q_cols), "bfloat16"),
               P_out: T.Tensor((rows, p_cols), "float32"),
               Q_out: T.Tensor((rows, q_cols), "float32")):
        with T.Kernel(1, threads=128) as bx:
            mix = T.alloc_shared((rows, rows), "bfloat16")
            p = T.alloc_shared((rows, block), "bfloat16")
            q = T.alloc_shared((rows, block), "bfloat16")
            acc = T.alloc_fragment((rows, block), "float32")
            T.copy(Mix, mix)
            for j in T.Pipelined(p_cols // block, num_stages=num_stages):
                T.copy(P[0, j * block], p)
                T.gemm(mix, p, acc, clear_accum=True)
                T.copy(acc, P_out[0, j * block])
            for j in T.Pipelined(q_cols // block, num_stages=num_stages):
                T.copy(Q[0, j * block], q)
                T.gemm(mix, q, acc, clear_accum=True)
                T.copy(acc, Q_out[0, j * block])

    return kernel
