"""The ways a kernel file lists the depths it tries, one factory each (read, not lowered)."""
import itertools

import tilelang
import tilelang.language as T
from tilelang.autotuner import autotune

STAGES = (1, 2)


def grid_configs():
    grid = itertools.product([64, 128], [0, 1, 2, 3], [128, 256])
    return [dict(block_M=m, num_stages=s, threads=t) for m, s, t in grid]


def positional_configs():
    block_M = [64, 128]
    num_stages = [2, 3]
    configs = list(itertools.product(block_M, num_stages))
    return [{"block_M": c[0], "num_stages": c[1]} for c in configs]


def iter_params_configs():
    iter_params = dict(block_M=[64, 128], num_stages=[3, 4, 7])
    return [dict(zip(iter_params, values)) for values in itertools.product(*iter_params.values())]


@autotune(configs=grid_configs(), warmup=1, rep=1)
@tilelang.jit
def from_a_grid(M, block_M=64, num_stages=2, threads=128):
    pass


@tilelang.autotune(configs=positional_configs)
@tilelang.jit
def by_position(M, block_M=64, num_stages=2):
    pass


@tilelang.autotune(configs=iter_params_configs())
@tilelang.jit
def from_iter_params(M, block_M=64, num_stages=2):
    pass


@tilelang.autotune(configs=[{"num_stages": 1, "block_M": 64}, {"num_stages": 2, "block_M": 64}])
@tilelang.jit
def from_a_literal(M, block_M=64, num_stages=2):
    pass


@tilelang.autotune(configs=lambda: [{"stages": s} for s in range(2, 5)])
@tilelang.jit
def under_another_name(M, stages=2):
    pass


@tilelang.autotune(configs=[{"block_M": 64}, {"block_M": 128}])
@tilelang.jit
def tiles_only(M, block_M=64, num_stages=2):
    pass


def main():
    for num_stages in STAGES:
        tiles_only(1024, num_stages=num_stages)
