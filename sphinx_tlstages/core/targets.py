"""Compilation targets: what ``:target:`` accepts, and each arch's shared-memory limit."""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass

from .errors import OptionError

# Opt-in maximum of dynamic shared memory per block, in bytes (CUDA's figures).
# TileLang lowers past these without complaint, so checking them is ours.
SHARED_MEMORY_LIMITS: dict[str, int] = {
    "sm_80": 166912,
    "sm_86": 101376,
    "sm_87": 166912,
    "sm_89": 101376,
    "sm_90": 232448,
    "sm_90a": 232448,
}

_ARCH = re.compile(r"^sm_\d{2,3}[af]?$")


@dataclass(frozen=True)
class Target:
    """A TVM CUDA target as plain data; ``canonical`` is its stable JSON spelling."""

    canonical: str

    @property
    def as_dict(self) -> dict[str, object]:
        value: dict[str, object] = json.loads(self.canonical)
        return value

    @property
    def arch(self) -> str:
        return str(self.as_dict.get("arch", ""))

    @property
    def label(self) -> str:
        """Short name for captions and tables: the arch, or the kind without one."""
        return self.arch or str(self.as_dict.get("kind", "?"))

    @property
    def shared_memory_limit(self) -> int | None:
        return SHARED_MEMORY_LIMITS.get(self.arch)


def _from_dict(value: dict[str, object], text: str) -> Target:
    kind = value.get("kind")
    if kind != "cuda":
        raise OptionError(f"target {text!r}: only CUDA targets are supported (kind {kind!r})")
    arch = value.get("arch")
    if not isinstance(arch, str) or not _ARCH.match(arch):
        raise OptionError(f"target {text!r}: arch must look like sm_80 or sm_90a, got {arch!r}")
    return Target(json.dumps(value, sort_keys=True, separators=(",", ":")))


def parse_target(text: str) -> Target:
    """Parse ``sm_80``, ``cuda -arch=sm_90a`` or a JSON target dict; never ``auto``."""
    text = text.strip()
    if not text:
        raise OptionError("target is empty")
    if text.lower() == "auto":
        raise OptionError("target 'auto' needs a GPU at build time; name the arch (sm_80, sm_90a)")
    if text.startswith("{"):
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            raise OptionError(f"target is not valid JSON: {exc.msg}") from None
        if not isinstance(value, dict):
            raise OptionError("a JSON target must be an object")
        return _from_dict(value, text)
    if _ARCH.match(text):
        return _from_dict({"kind": "cuda", "arch": text}, text)
    words = shlex.split(text)
    if words and words[0] == "cuda":
        value = {"kind": "cuda"}
        for word in words[1:]:
            match = re.fullmatch(r"-{1,2}([a-z_]+)=(\S+)", word)
            if not match:
                raise OptionError(f"target {text!r}: cannot read {word!r} (expected -key=value)")
            value[match.group(1)] = match.group(2)
        return _from_dict(value, text)
    raise OptionError(
        f"unknown target {text!r}: use an arch (sm_80, sm_90a), 'cuda -arch=sm_90a' or JSON"
    )


def parse_targets(text: str) -> tuple[Target, ...]:
    """One target, or several: ``sm_80 sm_90a`` (arch names) or ``a; b`` for any
    spellings. Each becomes an axis of the directive's matrix of variants."""
    text = text.strip()
    if ";" in text:
        pieces = [piece for piece in (p.strip() for p in text.split(";")) if piece]
    elif not text.startswith("{") and len(text.split()) > 1 \
            and all(_ARCH.match(word) for word in text.replace(",", " ").split()):
        pieces = text.replace(",", " ").split()
    else:
        pieces = [text]
    targets: list[Target] = []
    for piece in pieces:
        target = parse_target(piece)
        if target in targets:
            raise OptionError(f"target {piece!r} is listed twice")
        targets.append(target)
    return tuple(targets)
