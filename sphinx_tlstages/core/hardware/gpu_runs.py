"""What a variant's run under compute-sanitizer uses, decided before it runs, pure: whether
this GPU runs its code at all, and the sizes known only at launch.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

_SM = re.compile(r"^sm_(\d+)([af]?)$")
# A finding shown with the sizes of the walk that found it: "... (with seqlen = 129)".
_WITH = re.compile(r"\(with ([^()]*)\)")
_SIZE = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*) = (\d+)\b")


def why_not_here(kind: str, arch: str, gpu_sm: str) -> str | None:
    """Why a GPU of ``gpu_sm`` cannot run code for ``arch`` (None: it can). Code for an
    older architecture runs through its PTX, which the driver compiles for this GPU; code
    for a newer one does not, nor code for another architecture's own features (``a``,
    ``f``: ``sm_90a``'s wgmma runs on sm_90 alone)."""
    if kind != "cuda":
        return f"{arch} is not an NVIDIA target (compute-sanitizer checks NVIDIA GPUs)"
    mine, theirs = _SM.match(gpu_sm), _SM.match(arch)
    if mine is None or theirs is None:
        return f"{arch} is not an architecture this command knows"
    if arch == gpu_sm:
        return None
    if int(theirs.group(1)) > int(mine.group(1)):
        return f"{arch} code does not run on this {gpu_sm} GPU"
    if theirs.group(2):
        return f"{arch} code runs only on that architecture, not on this {gpu_sm} GPU"
    return None


def sizes_named(texts: Iterable[str]) -> dict[str, int]:
    """The sizes a finding names (``with seqlen = 129``): the launch that reaches it."""
    found: dict[str, int] = {}
    for text in texts:
        for said in _WITH.findall(text):
            for name, value in _SIZE.findall(said):
                found.setdefault(name, int(value))
    return found


def launch_sizes(given: Iterable[tuple[str, int]], hazards: dict[str, Any] | None
                 ) -> dict[str, int]:
    """Sizes known only at launch: ``:hardware:``'s, else those the static finding names."""
    texts = [f["text"] for f in (hazards or {}).get("findings", [])]
    return {**sizes_named(texts), **dict(given)}
