"""The GPUs people have, by the target TileLang lowers for them: the fit part's columns.

Plain data, like :mod:`.targets`, whose tables hold each target's limit (shared memory per
block, LDS per workgroup, threadgroup memory per threadgroup) with its source; here only
which GPU is which target, from the vendors' own lists, and which targets TileLang lowers
alike, so that the table needs one lowering for them all.
"""

from __future__ import annotations

from dataclasses import dataclass

from .targets import Target, parse_target

# Which GPU is which target. NVIDIA's compute capabilities from "CUDA GPU Compute
# Capability" (https://developer.nvidia.com/cuda-gpus): A100 8.0; A10 and GeForce RTX
# 3090 8.6; L4 and GeForce RTX 4090 8.9; H100 and H200 9.0 (sm_90a: wgmma and
# setmaxnreg, which TileLang's Hopper lowering uses, need the arch-specific target);
# B200 10.0 (sm_100a, for tcgen05); GeForce RTX 5090 12.0; GB10 (DGX Spark) 12.1. AMD's
# LLVM targets from "AMD GPU specifications", column "LLVM target name"
# (https://rocm.docs.amd.com/en/latest/reference/gpu-specs.html): MI300X and MI325X
# gfx942, MI350X and MI355X gfx950. Apple's M-series GPUs (families Apple7 to Apple10 in
# Apple's "Metal feature set tables") all take TileLang's metal target; an M5 on macOS 26
# gets metal4 (Metal 4's matmul2d), which this table does not lower.


@dataclass(frozen=True)
class GPU:
    """One GPU by the name people know it by, and the target TileLang lowers for it."""

    name: str
    arch: str  # a target label: sm_86, gfx942, metal

    @property
    def target(self) -> Target:
        return parse_target(self.arch)


@dataclass(frozen=True)
class Column:
    """GPUs that share a limit and a lowering: one column of the fit table."""

    gpus: tuple[GPU, ...]

    @property
    def names(self) -> str:
        """``A10, RTX 3090``."""
        return ", ".join(gpu.name for gpu in self.gpus)

    @property
    def archs(self) -> tuple[str, ...]:
        """Its targets' labels, each once: ``("sm_120", "sm_121")``."""
        return tuple(dict.fromkeys(gpu.arch for gpu in self.gpus))

    @property
    def heading(self) -> str:
        """``A10, RTX 3090 (sm_86)``; ``RTX 5090 (sm_120), GB10 (sm_121)``."""
        if len(self.archs) == 1:
            return f"{self.names} ({self.archs[0]})"
        return ", ".join(f"{gpu.name} ({gpu.arch})" for gpu in self.gpus)

    @property
    def target(self) -> Target:
        """The first GPU's target (the others share its limit: checked below)."""
        return self.gpus[0].target

    @property
    def limit(self) -> int:
        found = self.target.shared_memory_limit
        assert found is not None, self.heading
        return found

    @property
    def keys(self) -> tuple[str, ...]:
        """What ``fit[...]`` in an ``:assert:`` names it by: each GPU and target."""
        return (*(gpu.name for gpu in self.gpus), *self.archs)


COLUMNS: tuple[Column, ...] = (
    Column((GPU("A100", "sm_80"),)),
    Column((GPU("A10", "sm_86"), GPU("RTX 3090", "sm_86"))),
    Column((GPU("L4", "sm_89"), GPU("RTX 4090", "sm_89"))),
    Column((GPU("H100", "sm_90a"), GPU("H200", "sm_90a"))),
    Column((GPU("B200", "sm_100a"),)),
    Column((GPU("RTX 5090", "sm_120"), GPU("GB10", "sm_121"))),
    Column((GPU("MI300X", "gfx942"), GPU("MI325X", "gfx942"))),
    Column((GPU("MI350X", "gfx950"), GPU("MI355X", "gfx950"))),
    Column((GPU("Apple M-series", "metal"),)),
)

# Targets TileLang lowers alike: the same code, shared memory and schedule (the IR differs
# only in the target it names), so one lowering answers for all of them, the first
# listed when the page lowers none of them. Every choice TileLang makes by architecture
# (src/cuda/target_utils.cc: Ampere is 80 <= arch < 90, async copies from 80, TMA from
# 90, tensor memory from 100 to 110, SM120 from 120 to 129; the T.gemm implementations
# in tilelang/cuda/op/gemm choose by those) falls on the same side for sm_80, sm_86 and
# sm_89, and for sm_120 and sm_121. tests/test_fit.py lowers them and compares, at both
# ends of the supported TileLang range.
LOWERED_ALIKE: tuple[tuple[str, ...], ...] = (
    ("sm_80", "sm_86", "sm_89"),
    ("sm_90a",),
    ("sm_100a",),
    ("sm_120", "sm_121"),
    ("gfx942",),
    ("gfx950",),
    ("metal",),
)


def family(arch: str) -> tuple[str, ...] | None:
    """The targets lowered alike with ``arch`` (it first among them is not implied)."""
    return next((group for group in LOWERED_ALIKE if arch in group), None)


# A column is one limit: its GPUs' targets agree on it (sm_120 and sm_121: 99 KiB).
assert all(len({gpu.target.shared_memory_limit for gpu in c.gpus}) == 1 for c in COLUMNS)
# Every column's targets are lowered by one family.
assert all(len({family(arch) for arch in c.archs}) == 1 and family(c.archs[0])
           for c in COLUMNS)
