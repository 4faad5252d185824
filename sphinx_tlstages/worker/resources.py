"""Compiling a lowered variant's CUDA to a cubin, as TileLang's own device build does.

A step after lowering, for variants whose page shows ``resources``: the CUDA the page
offers for download is compiled with the flags ``tilelang/cuda/backend.py`` gives nvcc
for that variant (its pass configs included), ptxas's ``--verbose`` report and the
cubin's disassembly are read by :mod:`..core.hardware.resources`. A compiler that fails
costs the variant its part (said on the page), never its lowering.

Its input is the normalised CUDA (compiled with its ``#line`` directives left empty, which
changes no instruction: see :func:`..core.hardware.sass_lines.compiled_text`), its output
ptxas's ``--verbose`` report and one ``nvdisasm -gi`` of the cubin, which gives both the
SASS listing (:mod:`..core.hardware.sass_listing`, ``cuobjdump -sass``'s text) and the
SASS by kernel line (:mod:`..core.hardware.sass_lines`). In a build, the worker that lowered a
variant only asks for its compile (a :class:`Request`, with the flags and the kernel's
source); the pool runs this module (:func:`main`) once the last variant of a directive is
lowered, apart from the workers, which lower on meanwhile.
:func:`compile_group` compiles the variants that share their flags and includes with one
nvcc: TileLang's and CUTLASS's headers, parsed by the front end, are most of a compile
(about 1.3 s of CPU per compile of the seed GEMM, a kernel adds about 0.3 s).

:func:`flags` mirrors ``tilelang/cuda/backend.py``: read it again when TileLang is
bumped. A failure puts ``resources_error`` in the result (the page says it,
``tlstages.toolkit`` warns). The toolkit comes with the ``resources`` extra, and so with
the ``docs`` extra (Read the Docs and a book's CI build the part) and ``nox -s tests``;
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

import contextlib
import copy
import dataclasses
import functools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.hardware import resources, sass_lines, sass_listing

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


def nvcc_command(nvcc: str, options: Sequence[str], cubin: Path, source: Path) -> list[str]:
    """nvcc's command line for one compile into ``cubin``, the host compiler named
    (``CXX``, else ``g++``): left to itself nvcc looks for ``gcc`` on ``PATH``, which a
    build machine with only a C++ compiler lacks."""
    return [nvcc, f"-ccbin={os.environ.get('CXX', 'g++')}", *options, "-o", str(cubin),
            str(source)]


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
    ``{"resources_error": ...}``; ``keep_cubin``: where to copy the cubin the figures
    were read from (the hardware check loads it on a GPU); ``kernel``: the kernel's file
    name, as its ``#line`` directives spell it, and its source (for the SASS by kernel
    line, none without)."""
    request = Request.of(cuda, arch, pass_configs, toolkit, threads, dynamic_shared,
                         tensor_memory, kernel)
    return compile_group([request], keep_cubin)[0]


@dataclass(frozen=True)
class Request:
    """One variant's compile, as the worker that lowered it asks for it: its normalised
    CUDA and nvcc's flags (:func:`flags`, worked out where TileLang is imported), what
    the occupancy needs, and the kernel's file name and source, which the SASS by kernel
    line numbers its lines by (:func:`..core.hardware.sass_lines.cuda_places`)."""

    cuda: str
    arch: str
    flags: tuple[str, ...]
    toolkit: tuple[tuple[str, str], ...]  # the Task's toolkit payload, as items
    threads: int
    dynamic_shared: int
    tensor_memory: int = 0
    kernel: tuple[str, str] | None = None  # (file name, source)

    @property
    def nvcc(self) -> str:
        return dict(self.toolkit)["nvcc"]

    def encode(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def decode(cls, data: dict[str, Any]) -> Request:
        kernel = data.get("kernel")
        return cls(**{**data, "flags": tuple(data["flags"]),
                      "toolkit": tuple(tuple(item) for item in data["toolkit"]),
                      "kernel": None if kernel is None else tuple(kernel)})

    @classmethod
    def of(cls, cuda: str, arch: str, pass_configs: dict[str, Any], toolkit: dict[str, str],
           threads: int, dynamic_shared: int, tensor_memory: int = 0,
           kernel: tuple[str, str] | None = None) -> Request:
        """A variant's compile with TileLang's flags for its pass configs."""
        return cls(cuda, arch, tuple(flags(arch, pass_configs)), tuple(sorted(toolkit.items())),
                   threads, dynamic_shared, tensor_memory, kernel)

    @functools.cached_property
    def compiled(self) -> str:
        """The CUDA as nvcc gets it: its ``#line`` directives empty lines, so that the
        line table numbers each line as the downloadable CUDA does."""
        return sass_lines.compiled_text(self.cuda)


# Where a variant's kernel begins: everything above it (TileLang's includes) is what the
# front end spends its time on, and is shared by the variants of a group.
_KERNELS = re.compile(r'^extern "C" __global__ void (?:__launch_bounds__\([^)]*\) )?(\w+)\(',
                      re.M)
# ptxas's report, one function at a time.
_ENTRY = re.compile(r"^ptxas info\s*: Compiling entry function '([^']+)'", re.M)


def _split(cuda: str) -> tuple[str, str, str] | None:
    """(the includes, the kernel's code, its name), or None where the CUDA is not one
    kernel after its includes (then it is compiled alone, as it is)."""
    names = {match[1] for match in _KERNELS.finditer(cuda)}
    first = _KERNELS.search(cuda)
    if first is None or len(names) != 1:
        return None
    body = cuda[first.start():]
    # Anything at the top level but the kernel's declaration and definition would be
    # defined once per variant in a shared file: such CUDA is compiled alone.
    for line in body.splitlines():
        if line and not line[0].isspace() and not line.startswith(
                ('extern "C" __global__', "}", "#")):
            return None
    return cuda[:first.start()], body, names.pop()


def _group_key(request: Request) -> tuple[Any, ...]:
    split = _split(request.compiled)
    if split is None:
        return (id(request),)
    return (request.nvcc, request.arch, request.flags, split[0])


def compile_group(requests: list[Request], keep_cubin: Path | None = None
                  ) -> list[dict[str, Any]]:
    """Each request's part (as :func:`compile_variant` returns it), in order. Variants with
    the same flags and includes are compiled by one nvcc, as TileLang's autotuner compiles
    a group of configurations: the front end parses TileLang's and CUTLASS's headers once
    for all of them. Each kernel is renamed in the shared file (``NAME__tlsN``) and its
    name given back in its report and listing; ptxas compiles every entry function on its
    own, so the figures are those of a compile of the variant alone
    (``tests/test_resources_group.py`` holds them equal). Each variant's code is numbered
    in the shared file as in its own CUDA (a ``#line`` before it; the renaming adds no
    line), so that its SASS by kernel line, read off its renamed kernel's section of the
    shared cubin, is that of its own compile too."""
    # Identical CUDA with identical flags (two depths TileLang lowers alike, two
    # directives showing one kernel) is compiled once.
    unique: dict[Request, list[int]] = {}
    for index, request in enumerate(requests):
        unique.setdefault(request, []).append(index)
    groups: dict[tuple[Any, ...], list[Request]] = {}
    for request in unique:
        groups.setdefault(_group_key(request), []).append(request)
    out: list[dict[str, Any]] = [{} for _ in requests]
    for group in groups.values():
        for request, result in zip(group, _compile(group, keep_cubin), strict=True):
            for index in unique[request]:
                out[index] = copy.deepcopy(result)
    return out


def _compile(group: list[Request], keep_cubin: Path | None) -> list[dict[str, Any]]:
    """One nvcc and one ``nvdisasm -gi`` for ``group`` (variants that share their flags
    and includes, or one variant alone): the disassembly gives each variant its SASS
    listing (:mod:`..core.hardware.sass_listing`) and its SASS by kernel line."""
    first = group[0]
    nvcc = first.nvcc
    names: list[tuple[str, str]] = []  # (the kernel's name, its name in the shared file)
    with tempfile.TemporaryDirectory(prefix="tlstages-nvcc-") as folder:
        source, cubin = Path(folder, "kernel.cu"), Path(folder, "kernel.cubin")
        if len(group) == 1:
            text = first.compiled
        else:
            splits = [_split(request.compiled) for request in group]
            parts = [splits[0][0]] if splits[0] is not None else []
            for index, split in enumerate(splits):
                assert split is not None  # grouped by _group_key
                head, body, name = split
                renamed = f"{name}__tls{index}"
                names.append((name, renamed))
                # Each variant's code numbered as in its own CUDA (whose #line directives
                # are empty lines): the line table then names its own lines, and the
                # renaming, within lines, shifts none.
                line = head.count("\n") + 1
                parts.append(f'#line {line} "{source}"\n'
                             + re.sub(rf"\b{re.escape(name)}\b", renamed, body))
            text = "".join(part if part.endswith("\n") else part + "\n" for part in parts)
        source.write_text(text, encoding="utf-8")
        command = nvcc_command(nvcc, first.flags, cubin, source)
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT,
                                  check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return [{"resources_error": f"nvcc could not run: {type(exc).__name__}: {exc}"}
                    for _ in group]
        report = done.stdout + done.stderr
        if done.returncode != 0:
            if len(group) > 1:  # one variant's failure must not cost the others theirs
                return [_compile([request], None)[0] for request in group]
            tail = "\n".join(report.strip().splitlines()[-6:])
            return [{"resources_error": f"nvcc failed (exit {done.returncode}): {tail}"}]
        # The disassembly, once for the cubin: each variant reads its kernel's section.
        table = _disassembly(cubin, _beside(nvcc, "nvdisasm"))
        if keep_cubin is not None and len(group) == 1:
            shutil.copyfile(cubin, keep_cubin)
    if len(group) == 1:
        kernel = _entry(report)
        return [_read(first, report, table, kernel, kernel, folder)]
    return [_read(request, _report_of(report, name, renamed), table, renamed, name, folder)
            for request, (name, renamed) in zip(group, names, strict=True)]


def _beside(nvcc: str, tool: str) -> str | None:
    """``tool`` beside nvcc (the wheel, a CUDA install), else on PATH: a PATH nvcc may be
    a wrapper."""
    beside = Path(nvcc).with_name(tool)
    return str(beside) if beside.is_file() else shutil.which(tool)


def _entry(report: str) -> str | None:
    """The entry function ptxas compiled (TileLang's device code has one)."""
    match = _ENTRY.search(report)
    return match[1] if match else None


def _disassembly(cubin: Path, nvdisasm: str | None) -> str | None:
    """``nvdisasm -gi`` of the cubin: every kernel's instructions with their line table;
    None where nvdisasm is missing or fails."""
    if nvdisasm is None:
        return None
    try:
        listed = subprocess.run([nvdisasm, "-gi", "-c", str(cubin)], capture_output=True,
                                text=True, timeout=TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return listed.stdout if listed.returncode == 0 else None


def _sections(text: str, starts: re.Pattern[str]) -> tuple[str, dict[str, str]]:
    """``text`` (ptxas's report) cut at each function ``starts``
    matches (its group 1: the function's name): what comes before the first, and each
    function's part by name."""
    found = list(starts.finditer(text))
    head = text[:found[0].start()] if found else text
    ends = [match.start() for match in found[1:]] + [len(text)]
    return head, {match[1]: text[match.start():end] for match, end in zip(found, ends,
                                                                          strict=True)}


def _report_of(report: str, name: str, renamed: str) -> str:
    """ptxas's report as a compile of this kernel alone prints it: the lines before the
    first entry function, then this one's."""
    head, parts = _sections(report, _ENTRY)
    return head + parts[renamed].replace(renamed, name) if renamed in parts else head


def _read(request: Request, report: str, table: str | None, kernel: str | None,
          name: str | None, root: str) -> dict[str, Any]:
    """The part, read off one variant's report, and its SASS listing and SASS by kernel
    line off the disassembly's section of ``kernel`` (its name in the cubin, ``name`` its
    own; ``root``: the folder of the CUDA compiled, ``kernel.cu``, which the line table
    names it by)."""
    sass = None if table is None or kernel is None else sass_listing.listing(
        table, request.arch, kernel, name)
    try:
        found = resources.resources(report, sass, request.arch, request.threads,
                                    request.dynamic_shared, request.cuda,
                                    request.tensor_memory)
    except resources.ReportError as exc:
        return {"resources_error": str(exc)}
    out: dict[str, Any] = {"resources": found, "toolkit": version(request.nvcc)}
    if sass is not None:
        out["sass"] = sass
        if table is not None and kernel is not None and request.kernel is not None:
            source_name, source = request.kernel
            places = sass_lines.cuda_places(request.cuda, source, source_name)
            # A table without the kernel's section leaves the variant without its lines.
            with contextlib.suppress(ValueError):
                out["sass_lines"] = sass_lines.by_line(table, kernel, places, root)
    return out


def main() -> int:
    """``python -m sphinx_tlstages.worker.resources``: compile the requests read as JSON on
    stdin (a list of :meth:`Request.encode`), write their parts as a JSON list. Run by the
    pool once a group of variants is lowered, apart from the workers, so that lowering
    goes on meanwhile; it needs no TileLang (the flags come with the requests)."""
    requests = [Request.decode(data) for data in json.load(sys.stdin)]
    json.dump(compile_group(requests), sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
