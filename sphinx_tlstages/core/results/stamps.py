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
import os
import re
from collections.abc import Iterable
from pathlib import Path

PACKAGE = "sphinx_tlstages"
PACKAGE_DIR = Path(__file__).resolve().parents[2]


def _module_files(package_dir: Path) -> set[str]:
    """Every ``.py`` file under ``package_dir``, relative, in POSIX form: one walk instead
    of two ``stat`` calls per imported name."""
    found: set[str] = set()
    for folder, dirs, files in os.walk(package_dir):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        relative = Path(folder).relative_to(package_dir).as_posix()
        prefix = "" if relative == "." else relative + "/"
        found.update(prefix + name for name in files if name.endswith(".py"))
    return found


def _module_file(module: str, files: set[str]) -> str | None:
    """The file of ``module`` among ``files`` (relative POSIX paths), or None."""
    parts = module.split(".")
    if parts[0] != PACKAGE:
        return None
    base = "/".join(parts[1:])
    for candidate in (f"{base}.py", f"{base}/__init__.py" if base else "__init__.py"):
        if candidate in files:
            return candidate
    return None


def _module_name(relative: str) -> str:
    parts = [PACKAGE, *relative.removesuffix(".py").split("/")]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


# An import statement at any indentation, a parenthesised one over several lines. Only
# these are read: parsing whole modules on every build cost more than Sphinx's own
# no-op rebuild of a small book. A docstring line that happens to read like an import is
# read too, and can only add a module to the closure, never drop one.
# It starts with a newline (the text is given one first): a literal first character lets
# the regex engine skip to candidates instead of trying every position as ``^`` would.
_IMPORT = re.compile(r"\n[ \t]*(from[ \t]+[.\w]+[ \t]+import[ \t]+(?:\([^)]*\)|[^\n]*)"
                     r"|import[ \t]+[^\n]*)")
# The usual spellings, read without the parser (``ast.parse`` of each statement was most
# of a warm build's digest time); anything else goes to the parser as before.
_NAME = r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*(?:\s+as\s+[A-Za-z_]\w*)?"
_NAMES = rf"{_NAME}(?:\s*,\s*{_NAME})*"
_FROM = re.compile(rf"from\s+(\.*)([\w.]*)\s+import\s+(?:\(\s*({_NAMES})\s*,?\s*\)|({_NAMES}))")
_PLAIN = re.compile(rf"import\s+({_NAMES})")
_COMMENT = re.compile(r"#[^\n]*")


def _aliased(names: str) -> list[str]:
    return [name.split()[0] for name in names.split(",")]


def _import_names(text: str, package: str) -> set[str]:
    """Dotted names of every module (and ``from`` member) ``text`` imports."""
    statements = [m.group(1) for m in _IMPORT.finditer("\n" + text)]
    if any(statement.rstrip().endswith("\\") for statement in statements):
        return _parsed(ast.walk(ast.parse(text)), package)  # a backslash continuation
    found: set[str] = set()
    for statement in statements:
        plain = _COMMENT.sub("", statement).strip()
        if match := _FROM.fullmatch(plain):
            dots, module, names = match.group(1), match.group(2), match.group(3) or match.group(4)
            if dots:
                base = package.split(".")
                base = base[:len(base) - len(dots) + 1]
                module = ".".join([*base, module] if module else base)
            found.add(module)
            found.update(f"{module}.{name}" for name in _aliased(names))
        elif match := _PLAIN.fullmatch(plain):
            found.update(_aliased(match.group(1)))
        else:
            with contextlib.suppress(SyntaxError):  # prose in a docstring
                found |= _parsed(ast.parse(statement).body, package)
    return found


def _parsed(nodes: Iterable[ast.AST], package: str) -> set[str]:
    found: set[str] = set()
    for node in nodes:
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
    return found


def _closure(roots: Iterable[str], package_dir: Path) -> dict[str, bytes]:
    """The files of :func:`module_closure` (relative POSIX paths), each with its content
    (read once)."""
    files = _module_files(package_dir)
    todo: list[str] = []
    for root in roots:
        relative = _module_file(root, files)
        if relative is None:
            raise ValueError(f"no module {root}")
        if relative.endswith("__init__.py"):  # a package: all its modules
            folder = relative.removesuffix("__init__.py")
            todo.extend(sorted(name for name in files if name.startswith(folder)
                               and "/" not in name[len(folder):]))
        else:
            todo.append(relative)
    seen: dict[str, bytes] = {}
    while todo:
        relative = todo.pop()
        if relative in seen:
            continue
        seen[relative] = data = (package_dir / relative).read_bytes()
        name = _module_name(relative)
        package = name if relative.endswith("__init__.py") else name.rsplit(".", 1)[0]
        for module in _import_names(data.decode("utf-8"), package):
            if module.split(".")[0] != PACKAGE:
                continue
            found = _module_file(module, files)
            if found is not None and found not in seen:
                todo.append(found)
    return seen


def module_closure(roots: Iterable[str], package_dir: Path = PACKAGE_DIR) -> list[Path]:
    """The files of ``roots`` (dotted module or package names; a package means all its
    modules) and of every package module they import, transitively, sorted."""
    return sorted(package_dir / relative for relative in _closure(roots, package_dir))


def code_digest(roots: Iterable[str], package_dir: Path = PACKAGE_DIR) -> str:
    """SHA-256 (16 hex digits) over the files of :func:`module_closure`, with their names."""
    digest = hashlib.sha256()
    files = _closure(roots, package_dir)
    for relative in sorted(files, key=lambda name: package_dir / name):  # as module_closure
        digest.update(relative.encode())
        digest.update(files[relative])
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
    # each of its thousands of entries, on every build; and only the libraries' lines are
    # sorted (sorting every line was most of this stamp's time), in the same order.
    for line in sorted(line for line in record.splitlines() if "libt" in line):
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
