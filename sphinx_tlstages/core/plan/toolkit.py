"""Which NVIDIA compiler builds the resources part, found without running it.

The ``resources`` extra pins NVIDIA's compiler wheels to one release: that toolkit wins
over any other on ``PATH`` or under ``CUDA_HOME``, because another release gives other
SASS and pages must be the same on every machine. Another toolkit is used only where the
extra is not installed, or where ``tlstages_toolkit`` names its ``nvcc``; ``none`` turns
the part off. What is found is part of each variant's key (:meth:`VariantSpec.key`).

The search reads the file system only: the pinned ``nvidia-cuda-nvcc`` wheel's ``nvcc``
first, then ``PATH``, then ``CUDA_HOME``. A directive that shows ``resources`` or claims
one of its names gets its CUDA variants' toolkit set (``core/plan/variants.py``,
``with_toolkit``); the toolkit's *origin* (wheel version, or path, size and mtime) is part
of the key, its path is not, so a shared cache serves the pinned release anywhere.
"""

from __future__ import annotations

import importlib.metadata
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

# The wheel whose nvcc the extra installs, and where in site-packages it puts it.
WHEEL = "nvidia-cuda-nvcc"
_WHEEL_BIN = ("nvidia", "cu13", "bin")


@dataclass(frozen=True)
class Toolkit:
    """An ``nvcc`` and where it came from (``nvdisasm`` is looked for beside it)."""

    nvcc: str
    origin: str  # "wheel nvidia-cuda-nvcc 13.5.37", or "nvcc at /usr/local/cuda/bin/nvcc"

    @property
    def payload(self) -> dict[str, str]:
        return {"nvcc": self.nvcc, "origin": self.origin}


def _wheel() -> Toolkit | None:
    try:
        dist = importlib.metadata.distribution(WHEEL)
    except importlib.metadata.PackageNotFoundError:
        return None
    nvcc = Path(str(dist.locate_file(Path(*_WHEEL_BIN, "nvcc"))))
    if not nvcc.is_file():
        return None
    return Toolkit(str(nvcc), f"wheel {WHEEL} {dist.version}")


def _other(nvcc: str | None) -> Toolkit | None:
    if nvcc is None or not Path(nvcc).is_file():
        return None
    # Its version is read by the worker (``nvcc --version``) and shown as provenance;
    # here, where it is and when it was installed say whether cached results still hold.
    stat = Path(nvcc).stat()
    return Toolkit(nvcc, f"nvcc at {nvcc} ({stat.st_size} bytes, mtime {int(stat.st_mtime)})")


def find(setting: str) -> Toolkit | None:
    """The toolkit ``tlstages_toolkit`` selects: ``auto`` (the pinned wheel, else an
    ``nvcc`` on ``PATH``, else under ``CUDA_HOME``), ``none``, or a path to ``nvcc``."""
    if setting == "none":
        return None
    if setting != "auto":
        return _other(setting)
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    return _wheel() or _other(shutil.which("nvcc")) \
        or _other(str(Path(home, "bin", "nvcc")) if home else None)
