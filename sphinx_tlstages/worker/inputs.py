"""A kernel's inputs on the GPU: seeded, the same on every run (``tlstages bench`` and
``tlstages hardware``). torch is imported only when they are made."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def make_inputs(tensors: Sequence[dict[str, Any]], seed: int, device: str) -> list[Any]:
    """Seeded inputs from the kernel's own parameters (name, shape, dtype), made on the
    CPU and copied over, so that no kernel runs on the GPU but the one checked. Integers
    are 0 to 7: valid as small indices (a gather's rows, a block table)."""
    import torch

    generator = torch.Generator().manual_seed(seed)
    made = []
    for tensor in tensors:
        dtype = getattr(torch, tensor["dtype"])
        if dtype.is_floating_point:
            value = torch.randn(tensor["shape"], generator=generator).to(dtype)
        else:
            value = torch.randint(0, 8, tensor["shape"], generator=generator).to(dtype)
        made.append(value.to(device))
    return made
