"""Compilation targets: what ``:target:`` accepts, and what each target allows.

Every spelling the extension accepts (``sm_90a``, ``cuda -arch=sm_90a``, ``gfx942``,
``hip -mcpu=gfx942``, ``metal``, a JSON dict) becomes one canonical TVM target dict,
``{"arch": "sm_90a", "kind": "cuda"}``, ``{"kind": "hip", "mcpu": "gfx942"}`` or
``{"kind": "metal"}``: that dict is what goes into lowering keys and snapshots. The arch
is required: TVM fills a bare ``cuda`` with ``sm_50`` and a bare ``hip`` with ``gfx900``
and lowers for those without a word. Apple's GPUs have no arch in TVM's target: ``metal``
is the target TileLang lowers for everywhere, ``metal4`` the same with the ``metal4`` key
TileLang adds on an Apple M5 or later (macOS 26), which lets a gemm become Metal 4's
cooperative-tensor matmul.

Targets TileLang has but this extension does not lower for are refused with what TileLang
does there (:data:`NOT_LOWERED`).
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
# The same sizes are the LDS of AMD's ISA reference guides, "AMD Instinct MI300 (CDNA3)
# Instruction Set Architecture" and "AMD Instinct CDNA4 Instruction Set Architecture"
# (https://www.amd.com/content/dam/amd/en/documents/instinct-tech-docs/instruction-set-
# architectures/amd-instinct-cdna4-instruction-set-architecture.pdf), chapter "Data Share
# Operations". The fit part's columns (core/plan/gpus.py) read these tables; the GPUs of
# each target are listed there.
AMD_LDS: dict[str, int] = {
    "gfx942": 65536,
    "gfx950": 163840,
}

# Threadgroup memory one threadgroup may use on Apple's GPUs, in bytes (the M-series of the
# fit part's columns). From Apple's "Metal feature set tables", row "Maximum total
# threadgroup memory allocation":
# https://developer.apple.com/metal/Metal-Feature-Set-Tables.pdf
#   32 KB in every Apple family from Apple4 (A11) on (M1 to M5 among them) and in Mac2;
#   16 KB only in Apple1 to Apple3 (A7 to A10), whose GPUs TileLang does not target.
APPLE_THREADGROUP_MEMORY = 32768

# TVM's target keys for Apple's GPUs: TileLang's own detection (tilelang/metal/target.py)
# adds "metal4" on an Apple M5 or later with macOS 26 and its SDK, and only then may a
# gemm become Metal 4's cooperative-tensor matmul. A build on any machine names it.
_METAL4_KEYS = ["metal", "gpu", "metal4"]
_METAL_NAMES = {"metal": None, "metal4": _METAL4_KEYS}

# Targets TileLang has, which this extension does not lower for: what TileLang does there
# (measured with 0.1.14 and 0.1.15), said at the directive's :target: line in place of a
# traceback or a bare "unknown target".
NOT_LOWERED: dict[str, str] = {
    "webgpu": "TileLang runs the same pipeline passes for WebGPU as for CUDA, but it has "
              "no T.gemm implementation there (lowering a gemm fails with 'tl.gemm "
              "requires a target-specific implementation'), so this extension does not "
              "lower for WebGPU; for Apple's GPUs use metal",
    "c": "TileLang's CPU target (c, llvm) runs no pipeline pass (neither "
         "PipelinePlanning nor InjectSoftwarePipeline): num_stages changes nothing there, "
         "and a T.gemm into a fragment does not lower for it, so this extension does not "
         "lower for the CPU",
}
NOT_LOWERED["llvm"] = NOT_LOWERED["cpu"] = NOT_LOWERED["c"]
# Measured with TileLang 0.1.15 (0.1.14 has no Ascend backend) and PyPI's tilelang-ascend
# 0.1.4 (one wheel: CPython 3.11 on aarch64 Linux).
NOT_LOWERED["ascend"] = NOT_LOWERED["asc"] = (
    "TileLang 0.1.15's Ascend backend takes kernels written with tilelang.ascend.language "
    "and buffers them with scheduling passes of its own, not PipelinePlanning and "
    "InjectSoftwarePipeline (a CUDA-style GEMM does not lower for it), and the "
    "tilelang-ascend package on PyPI is an aarch64 wheel that needs torch_npu, so this "
    "extension does not lower for Ascend NPUs")

# What TileLang's CUDA backend parses: sm_, two or three digits, an optional a or f.
_ARCH = re.compile(r"^sm_(\d{2,3})[af]?$")
_MCPU = re.compile(r"^gfx[0-9a-f]{3,4}$")
_KEYS = {"cuda": ("kind", "arch"), "hip": ("kind", "mcpu"), "metal": ("kind", "keys")}
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
        """``sm_90a``, ``gfx942``, or ``metal``/``metal4`` for Apple's GPUs."""
        value = self.as_dict
        if self.kind == "metal":
            return "metal4" if value.get("keys") == _METAL4_KEYS else "metal"
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
        """What the generated code is written in: ``CUDA``, ``HIP`` or ``Metal``."""
        return {"hip": "HIP", "metal": "Metal"}.get(self.kind, "CUDA")

    @property
    def source_suffix(self) -> str:
        """The file suffix of the generated code: ``.cu``, ``.cpp`` for HIP, ``.metal``."""
        return {"hip": ".cpp", "metal": ".metal"}.get(self.kind, ".cu")

    @property
    def memory(self) -> str:
        """What the limit is about, in the vendor's words."""
        return {"hip": "LDS per workgroup",
                "metal": "threadgroup memory per threadgroup"}.get(
                    self.kind, "shared memory per block")

    @property
    def barrier(self) -> str:
        """The block-wide barrier as the generated code spells it."""
        return "threadgroup_barrier" if self.kind == "metal" else "__syncthreads"

    @property
    def barrier_key(self) -> str:
        """The key of the block-wide barrier's count in the ``sync`` fact."""
        return "threadgroup_barrier" if self.kind == "metal" else "syncthreads"

    @property
    def asynchronous(self) -> bool:
        """Whether TileLang's copies into shared memory can be asynchronous here (cp.async,
        TMA): on Metal they are plain loads and stores ordered by threadgroup barriers."""
        return self.kind != "metal"

    @property
    def shared_memory_limit(self) -> int | None:
        if self.kind == "hip":
            return AMD_LDS.get(self.arch)
        if self.kind == "metal":
            return APPLE_THREADGROUP_MEMORY
        cc = self.compute_capability
        return NVIDIA_SHARED_MEMORY.get(cc) if cc is not None else None

    @property
    def has_tensor_memory(self) -> bool:
        """sm_100 to sm_110: tensor memory and tcgen05."""
        cc = self.compute_capability
        return cc is not None and 100 <= cc <= 110


def instruction_rule(target: Target, instruction: str) -> str | None:
    """Why a ``T.gemm`` could not have become anything faster, when the reason is a plain
    rule of the architecture (the PTX ISA's) or of the target as TileLang reads it (on
    Apple's GPUs, the ``metal4`` key), not a choice left to the compiler."""
    if target.kind == "metal" and instruction == "simdgroup_multiply_accumulate":
        if target.arch == "metal":
            return ("metal: TileLang makes a T.gemm Metal 4's cooperative-tensor matmul2d "
                    "only for a target with the metal4 key (metal4, which it picks itself "
                    "on an Apple M5 or later with macOS 26)")
        return ("metal4: TileLang keeps a T.gemm whose accumulator is a fragment "
                "(T.alloc_fragment) on simdgroup matrices; matmul2d needs another "
                "accumulator and a tile that splits into 16x32 pieces per simdgroup")
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


def _not_lowered(kind: str, text: str) -> OptionError:
    return OptionError(f"target {text!r}: {NOT_LOWERED[kind]}")


def _metal(value: dict[str, object], text: str) -> Target:
    """``metal`` (TVM's own keys, left out) or ``metal4`` (its keys spelled out)."""
    keys = value.get("keys")
    if keys in (None, ["metal", "gpu"]):
        return _canonical({"kind": "metal"})
    if keys == _METAL4_KEYS:
        return _canonical({"kind": "metal", "keys": _METAL4_KEYS})
    raise OptionError(f"target {text!r}: keys must be {_METAL4_KEYS} (metal4) or left "
                      f"out (metal), got {keys!r}")


def _from_dict(value: dict[str, object], text: str) -> Target:
    kind = value.get("kind")
    if kind == "rocm":
        raise OptionError(f"target {text!r}: TileLang lowers AMD GPUs with kind 'hip' "
                          "(gfx942, or {\"kind\": \"hip\", \"mcpu\": \"gfx942\"})")
    if isinstance(kind, str) and kind in NOT_LOWERED:
        raise _not_lowered(kind, text)
    if kind not in _KEYS:
        raise OptionError(f"target {text!r}: only CUDA, HIP and Metal targets are supported "
                          f"(kind {kind!r})")
    extra = sorted(set(value) - set(_KEYS[str(kind)]))
    if extra:
        raise OptionError(f"target {text!r}: only {' and '.join(_KEYS[str(kind)])} can be "
                          f"given, not {', '.join(extra)}")
    if kind == "metal":
        return _metal(value, text)
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
    return bool(_ARCH.match(word) or _MCPU.match(word) or word in _METAL_NAMES)


def parse_target(text: str) -> Target:
    """Parse ``sm_80``, ``gfx942``, ``metal``, ``metal4``, ``cuda -arch=sm_90a``, ``hip
    -mcpu=gfx942`` or a JSON target dict; never ``auto``."""
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
    if text in _METAL_NAMES:
        return _metal({"kind": "metal", "keys": _METAL_NAMES[text]}, text)
    if text.lower() in NOT_LOWERED:
        raise _not_lowered(text.lower(), text)
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
        f"unknown target {text!r}: use an arch (sm_80, sm_90a, gfx942), metal, "
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
    """One target, or several: ``sm_80 sm_90a gfx942 metal`` (names) or ``a; b`` for any
    spellings. Each becomes an axis of the directive's matrix of variants."""
    targets: list[Target] = []
    for piece in split_targets(text):
        target = parse_target(piece)
        if target in targets:
            raise OptionError(f"target {piece!r} is listed twice")
        targets.append(target)
    return tuple(targets)
