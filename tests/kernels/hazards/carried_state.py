@tilelang.jit
def carried_state(steps, DK=64, DV=64, block_S=64, num_stages=1):
    @T.prim_func
    def kernel(S0: T.Tensor((DK, DV), "bfloat16"),
               X: T.Tensor((steps * block_S, DK), "bfloat16"),
               H: T.Tensor((steps, DK, DV), "bfloat16"),
               Y: T.Tensor((steps * block_S, DV), "float32")):
        with T.Kernel(1, threads=128) as bx:
            state_s = T.alloc_shared((DK, DV), "bfloat16")
            x_s = T.alloc_shared((block_S, DK), "bfloat16")
            state = T.alloc_fragment((DK, DV), "float32")
            y = T.alloc_fragment((block_S, DV), "float32")
            T.copy(S0, state_s)
            T.copy(state_s, state)
            for t in T.Pipelined(steps, num_stages=num_stages):
                T.copy(state_s, H[t, 0, 0])
                T.copy(X[t * block_S, 0], x_s)
                T.gemm(x_s, state_s, y, clear_accum=True)
                T.copy(y, Y[t * block_S, 0])
                for i, j in T.Parallel(DK, DV):
                    state[i, j] = state[i, j] * 0.5
                T.copy(state, state_s)

    return kernel
