"""A small book for the sharding tests: three kernels in the styles TileLang users write
(a jitted GEMM, a pipelined row reduction, a swept GEMM with an epilogue), nine
variants over two pages."""

from __future__ import annotations

from .kernels import rst

TILE_GEMM = """\
@tilelang.jit
def tile_gemm(M, N, K, block, num_stages):
    @T.prim_func
    def kernel(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"),
               C: T.Tensor((M, N), "float16")):
        with T.Kernel(T.ceildiv(N, block), T.ceildiv(M, block), threads=128) as (bx, by):
            A_s = T.alloc_shared((block, 32), "float16")
            B_s = T.alloc_shared((32, block), "float16")
            acc = T.alloc_fragment((block, block), "float32")
            T.clear(acc)
            for k in T.Pipelined(T.ceildiv(K, 32), num_stages=num_stages):
                T.copy(A[by * block, k * 32], A_s)
                T.copy(B[k * 32, bx * block], B_s)
                T.gemm(A_s, B_s, acc)
            T.copy(acc, C[by * block, bx * block])

    return kernel
"""

ROW_SUM = """\
@tilelang.jit
def row_sum(rows, width, num_stages):
    @T.prim_func
    def kernel(X: T.Tensor((rows, width), "float32"), Y: T.Tensor((width,), "float32")):
        with T.Kernel(1, threads=128) as _:
            tile = T.alloc_shared((width,), "float32")
            total = T.alloc_fragment((width,), "float32")
            T.clear(total)
            for r in T.Pipelined(rows, num_stages=num_stages):
                T.copy(X[r, :], tile)
                for i in T.Parallel(width):
                    total[i] += tile[i]
            T.copy(total, Y)

    return kernel
"""

SCALED_GEMM = """\
def scaled_gemm(M, N, K, block_K, num_stages, alpha=2.0):
    @T.prim_func
    def kernel(A: T.Tensor((M, K), "float16"), B: T.Tensor((N, K), "float16"),
               C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, 64), T.ceildiv(M, 64), threads=128) as (bx, by):
            A_s = T.alloc_shared((64, block_K), "float16")
            B_s = T.alloc_shared((64, block_K), "float16")
            acc = T.alloc_fragment((64, 64), "float32")
            T.clear(acc)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A[by * 64, k * block_K], A_s)
                T.copy(B[bx * 64, k * block_K], B_s)
                T.gemm(A_s, B_s, acc, transpose_B=True)
            for i, j in T.Parallel(64, 64):
                acc[i, j] = acc[i, j] * alpha
            T.copy(acc, C[by * 64, bx * 64])

    return kernel
"""

BOOK = {
    "index.rst": "Sharded\n=======\n\n.. toctree::\n\n   more\n\n"
                 + rst(TILE_GEMM, "A tiled GEMM", name="tile-gemm", num_stages="1 2 3",
                       params="M=256 N=256 K=256 block=64"),
    "more.rst": "More\n====\n\n"
                + rst(ROW_SUM, "Rows summed", name="row-sum", num_stages="1 2",
                      params="rows=64 width=128")
                + "\n" + rst(SCALED_GEMM, "A scaled GEMM", name="scaled-gemm",
                             num_stages="2 3", params="M=256 N=256 K=256",
                             sweep="block_K=32,64"),
}
VARIANTS = 9
PAGES = ("index", "more")
