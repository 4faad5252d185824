"""The resources part against what a GPU's driver reports: the comparison, pure.

``verification/resources_on_gpu`` compiles a book's variants where the book builds,
keeps each cubin and the figures its page states, then loads the cubins on a GPU and
asks the CUDA driver for the same figures (``cuFuncGetAttribute``,
``cuOccupancyMaxActiveBlocksPerMultiprocessor``, ``cuDeviceGetAttribute``). Everything
that decides whether the two agree is here, so that it is tested on recorded data on
machines without a GPU.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from .occupancy import Limits, limits_for, occupancy

# What the page states -> the driver's name for the same figure. ptxas's stack frame is
# the kernel's local memory per thread (spill slots live in it): LOCAL_SIZE_BYTES.
FUNCTION_FIGURES = {
    "registers": "NUM_REGS",
    "stack": "LOCAL_SIZE_BYTES",
    "static_shared": "SHARED_SIZE_BYTES",
    "blocks_per_sm": "occupancy_blocks_per_sm",
}

# Limits field -> the device attribute that reports it (CUdevice_attribute names).
DEVICE_FIGURES = {
    "threads_per_sm": "MAX_THREADS_PER_MULTIPROCESSOR",
    "blocks_per_sm": "MAX_BLOCKS_PER_MULTIPROCESSOR",
    "shared_per_sm": "MAX_SHARED_MEMORY_PER_MULTIPROCESSOR",
    "shared_per_block": "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN",
    "reserved_shared_per_block": "RESERVED_SHARED_MEMORY_PER_BLOCK",
    "registers_per_sm": "MAX_REGISTERS_PER_MULTIPROCESSOR",
    "registers_per_block": "MAX_REGISTERS_PER_BLOCK",
    "threads_per_block": "MAX_THREADS_PER_BLOCK",
}


def stated(resources: dict[str, Any]) -> dict[str, int]:
    """The figures of a variant's ``resources`` fact the driver can confirm."""
    found = {name: int(resources[name]) for name in ("registers", "stack", "static_shared")}
    found["blocks_per_sm"] = int(resources["occupancy"]["blocks_per_sm"])
    return found


def compare_function(said: dict[str, int], driver: dict[str, int]) -> list[str]:
    """One sentence per figure where the page and the driver differ (empty: they agree)."""
    wrong = []
    for name, attribute in FUNCTION_FIGURES.items():
        if said.get(name) != driver.get(attribute):
            wrong.append(f"{name}: the page states {said.get(name)}, the driver reports "
                         f"{attribute} = {driver.get(attribute)}")
    return wrong


def compare_device(capability: str, driver: dict[str, int]) -> list[str]:
    """Where :data:`.occupancy.LIMITS` for ``capability`` differ from the device's own
    attributes; a capability the table lacks is one sentence."""
    limits = limits_for("sm_" + capability.replace(".", ""))
    if limits is None:
        return [f"compute capability {capability} is not in the occupancy table's limits"]
    return [f"{name}: LIMITS[{capability!r}] says {getattr(limits, name)}, the device "
            f"reports {attribute} = {driver.get(attribute)}"
            for name, attribute in DEVICE_FIGURES.items()
            if getattr(limits, name) != driver.get(attribute)]


def device_limits(capability: str, driver: dict[str, int]) -> Limits:
    """The device's limits as :class:`.occupancy.Limits`, from its attributes."""
    values = {name: driver[attribute] for name, attribute in DEVICE_FIGURES.items()}
    assert {f.name for f in fields(Limits)} == {"capability", *values}
    return Limits(capability, **values)


def sweep_points(shared_per_block: int, static_shared: int, threads: int,
                 step: int = 4096) -> tuple[list[int], list[int]]:
    """Where to ask the occupancy of a kernel: block sizes from one warp up to its own
    ``threads`` in warps, and dynamic shared memory from 0 up to the most one block may
    have, in ``step`` bytes, and that most itself."""
    most = shared_per_block - static_shared
    sizes = sorted({*range(0, most + 1, step), most}) if most >= 0 else []
    return list(range(32, threads + 1, 32)), sizes


def compare_sweep(limits: Limits, registers: int, static_shared: int,
                  sweep: dict[str, Any]) -> list[str]:
    """Blocks per SM by :func:`.occupancy.occupancy` against the driver's, at each point
    of ``sweep`` (``{"dynamic_shared": [sizes], "blocks": {threads: [blocks at each
    size]}}``, as the check records it)."""
    wrong = []
    for threads, row in sorted(sweep["blocks"].items(), key=lambda item: int(item[0])):
        for dynamic, blocks in zip(sweep["dynamic_shared"], row, strict=True):
            mine = occupancy(limits, int(threads), registers, static_shared,
                             dynamic)["blocks_per_sm"]
            if mine != blocks:
                wrong.append(f"{threads} threads, {registers} registers, {static_shared} + "
                             f"{dynamic} B shared: occupancy() says {mine} blocks, the "
                             f"driver {blocks}")
    return wrong
