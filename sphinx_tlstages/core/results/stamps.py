"""Digests of what a result or a rendered fragment was made with.

A cached lowering is valid only for the TileLang build and the extension code that made
it. :func:`code_digest` hashes a set of this package's modules and every package module
they import, found by reading their ``import`` statements: the lowering stamp covers
exactly the worker side and the core modules it uses, so editing a warning's wording or
a renderer keeps every cached lowering, while editing a fact reader invalidates them.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import hashlib
import importlib.metadata
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

PACKAGE = "sphinx_tlstages"
PACKAGE_DIR = Path(__file__).resolve().parents[2]


def _module_file(module: str, package_dir: Path) -> Path | None:
    parts = module.split(".")
    if parts[0] != PACKAGE:
        return None
    base = package_dir.joinpath(*parts[1:])
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _module_name(path: Path, package_dir: Path) -> str:
    relative = path.relative_to(package_dir).with_suffix("")
    parts = [PACKAGE, *relative.parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


# An import statement at any indentation, a parenthesised one over several lines. Only
# these are parsed: parsing whole modules on every build cost more than Sphinx's own
# no-op rebuild of a small book. A docstring line that happens to read like an import is
# parsed too, and can only add a module to the closure, never drop one.
_IMPORT = re.compile(r"^[ \t]*(from[ \t]+[.\w]+[ \t]+import[ \t]+(?:\([^)]*\)|[^\n]*)"
                     r"|import[ \t]+[^\n]*)", re.M)


def _import_nodes(text: str) -> Iterator[ast.AST]:
    statements = [m.group(1) for m in _IMPORT.finditer(text)]
    if any(statement.rstrip().endswith("\\") for statement in statements):
        yield from ast.walk(ast.parse(text))  # a backslash continuation: read it all
        return
    for statement in statements:
        with contextlib.suppress(SyntaxError):  # prose in a docstring
            yield from ast.parse(statement).body


def _imports(path: Path, package_dir: Path) -> set[str]:
    """Package modules ``path`` imports (at any depth of its code), as dotted names."""
    name = _module_name(path, package_dir)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found: set[str] = set()
    for node in _import_nodes(path.read_text(encoding="utf-8")):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)
    return {module for module in found if module.split(".")[0] == PACKAGE}


def module_closure(roots: Iterable[str], package_dir: Path = PACKAGE_DIR) -> list[Path]:
    """The files of ``roots`` (dotted module or package names; a package means all its
    modules) and of every package module they import, transitively, sorted."""
    todo: list[Path] = []
    for root in roots:
        path = _module_file(root, package_dir)
        if path is None:
            raise ValueError(f"no module {root}")
        todo.extend(sorted(path.parent.glob("*.py")) if path.name == "__init__.py" else [path])
    seen: set[Path] = set()
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        for module in _imports(path, package_dir):
            found = _module_file(module, package_dir)
            if found is not None and found not in seen:
                todo.append(found)
    return sorted(seen)


def code_digest(roots: Iterable[str], package_dir: Path = PACKAGE_DIR) -> str:
    """SHA-256 (16 hex digits) over the files of :func:`module_closure`, with their names."""
    digest = hashlib.sha256()
    for path in module_closure(roots, package_dir):
        digest.update(path.relative_to(package_dir).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


# The worker's entry point and what it runs; not the GPU compile of `tlstages bench`.
LOWERING_ROOTS = (f"{PACKAGE}.worker.__main__", f"{PACKAGE}.worker.lowering")


@functools.cache
def lowering_stamp() -> str:
    """The code a worker runs: an edited fact reader must not reuse results its old
    version computed (the schema number alone is bumped by hand, and forgotten)."""
    return code_digest(LOWERING_ROOTS)


@functools.cache
def tilelang_stamp() -> str | None:
    """Version and content stamp of the installed TileLang, read without importing it.

    The wheel's RECORD lists the SHA-256 of every file it installed, its compiled
    libraries included; the libraries' sizes catch a library rebuilt in place.
    """
    try:
        dist = importlib.metadata.distribution("tilelang")
    except importlib.metadata.PackageNotFoundError:
        return None
    digest = hashlib.sha256(dist.version.encode())
    record = dist.read_text("RECORD") or ""
    digest.update(record.encode())
    # The library paths straight from RECORD's text: dist.files would build an object for
    # each of its thousands of entries, on every build.
    for line in sorted(record.splitlines()):
        path = line.split(",", 1)[0]
        name = path.rsplit("/", 1)[-1]
        if name.startswith(("libtilelang", "libtvm")):
            with contextlib.suppress(OSError):
                size = Path(str(dist.locate_file(path))).stat().st_size
                digest.update(f"{path}:{size}".encode())
    return f"{dist.version}+{digest.hexdigest()[:16]}"


# The TileLang releases the test suite runs under (pyproject.toml declares the range).
TILELANG_TESTED = ("0.1.14", "0.1.15")


def _release(version: str) -> tuple[int, ...]:
    numbers = []
    for part in version.split("+")[0].split("."):
        digits = "".join(c for c in part if c.isdigit())
        numbers.append(int(digits or 0))
    return tuple(numbers)


def untested_tilelang(version: str | None) -> bool:
    """Whether ``version`` is newer than the newest TileLang this extension was tested with."""
    return version is not None and _release(version) > _release(TILELANG_TESTED[-1])


def tilelang_version() -> str | None:
    """The installed TileLang's version, or None."""
    stamp = tilelang_stamp()
    return stamp.split("+", 1)[0] if stamp else None
