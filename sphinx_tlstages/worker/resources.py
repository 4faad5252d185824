"""Compiling a lowered variant's CUDA to a cubin, as TileLang's own device build does.

A step after lowering, for variants whose page shows ``resources``: the CUDA the page
offers for download is compiled with the flags ``tilelang/cuda/backend.py`` gives nvcc
for that variant (its pass configs included), ptxas's ``--verbose`` report and
``cuobjdump -sass`` are read by :mod:`..core.hardware.resources`. A compiler that fails costs the
variant its part (said on the page), never its lowering.

Its input is the normalised CUDA (compiled with its ``#line`` directives left empty, which
changes no instruction: see :func:`..core.hardware.sass_lines.compiled_text`), its output
ptxas's ``--verbose`` report, ``cuobjdump -sass`` and the SASS by kernel line (``nvdisasm
-gi``, read by :mod:`..core.hardware.sass_lines`). :func:`flags` mirrors
``tilelang/cuda/backend.py``: read it again when TileLang is bumped. A failure puts
``resources_error`` in the result (the page says it, ``tlstages.toolkit`` warns). The
toolkit comes with the ``resources`` extra, and so with the ``docs`` extra (Read the Docs
and a book's CI build the part) and ``nox -s tests``;
nvcc needs a host ``g++`` on ``PATH`` (or ``CXX``), which is all a ``--cubin`` compile runs
(g++ finds ``cc1plus`` by an absolute path, assembles and links nothing; ``.ci/bare-path``
links the fresh image's). The Sphinx builds in ``tests/test_resources.py`` skip where the
extra is not installed, except under ``CI``, where a missing toolkit fails them; the
parsers, the occupancy and the missing-toolkit paths (a build, and ``tlstages lower
--toolkit`` in ``tests/test_resources_cli.py``, exit status 1 under ``CI``) are tested
everywhere. ``verification/resources_on_gpu`` checks the figures against a GPU's driver,
``benchmarks/resources_cost`` what the step costs.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from ..core.hardware import resources, sass_lines

# Seconds one compile may take (the GEMMs here take 2-5 s on two loaded cores).
TIMEOUT = 300


def flags(arch: str, pass_configs: dict[str, Any]) -> list[str]:
    """nvcc's flags for one variant, as ``tilelang_callback_cuda_compile`` and
    ``tilelang.contrib.nvcc.compile_cuda`` build them (verbose ptxas included, which
    TileLang adds under ``TILELANG_VERBOSE``)."""
    import shlex

    from tilelang.env import CUTLASS_INCLUDE_DIR, TILELANG_TEMPLATE_PATH
    from tilelang.transform import PassConfigKey

    options = ["--cubin", "-O3", "-lineinfo", f"-arch={arch}", "-std=c++20",
               f"-I{TILELANG_TEMPLATE_PATH}", f"-I{CUTLASS_INCLUDE_DIR}"]
    extra = pass_configs.get(PassConfigKey.TL_DEVICE_COMPILE_FLAGS)
    if extra:
        for flag in [extra] if isinstance(extra, str) else extra:
            options += shlex.split(flag) if isinstance(flag, str) else [str(flag)]
    if pass_configs.get(PassConfigKey.TL_ENABLE_FAST_MATH):
        options.append("--use_fast_math")
    level = pass_configs.get(PassConfigKey.TL_PTXAS_REGISTER_USAGE_LEVEL)
    if level is not None:
        options.append(f"--ptxas-options=--register-usage-level={int(level)}")
    return [*options, "--ptxas-options=--verbose", "-w"]


@functools.cache
def version(nvcc: str) -> str:
    """``13.5.37``, from ``nvcc --version`` (provenance only)."""
    try:
        out = subprocess.run([nvcc, "--version"], capture_output=True, text=True,
                             timeout=60, check=False).stdout
    except OSError:
        return "unknown"
    match = re.search(r"\bV(\d+(?:\.\d+)+)", out)
    return match[1] if match else "unknown"


def compile_variant(cuda: str, arch: str, pass_configs: dict[str, Any], toolkit: dict[str, str],
                    threads: int, dynamic_shared: int, tensor_memory: int = 0,
                    keep_cubin: Path | None = None,
                    kernel: tuple[str, str] | None = None) -> dict[str, Any]:
    """``{"resources": ..., "sass": ..., "sass_lines": ..., "toolkit": ...}``, or
    ``{"resources_error": ...}``;
    ``keep_cubin``: where to copy the cubin the figures were read from (the hardware
    check loads it on a GPU); ``kernel``: the kernel's file name, as its ``#line``
    directives spell it, and its source (for the SASS by kernel line, none without)."""
    nvcc = toolkit["nvcc"]
    # Beside nvcc in the wheel and in a CUDA install; a PATH nvcc may be a wrapper.
    cuobjdump = _beside(nvcc, "cuobjdump")
    with tempfile.TemporaryDirectory(prefix="tlstages-nvcc-") as folder:
        source, cubin = Path(folder, "kernel.cu"), Path(folder, "kernel.cubin")
        source.write_text(sass_lines.compiled_text(cuda), encoding="utf-8")
        command = [nvcc, f"-ccbin={os.environ.get('CXX', 'g++')}", *flags(arch, pass_configs),
                   "-o", str(cubin), str(source)]
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT,
                                  check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return {"resources_error": f"nvcc could not run: {type(exc).__name__}: {exc}"}
        report = done.stdout + done.stderr
        if done.returncode != 0:
            tail = "\n".join(report.strip().splitlines()[-6:])
            return {"resources_error": f"nvcc failed (exit {done.returncode}): {tail}"}
        sass: str | None = None
        if cuobjdump is not None:
            listed = subprocess.run([cuobjdump, "-sass", str(cubin)], capture_output=True,
                                    text=True, timeout=TIMEOUT, check=False)
            sass = listed.stdout if listed.returncode == 0 else None
        lines = None
        if sass is not None and kernel is not None:
            places = sass_lines.cuda_places(cuda, kernel[1], kernel[0])
            lines = line_counts(cubin, _entry(report), places, _beside(nvcc, "nvdisasm"),
                                folder)
        if keep_cubin is not None:
            shutil.copyfile(cubin, keep_cubin)
    try:
        found = resources.resources(report, sass, arch, threads, dynamic_shared, cuda,
                                    tensor_memory)
    except resources.ReportError as exc:
        return {"resources_error": str(exc)}
    out: dict[str, Any] = {"resources": found, "toolkit": version(nvcc)}
    if sass is not None:
        out["sass"] = resources.strip_encodings(sass)
        if lines is not None:
            out["sass_lines"] = lines
    return out


def _beside(nvcc: str, tool: str) -> str | None:
    """``tool`` beside nvcc (the wheel, a CUDA install), else on PATH: a PATH nvcc may be
    a wrapper."""
    beside = Path(nvcc).with_name(tool)
    return str(beside) if beside.is_file() else shutil.which(tool)


def _entry(report: str) -> str | None:
    """The entry function ptxas compiled (TileLang's device code has one)."""
    match = re.search(r"Compiling entry function '([^']+)'", report)
    return match[1] if match else None


def line_counts(cubin: Path, kernel: str | None,
                places: dict[int, sass_lines.Place], nvdisasm: str | None,
                root: str) -> dict[str, Any] | None:
    """SASS counts by kernel line of ``kernel`` (an entry function of ``cubin``, which
    may hold several), from its line table (:func:`..core.hardware.sass_lines.by_line`);
    None where nvdisasm is missing or fails. ``places``: where the CUDA's lines come from
    in the kernel (:func:`..core.hardware.sass_lines.cuda_places`); ``root``: the folder
    of the CUDA compiled (``kernel.cu``), which the line table names it by."""
    if nvdisasm is None or kernel is None:
        return None
    try:
        listed = subprocess.run([nvdisasm, "-gi", "-c", str(cubin)], capture_output=True,
                                text=True, timeout=TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if listed.returncode != 0:
        return None
    try:
        return sass_lines.by_line(listed.stdout, kernel, places, root)
    except ValueError:
        return None
