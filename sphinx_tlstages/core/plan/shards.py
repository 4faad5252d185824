"""A book's variants split into N shards, for ``tlstages lower-book --shard I/N``.

Every shard of a CI matrix reads the same book and computes the same split on its own,
with no coordination: the split depends only on the variants (their keys and estimated
cost) and N, so the same variant is always in the same shard. It is balanced by cost,
not count: a deterministic longest-processing-time assignment (the costliest group
first, each to the least loaded shard, ties by key and shard number) over an estimate
from the kernel's size, its num_stages, its target and what the lowering records.

A variant that does not record its pass changes can take the result of its recording
twin (``ext/lowering/batch``): the two always share a shard, so the twin's one lowering
serves both, as in a one-machine build.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Mapping

from ..errors import OptionError
from .spec import VariantSpec

_SHARD = re.compile(r"\s*(\d+)\s*/\s*(\d+)\s*")


def parse_shard(text: str) -> tuple[int, int]:
    """``"2/4"`` as ``(2, 4)``: shard 2 of 4, counted from 1 as pytest-split and
    Playwright count."""
    found = _SHARD.fullmatch(text)
    if found is None or not 1 <= int(found.group(1)) <= int(found.group(2)):
        raise OptionError(f"a shard is I/N with 1 <= I <= N (as 2/4), not {text!r}")
    return int(found.group(1)), int(found.group(2))


def estimate(variant: VariantSpec) -> float:
    """Estimated seconds of CPU to lower ``variant``: a guess, whose only use is to weigh
    variants against each other (a 2-CPU machine lowers a 60-line GEMM in about a
    second; a deeper pipeline unrolls more copies, Hopper's TMA and WGMMA passes and
    AMD's code generation cost more, recording pass changes costs about a tenth more,
    NVIDIA's compiler for the resources part about a second)."""
    lines = sum(1 for line in variant.source.splitlines() if line.strip())
    size = 0.5 + lines / 120
    depth = 1.0 + 0.08 * max(0, variant.num_stages - 1)
    target = variant.target
    capability = target.compute_capability or 0
    arch = 1.3 if capability >= 90 else 1.2 if target.kind == "hip" else 1.0
    passes = 1.1 if variant.record_passes else 1.0
    compiler = 1.0 if variant.toolkit is not None and target.kind == "cuda" else 0.0
    return round(size * depth * arch * passes + compiler, 6)


def groups(variants: Mapping[str, VariantSpec], stamp: str) -> dict[str, list[str]]:
    """Keys grouped so that a variant and its recording twin stay together; by the key
    that lowers for the group."""
    found: dict[str, list[str]] = {}
    for key in sorted(variants):
        variant = variants[key]
        twin = key if variant.record_passes else variant.recording().key(stamp)
        found.setdefault(twin if twin in variants else key, []).append(key)
    return found


def split(costs: Mapping[str, float], count: int) -> list[list[str]]:
    """``costs``' keys in ``count`` shards by longest processing time first: each, the
    costliest first (ties by key), to the shard least loaded so far (ties: the lowest
    number). Deterministic; the largest shard costs at most 4/3 of the optimum."""
    shards: list[list[str]] = [[] for _ in range(count)]
    loads = [(0.0, index) for index in range(count)]
    for key in sorted(costs, key=lambda k: (-costs[k], k)):
        load, index = heapq.heappop(loads)
        shards[index].append(key)
        heapq.heappush(loads, (load + costs[key], index))
    return shards


def assign(variants: Mapping[str, VariantSpec], stamp: str, count: int) -> dict[str, int]:
    """Each variant key's shard, counted from 1."""
    grouped = groups(variants, stamp)
    costs = {lead: max(estimate(variants[key]) for key in keys)
             for lead, keys in grouped.items()}
    return {key: index for index, leads in enumerate(split(costs, count), start=1)
            for lead in leads for key in grouped[lead]}


def select(variants: Mapping[str, VariantSpec], stamp: str, shard: tuple[int, int]
           ) -> set[str]:
    """The keys of shard ``shard`` (I, N) of ``variants``."""
    index, count = shard
    return {key for key, at in assign(variants, stamp, count).items() if at == index}
