#!/usr/bin/env python3
"""The resources part against a GPU's driver: registers, local memory, static shared
memory and blocks per SM, as a page states them and as the CUDA driver reports them.

Two halves, on two machines:

* ``prepare`` runs where the book builds (TileLang and the ``resources`` extra installed):
  it finds the book's ``tl-pipeline`` directives whose ``:show:`` names ``resources``
  (or those ``--directive`` names, with ``--num-stages`` and ``--target`` replacing
  theirs), lowers and compiles each variant with the package's own code
  (``worker.lowering.lower_variant``, the cubin kept) and writes the cubins and a
  ``manifest.json`` of what each page states into a folder;
* ``check`` runs on a machine with an NVIDIA GPU, with only the driver (``libcuda``
  through ctypes), the standard library and the package's pure ``core``: it loads each
  cubin built for the GPU's compute capability, asks the driver for the same figures,
  compares the device's limits with ``core.hardware.occupancy.LIMITS``, sweeps the
  occupancy of every kernel over dynamic shared memory against
  ``core.hardware.occupancy.occupancy``, writes the comparison as JSON and exits 1 on any
  mismatch. Cubins for another capability (``sm_80`` SASS does not load on 9.0) are
  listed as skipped.

    python verification/resources_on_gpu/resources_on_gpu.py prepare [--book book]
        [--directive NAME ...] [--num-stages 1 2 3 4] [--target sm_90a] OUT
    python verification/resources_on_gpu/resources_on_gpu.py check OUT [--json FILE]
"""

from __future__ import annotations

import argparse
import ctypes
import json
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from sphinx_tlstages.core.hardware import driver_check  # noqa: E402 - pure, on both machines

# -- prepare: where the book builds -------------------------------------------------------

_RST = re.compile(r"^(?P<indent>[ \t]*)\.\. tl-pipeline::(?P<title>.*)$")
_MD = re.compile(r"^(?P<fence>`{3,}|:{3,})\{tl-pipeline\}(?P<title>.*)$")
_OPTION = re.compile(r"^:(?P<name>[\w-]+):(?P<value>.*)$")
_ENTRY = re.compile(r"__global__\s+void\s+(?:__launch_bounds__\([^)]*\)\s+)?(\w+)\s*\(")


def _options_and_body(lines: list[str]) -> tuple[dict[str, str], list[str]]:
    """A directive block's ``:name: value`` options (continuation lines joined) and the
    kernel after them, both dedented."""
    width = min((len(s) - len(s.lstrip()) for s in lines if s.strip()), default=0)
    lines = [s[width:] for s in lines]
    found: dict[str, str] = {}
    at = 0
    last = None
    while at < len(lines) and lines[at].strip():
        match = _OPTION.match(lines[at])
        if match:
            last = match["name"]
            found[last] = match["value"].strip()
        elif last is not None and lines[at].startswith(" "):
            found[last] += "\n" + lines[at].strip()
        else:
            break
        at += 1
    return found, lines[at:]


def directives(book: Path) -> list[dict[str, Any]]:
    """Every ``tl-pipeline`` of the book's reST and MyST pages: its document, options,
    inline kernel; named as the extension names it when ``:name:`` is not given."""
    found = []
    for page in sorted([*book.rglob("*.rst"), *book.rglob("*.md")]):
        if any(part.startswith(("_", ".")) for part in page.relative_to(book).parts):
            continue
        lines = page.read_text(encoding="utf-8").splitlines()
        docname = page.relative_to(book).with_suffix("").as_posix()
        count = 0
        for start, line in enumerate(lines):
            rst, md = _RST.match(line), _MD.match(line) if page.suffix == ".md" else None
            if rst and page.suffix == ".rst":
                indent = len(rst["indent"])
                end = start + 1
                while end < len(lines) and (not lines[end].strip() or
                                            len(lines[end]) - len(lines[end].lstrip()) > indent):
                    end += 1
                block = lines[start + 1:end]
            elif md:
                end = next((i for i in range(start + 1, len(lines))
                            if lines[i].strip() == md["fence"]), len(lines))
                block = lines[start + 1:end]
            else:
                continue
            count += 1
            options, body = _options_and_body(block)
            found.append({"docname": docname, "page": page, "options": options,
                          "kernel": "\n".join(body).strip("\n"),
                          "name": options.get("name") or
                          f"{docname.replace('/', '-')}-{count}"})
    return found


def prepare(book: Path, names: list[str], num_stages: list[int] | None,
            target: str | None, out: Path) -> int:
    from sphinx_tlstages.core.files import write_atomic
    from sphinx_tlstages.core.kernel.source import normalise_source
    from sphinx_tlstages.core.plan import options
    from sphinx_tlstages.core.plan.spec import KernelOrigin
    from sphinx_tlstages.core.plan.targets import parse_targets
    from sphinx_tlstages.core.plan.toolkit import find
    from sphinx_tlstages.core.planner import Defaults, Kernel, plan
    from sphinx_tlstages.core.results.stamps import tilelang_version
    from sphinx_tlstages.worker.resources import version
    from sphinx_tlstages.worker.tasks import import_tilelang

    conf: dict[str, Any] = {"__file__": str(book / "conf.py")}  # the book's defaults
    exec(compile((book / "conf.py").read_text(encoding="utf-8"), "conf.py", "exec"), conf)
    toolkit = find(str(conf.get("tlstages_toolkit", "auto")))
    if toolkit is None:
        print("no NVIDIA compiler: pip install sphinx-tlstages[resources]", file=sys.stderr)
        return 2
    _, why = import_tilelang()
    if why:
        print(f"TileLang cannot lower here: {why}", file=sys.stderr)
        return 2
    from sphinx_tlstages.worker.lowering import lower_variant

    shown = " ".join(conf.get("tlstages_show") or ())
    chosen = [d for d in directives(book) if d["name"] in names] if names else \
        [d for d in directives(book) if "resources" in d["options"].get("show", shown).split()]
    missing = set(names) - {d["name"] for d in chosen}
    if missing or not chosen:
        print(f"no such directive in {book}: {', '.join(sorted(missing))}" if missing else
              f"no directive in {book} shows resources: name some with --directive",
              file=sys.stderr)
        return 2
    out.mkdir(parents=True, exist_ok=True)
    manifest_path = out / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else \
        {"variants": []}
    manifest.update(toolkit=version(toolkit.nvcc), tilelang=tilelang_version())
    failed = 0
    for directive in chosen:
        opts = directive["options"]
        if "file" in opts:
            file = opts["file"].strip()
            path = (book / file.lstrip("/")) if file.startswith("/") \
                else directive["page"].parent / file
            source, source_name = normalise_source(path.read_text(encoding="utf-8")), path.name
            origin = KernelOrigin(str(path.resolve()), (str(path.resolve().parent),))
        else:
            source, source_name = normalise_source(directive["kernel"]), "kernel.py"
            origin = KernelOrigin()
        # As the book plans it, with the command's num_stages and target if given, and
        # every variant compiled for the part (the directive may be named without it).
        given = {**opts, "show": f"{opts.get('show', shown)} resources"}
        given.update({"num-stages": " ".join(map(str, num_stages))} if num_stages else {})
        given.update({"target": target} if target else {})
        defaults = Defaults(
            targets=parse_targets(str(conf.get("tlstages_target", "sm_80"))),
            num_stages=options.parse_num_stages(str(conf.get("tlstages_num_stages",
                                                             "1 2 3 4"))),
            toolkit=str(conf.get("tlstages_toolkit", "auto")))
        variants = plan(given, Kernel(source, source_name, origin), defaults,
                        name=directive["name"], docname=str(directive["page"]),
                        lineno=1).variants
        for variant in variants:
            label = variant.label if variant.target.label in variant.label \
                else f"{variant.target.label}-{variant.label}"
            cubin = f"{directive['name']}-{label}.cubin"
            result: dict[str, Any] = dict(lower_variant(variant.task(), out / cubin))
            entry = {"directive": directive["name"], "variant": variant.heading,
                     "arch": str(variant.target.as_dict.get("arch")), "cubin": cubin}
            if "resources" not in result:
                entry["error"] = result.get("resources_error") or result.get("error")
                failed += 1
            else:
                kernel = _ENTRY.search(result["cuda"])
                entry.update(kernel=kernel[1] if kernel else None, threads=result["threads"],
                             dynamic_shared=result["dynamic_shared_bytes"],
                             stated=driver_check.stated(result["resources"]),
                             limiter=result["resources"]["occupancy"]["limiter"])
            print(json.dumps(entry, sort_keys=True), file=sys.stderr)
            manifest["variants"] = [v for v in manifest["variants"]
                                    if v["cubin"] != cubin] + [entry]
    manifest["variants"].sort(key=lambda v: (v["directive"], v["cubin"]))
    write_atomic(manifest_path, json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    return 1 if failed else 0


# -- check: on the GPU, the driver only ---------------------------------------------------

# cuda.h's enumerators (CUfunction_attribute, CUdevice_attribute).
FUNCTION_ATTRIBUTES = {"SHARED_SIZE_BYTES": 1, "LOCAL_SIZE_BYTES": 3, "NUM_REGS": 4}
MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
DEVICE_ATTRIBUTES = {
    "MAX_THREADS_PER_BLOCK": 1, "MAX_REGISTERS_PER_BLOCK": 12, "MULTIPROCESSOR_COUNT": 16,
    "MAX_THREADS_PER_MULTIPROCESSOR": 39, "COMPUTE_CAPABILITY_MAJOR": 75,
    "COMPUTE_CAPABILITY_MINOR": 76, "MAX_SHARED_MEMORY_PER_MULTIPROCESSOR": 81,
    "MAX_REGISTERS_PER_MULTIPROCESSOR": 82, "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN": 97,
    "MAX_BLOCKS_PER_MULTIPROCESSOR": 106, "RESERVED_SHARED_MEMORY_PER_BLOCK": 111,
}


class Driver:
    """The few driver calls the check makes, each checked."""

    def __init__(self) -> None:
        self.cuda = ctypes.CDLL("libcuda.so.1")
        self._call("cuInit", 0)
        device = ctypes.c_int()
        self._call("cuDeviceGet", ctypes.byref(device), 0)
        self.device = device.value
        context = ctypes.c_void_p()
        self._call("cuDevicePrimaryCtxRetain", ctypes.byref(context), self.device)
        self._call("cuCtxSetCurrent", context)

    def _call(self, name: str, *args: Any) -> None:
        code = getattr(self.cuda, name)(*args)
        if code != 0:
            text = ctypes.c_char_p()
            self.cuda.cuGetErrorString(code, ctypes.byref(text))
            raise RuntimeError(f"{name}: error {code} ({(text.value or b'').decode()})")

    def device_attributes(self) -> dict[str, int]:
        found = {}
        for name, number in DEVICE_ATTRIBUTES.items():
            value = ctypes.c_int()
            self._call("cuDeviceGetAttribute", ctypes.byref(value), number, self.device)
            found[name] = value.value
        version = ctypes.c_int()
        self._call("cuDriverGetVersion", ctypes.byref(version))
        found["DRIVER_VERSION"] = version.value
        name_buffer = ctypes.create_string_buffer(256)
        self._call("cuDeviceGetName", name_buffer, 256, self.device)
        found["name"] = name_buffer.value.decode()  # type: ignore[assignment]
        return found

    def function(self, cubin: bytes, kernel: str, threads: int, dynamic: int,
                 sweep: tuple[list[int], list[int]]) -> tuple[dict[str, int], dict[str, Any]]:
        """The kernel's attributes and blocks per SM at its own threads and ``dynamic``
        shared memory; and at each point of ``sweep`` (block sizes, dynamic sizes)."""
        module, func = ctypes.c_void_p(), ctypes.c_void_p()
        self._call("cuModuleLoadData", ctypes.byref(module), ctypes.c_char_p(cubin))
        try:
            self._call("cuModuleGetFunction", ctypes.byref(func), module, kernel.encode())
            found = {}
            for name, number in FUNCTION_ATTRIBUTES.items():
                value = ctypes.c_int()
                self._call("cuFuncGetAttribute", ctypes.byref(value), number, func)
                found[name] = value.value

            def blocks(size: int, block: int = threads) -> int:
                # As a launch with more than the function allows (48 KiB less its static
                # shared memory, by default) must, opt in first: without it, no block fits.
                allowed = ctypes.c_int()
                self._call("cuFuncGetAttribute", ctypes.byref(allowed),
                           MAX_DYNAMIC_SHARED_SIZE_BYTES, func)
                if size > allowed.value:
                    self._call("cuFuncSetAttribute", func, MAX_DYNAMIC_SHARED_SIZE_BYTES, size)
                value = ctypes.c_int()
                self._call("cuOccupancyMaxActiveBlocksPerMultiprocessor", ctypes.byref(value),
                           func, block, ctypes.c_size_t(size))
                return value.value

            found["occupancy_blocks_per_sm"] = blocks(dynamic)
            block_sizes, sizes = sweep
            return found, {"dynamic_shared": sizes,
                           "blocks": {str(b): [blocks(size, b) for size in sizes]
                                      for b in block_sizes}}
        finally:
            self._call("cuModuleUnload", module)


# A list of numbers (the occupancy sweep), written on one line rather than one a line.
_NUMBERS = re.compile(r"\[\s*\d+(?:,\s*\d+)*\s*\]")


def check(folder: Path, out: Path | None) -> int:
    manifest = json.loads((folder / "manifest.json").read_text())
    driver = Driver()
    device = driver.device_attributes()
    capability = f"{device['COMPUTE_CAPABILITY_MAJOR']}.{device['COMPUTE_CAPABILITY_MINOR']}"
    limits = driver_check.device_limits(capability, device)
    report: dict[str, Any] = {
        "device": device, "capability": capability, "toolkit": manifest.get("toolkit"),
        "tilelang": manifest.get("tilelang"),
        "limits_mismatches": driver_check.compare_device(capability, device),
        "variants": [], "skipped": []}
    for entry in manifest["variants"]:
        arch = re.sub(r"[af]$", "", entry["arch"])
        if "error" in entry or arch != "sm_" + capability.replace(".", ""):
            why = entry.get("error") or f"{entry['arch']} SASS does not load on {capability}"
            report["skipped"].append({**{k: entry.get(k) for k in ("directive", "variant",
                                                                  "arch", "error")}, "why": why})
            continue
        said = entry["stated"]
        points = driver_check.sweep_points(limits.shared_per_block, said["static_shared"],
                                           entry["threads"])
        attributes, swept = driver.function((folder / entry["cubin"]).read_bytes(),
                                            entry["kernel"], entry["threads"],
                                            entry["dynamic_shared"], points)
        row = {k: entry[k] for k in ("directive", "variant", "arch", "kernel", "threads",
                                     "dynamic_shared", "stated", "limiter")}
        row.update(driver=attributes,
                   mismatches=driver_check.compare_function(said, attributes),
                   sweep=swept,
                   sweep_mismatches=driver_check.compare_sweep(
                       limits, said["registers"], said["static_shared"], swept))
        report["variants"].append(row)
        state = "agrees" if not row["mismatches"] and not row["sweep_mismatches"] \
            else "DIFFERS"
        print(f"{entry['directive']} {entry['variant']}: {said} {state}", file=sys.stderr)
    wrong = report["limits_mismatches"] + [m for row in report["variants"]
                                           for m in row["mismatches"] + row["sweep_mismatches"]]
    report["agree"] = not wrong and bool(report["variants"])
    text = _NUMBERS.sub(lambda m: "[" + ", ".join(re.findall(r"\d+", m[0])) + "]",
                        json.dumps(report, indent=1, sort_keys=True)) + "\n"
    if out:
        out.write_text(text)
    print(text if not out else f"wrote {out}")
    for line in wrong:
        print(f"MISMATCH {line}", file=sys.stderr)
    return 0 if report["agree"] else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    prep = commands.add_parser("prepare", help="lower, compile, keep cubins (book machine)")
    prep.add_argument("out", type=Path)
    prep.add_argument("--book", type=Path, default=ROOT / "book")
    prep.add_argument("--directive", action="append", default=[], metavar="NAME")
    prep.add_argument("--num-stages", type=int, nargs="+")
    prep.add_argument("--target")
    chk = commands.add_parser("check", help="compare with the driver (GPU machine)")
    chk.add_argument("folder", type=Path)
    chk.add_argument("--json", type=Path)
    args = parser.parse_args()
    if args.command == "prepare":
        return prepare(args.book, args.directive, args.num_stages, args.target, args.out)
    return check(args.folder, args.json)


if __name__ == "__main__":
    sys.exit(main())
