"""Compilation targets: what ``:target:`` accepts, and what each target allows.

Every spelling the extension accepts (``sm_90a``, ``cuda -arch=sm_90a``, ``gfx942``,
``hip -mcpu=gfx942``, a JSON dict) becomes one canonical TVM target dict, ``{"arch":
"sm_90a", "kind": "cuda"}`` or ``{"kind": "hip", "mcpu": "gfx942"}``: that dict is what
goes into lowering keys and snapshots. The arch is required: TVM fills a bare ``cuda``
with ``sm_50`` and a bare ``hip`` with ``gfx900`` and lowers for those without a word.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass

from ..errors import OptionError

# Maximum shared memory per thread block (the opt-in maximum, which dynamic shared memory
# can use), in bytes, per NVIDIA compute capability. From NVIDIA's CUDA C++ Programming
# Guide, "Technical Specifications per Compute Capability", row "Maximum amount of shared
# memory per thread block" (KB = 1024 bytes there); in the current CUDA Programming Guide
# the same row is in "Compute Capabilities", "Memory Information per Compute Capability":
# https://docs.nvidia.com/cuda/cuda-programming-guide/05-appendices/compute-capabilities.html
#   7.5: 64 KB; 8.0, 8.7: 163 KB; 8.6, 8.9, 12.x: 99 KB; 9.0, 10.x, 11.x: 227 KB.
# (10.1 was renamed 11.0 in CUDA 13; both are listed.) TileLang lowers past these without
# complaint, so checking them is ours.
NVIDIA_SHARED_MEMORY: dict[int, int] = {
    75: 65536,
    80: 166912,
    86: 101376,
    87: 166912,
    89: 101376,
    90: 232448,
    100: 232448,
    101: 232448,
    103: 232448,
    110: 232448,
    120: 101376,
    121: 101376,
}

# Local data share (LDS) one workgroup may use, in bytes, per AMD GPU. From AMD's ROCm
# documentation, "AMD GPU specifications", column "LDS (KiB)":
# https://rocm.docs.amd.com/en/latest/reference/gpu-specs.html
#   gfx942 (CDNA3, MI300 series): 64 KiB; gfx950 (CDNA4, MI350 series): 160 KiB.
AMD_LDS: dict[str, int] = {
    "gfx942": 65536,
    "gfx950": 163840,
}

# What TileLang's CUDA backend parses: sm_, two or three digits, an optional a or f.
_ARCH = re.compile(r"^sm_(\d{2,3})[af]?$")
_MCPU = re.compile(r"^gfx[0-9a-f]{3,4}$")
_KEYS = {"cuda": ("kind", "arch"), "hip": ("kind", "mcpu")}
TENSOR_MEMORY_COLUMNS = 512  # 32-bit columns of tensor memory per SM (sm_100 to sm_110)


def _known_archs() -> str:
    return ", ".join(f"sm_{cc}" for cc in NVIDIA_SHARED_MEMORY)


@dataclass(frozen=True)
class Target:
    """A TVM target as plain data; ``canonical`` is its stable JSON spelling."""

    canonical: str

    @property
    def as_dict(self) -> dict[str, object]:
        value: dict[str, object] = json.loads(self.canonical)
        return value

    @property
    def kind(self) -> str:
        return str(self.as_dict["kind"])

    @property
    def arch(self) -> str:
        """``sm_90a`` or ``gfx942``."""
        value = self.as_dict
        return str(value.get("arch") or value.get("mcpu") or "")

    @property
    def label(self) -> str:
        """Short name for captions, headings and ``:assert:``: the arch."""
        return self.arch

    @property
    def compute_capability(self) -> int | None:
        """``90`` for sm_90a; None for other kinds."""
        found = _ARCH.match(self.arch) if self.kind == "cuda" else None
        return int(found.group(1)) if found else None

    @property
    def language(self) -> str:
        """What the generated code is written in: ``CUDA`` or ``HIP``."""
        return "HIP" if self.kind == "hip" else "CUDA"

    @property
    def source_suffix(self) -> str:
        """The file suffix of the generated code: ``.cu``, or ``.cpp`` for HIP."""
        return ".cpp" if self.kind == "hip" else ".cu"

    @property
    def memory(self) -> str:
        """What the limit is about, in the vendor's words."""
        return "LDS per workgroup" if self.kind == "hip" else "shared memory per block"

    @property
    def shared_memory_limit(self) -> int | None:
        if self.kind == "hip":
            return AMD_LDS.get(self.arch)
        cc = self.compute_capability
        return NVIDIA_SHARED_MEMORY.get(cc) if cc is not None else None

    @property
    def has_tensor_memory(self) -> bool:
        """sm_100 to sm_110: tensor memory and tcgen05."""
        cc = self.compute_capability
        return cc is not None and 100 <= cc <= 110


def instruction_rule(target: Target, instruction: str) -> str | None:
    """Why a ``T.gemm`` could not have become anything faster, when the reason is a plain
    rule of the architecture (the PTX ISA's), not a choice of the compiler's."""
    cc = target.compute_capability
    if cc is None or instruction not in ("mma_sync", "fma"):
        return None
    if target.has_tensor_memory:
        return (f"{target.label}: tcgen05 needs a tensor-memory accumulator "
                "(T.alloc_tmem), and wgmma is Hopper's alone")
    if cc >= 120:
        return f"{target.label}: this architecture has neither wgmma nor tcgen05"
    return None


def _canonical(value: dict[str, object]) -> Target:
    return Target(json.dumps(value, sort_keys=True, separators=(",", ":")))


def _from_dict(value: dict[str, object], text: str) -> Target:
    kind = value.get("kind")
    if kind == "rocm":
        raise OptionError(f"target {text!r}: TileLang lowers AMD GPUs with kind 'hip' "
                          "(gfx942, or {\"kind\": \"hip\", \"mcpu\": \"gfx942\"})")
    if kind not in _KEYS:
        raise OptionError(f"target {text!r}: only CUDA and HIP targets are supported "
                          f"(kind {kind!r})")
    extra = sorted(set(value) - set(_KEYS[str(kind)]))
    if extra:
        raise OptionError(f"target {text!r}: only {' and '.join(_KEYS[str(kind)])} can be "
                          f"given, not {', '.join(extra)}")
    if kind == "cuda":
        arch = value.get("arch")
        if arch is None:
            raise OptionError(f"target {text!r}: name the arch (TVM would lower for sm_50)")
        found = _ARCH.match(arch) if isinstance(arch, str) else None
        if not found:
            raise OptionError(f"target {text!r}: arch must look like sm_80 or sm_90a, "
                              f"got {arch!r}")
        if int(found.group(1)) not in NVIDIA_SHARED_MEMORY:
            raise OptionError(f"target {text!r}: unknown NVIDIA arch {arch}; known: "
                              f"{_known_archs()}")
        return _canonical({"kind": "cuda", "arch": arch})
    mcpu = value.get("mcpu")
    if mcpu is None:
        raise OptionError(f"target {text!r}: name the GPU with mcpu (TVM would lower "
                          "for gfx900)")
    if not isinstance(mcpu, str) or not _MCPU.match(mcpu):
        raise OptionError(f"target {text!r}: mcpu must look like gfx942, got {mcpu!r}")
    if mcpu not in AMD_LDS:
        raise OptionError(f"target {text!r}: unknown AMD GPU {mcpu}; known: "
                          f"{', '.join(AMD_LDS)}")
    return _canonical({"kind": "hip", "mcpu": mcpu})


def _is_name(word: str) -> bool:
    return bool(_ARCH.match(word) or _MCPU.match(word))


def parse_target(text: str) -> Target:
    """Parse ``sm_80``, ``gfx942``, ``cuda -arch=sm_90a``, ``hip -mcpu=gfx942`` or a JSON
    target dict; never ``auto``."""
    text = text.strip()
    if not text:
        raise OptionError("target is empty")
    if text.lower() == "auto":
        raise OptionError("target 'auto' needs a GPU at build time; name the arch (sm_80, "
                          "sm_90a, gfx942)")
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
    if _MCPU.match(text):
        return _from_dict({"kind": "hip", "mcpu": text}, text)
    words = shlex.split(text)
    if words and words[0] in ("cuda", "hip", "rocm"):
        spelled: dict[str, object] = {"kind": words[0]}
        for word in words[1:]:
            match = re.fullmatch(r"-{1,2}([a-z_]+)=(\S+)", word)
            if not match:
                raise OptionError(f"target {text!r}: cannot read {word!r} (expected -key=value)")
            spelled[match.group(1)] = match.group(2)
        return _from_dict(spelled, text)
    raise OptionError(
        f"unknown target {text!r}: use an arch (sm_80, sm_90a, gfx942), "
        "'cuda -arch=sm_90a', 'hip -mcpu=gfx942' or JSON"
    )


def split_targets(text: str, loose: bool = False) -> list[str]:
    """``:target:``'s pieces: ``sm_80 sm_90a gfx942`` (arch names) or ``a; b`` for any
    spellings; else the whole text, one spelling. ``loose``: words that are not all arch
    names are pieces too, unless the text is one spelling of another form (JSON, ``cuda
    -arch=...``), so that a typo among several names costs only itself."""
    text = text.strip()
    if ";" in text:
        return [piece for piece in (p.strip() for p in text.split(";")) if piece]
    words = text.replace(",", " ").split()
    if text.startswith("{") or len(words) < 2 or words[0] in ("cuda", "hip", "rocm"):
        return [text]
    if all(_is_name(w) for w in words) or (loose and not any("=" in w for w in words)):
        return words
    return [text]


def parse_targets(text: str) -> tuple[Target, ...]:
    """One target, or several: ``sm_80 sm_90a gfx942`` (arch names) or ``a; b`` for any
    spellings. Each becomes an axis of the directive's matrix of variants."""
    targets: list[Target] = []
    for piece in split_targets(text):
        target = parse_target(piece)
        if target in targets:
            raise OptionError(f"target {piece!r} is listed twice")
        targets.append(target)
    return tuple(targets)
