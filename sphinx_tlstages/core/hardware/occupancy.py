"""How many blocks of a kernel fit on one streaming multiprocessor, and what limits it.

Data in, numbers out: the per-compute-capability limits NVIDIA publishes (CUDA C++
Programming Guide, "Technical Specifications per Compute Capability", and the device
attributes the driver reports) and the allocation rules of ``cuda_occupancy.h``
(``cudaOccMaxActiveBlocksPerMultiprocessor`` and the four ``cudaOccMaxBlocksPerSM*Limit``
functions it takes the minimum of), with partitioned global caching off and the default
shared-memory carveout, which is how a kernel launched without attributes runs.

Blackwell's tensor-memory columns are a fifth limit where a variant allocates any (the
worker passes the ``tmem`` fact's columns). :data:`LIMITS` holds NVIDIA's per-capability
figures: a new compute capability is one line there.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..plan.targets import TENSOR_MEMORY_COLUMNS

WARP = 32
# cuda_occupancy.h, cudaOccRegAllocationGranularity: 256 registers per warp from
# compute capability 3.0 on; cudaOccRegAllocationMaxPerThread: 255;
# cudaOccSubPartitionsPerMultiprocessor: 4 (2 only on 6.0).
REGISTER_GRANULARITY = 256
MAX_REGISTERS_PER_THREAD = 255
SUB_PARTITIONS = 4
# cudaOccSMemAllocationGranularity: 128 bytes from compute capability 7.0 on.
SHARED_GRANULARITY = 128
# What may limit the blocks per SM, in the order a tie names them.
LIMITERS = ("warps", "registers", "shared memory", "blocks", "tensor memory")


@dataclass(frozen=True)
class Limits:
    """One compute capability's limits, as the driver reports them."""

    capability: str  # "8.0"
    threads_per_sm: int  # maxThreadsPerMultiProcessor
    blocks_per_sm: int  # maxBlocksPerMultiProcessor
    shared_per_sm: int  # sharedMemPerMultiprocessor, bytes
    shared_per_block: int  # sharedMemPerBlockOptin, bytes
    reserved_shared_per_block: int = 1024  # reservedSharedMemPerBlock (8.0 and later)
    registers_per_sm: int = 65536  # regsPerMultiprocessor
    registers_per_block: int = 65536  # regsPerBlock
    threads_per_block: int = 1024  # maxThreadsPerBlock


# The Programming Guide's table (CUDA 13), shared memory in KiB as it states it: per SM,
# and the most one block may opt in to. Checked on an H200 (9.0) against the driver:
# 233,472 B per SM, 232,448 B per block, 1,024 B reserved, 32 blocks, 2,048 threads.
LIMITS: dict[str, Limits] = {lim.capability: lim for lim in (
    Limits("8.0", 2048, 32, 164 * 1024, 163 * 1024),
    Limits("8.6", 1536, 16, 100 * 1024, 99 * 1024),
    Limits("8.7", 2048, 16, 164 * 1024, 163 * 1024),
    Limits("8.9", 1536, 24, 100 * 1024, 99 * 1024),
    Limits("9.0", 2048, 32, 228 * 1024, 227 * 1024),
    Limits("10.0", 2048, 32, 228 * 1024, 227 * 1024),
    Limits("10.3", 2048, 32, 228 * 1024, 227 * 1024),
    Limits("12.0", 1536, 32, 100 * 1024, 99 * 1024),
    Limits("12.1", 1536, 32, 100 * 1024, 99 * 1024),
)}

_ARCH = re.compile(r"^sm_(\d+)(\d)[af]?$")


def limits_for(arch: str) -> Limits | None:
    """The limits of ``sm_90a`` (9.0), ``sm_86`` (8.6)...; None for an unknown one."""
    match = _ARCH.match(arch)
    return LIMITS.get(f"{match[1]}.{match[2]}") if match else None


def _round_up(value: int, unit: int) -> int:
    return -(-value // unit) * unit


def tensor_memory_blocks(columns: int) -> int:
    """Blocks that fit in one SM's tensor memory when each allocates ``columns``:
    ``tcgen05.alloc`` takes a power of two of at least 32 columns of the SM's 512."""
    allocated = 32
    while allocated < columns:
        allocated *= 2
    return TENSOR_MEMORY_COLUMNS // allocated if allocated <= TENSOR_MEMORY_COLUMNS else 0


def occupancy(limits: Limits, threads: int, registers: int, static_shared: int,
              dynamic_shared: int, tensor_memory: int = 0) -> dict[str, Any]:
    """Blocks and warps per SM for a block of ``threads`` using ``registers`` per
    thread and that much shared memory (and ``tensor_memory`` columns, Blackwell's, where
    it allocates any: a fifth limit cuda_occupancy.h does not know); ``limiter`` names
    what allows the fewest blocks (ties name each, in cuda_occupancy.h's order of its
    limiting factors, tensor memory last)."""
    warps = -(-threads // WARP)
    # cudaOccMaxBlocksPerSMWarpsLimit
    by_warps = 0 if threads > limits.threads_per_block \
        else (limits.threads_per_sm // WARP) // warps
    # cudaOccMaxBlocksPerSMRegsLimit: registers are allocated per warp, rounded up to the
    # granularity, within each sub-partition; the hardware check rounds the block's
    # warps up to the number of sub-partitions.
    per_warp = _round_up(registers * WARP, REGISTER_GRANULARITY)
    assumed = per_warp * _round_up(warps, SUB_PARTITIONS)
    if assumed > limits.registers_per_block or per_warp * warps > limits.registers_per_block \
            or registers > MAX_REGISTERS_PER_THREAD:
        by_registers = 0
    elif per_warp == 0:
        by_registers = limits.blocks_per_sm
    else:
        per_partition = (limits.registers_per_sm // SUB_PARTITIONS) // per_warp
        by_registers = per_partition * SUB_PARTITIONS // warps
    # cudaOccMaxBlocksPerSMSmemLimit: static shared memory plus the reserved 1 KiB, plus
    # the dynamic part, rounded up to the granularity; with the default carveout the
    # whole of the SM's shared memory is available.
    allocated = _round_up(static_shared + limits.reserved_shared_per_block + dynamic_shared,
                          SHARED_GRANULARITY)
    if allocated > limits.shared_per_block + limits.reserved_shared_per_block:
        by_shared = 0
    elif allocated == 0:  # no shared memory and none reserved: no limit from it
        by_shared = limits.blocks_per_sm
    else:
        by_shared = limits.shared_per_sm // allocated
    each = {"warps": by_warps, "registers": by_registers, "blocks": limits.blocks_per_sm,
            "shared memory": by_shared}
    if tensor_memory:
        each["tensor memory"] = tensor_memory_blocks(tensor_memory)
    blocks = min(each.values())
    max_warps = limits.threads_per_sm // WARP
    return {
        "capability": limits.capability,
        "blocks_per_sm": blocks,
        "warps_per_sm": blocks * warps,
        "occupancy": round(blocks * warps / max_warps, 4),
        "limiter": [name for name in LIMITERS if each.get(name) == blocks],
        "limits": each,
    }
