"""The package version, importable without the rest of the package.

The one place it is written: the built metadata (``[tool.setuptools.dynamic]`` in
pyproject.toml), ``tlstages --version`` and the book's ``release`` all read it from here.
Provenance only: no lowering key depends on it, so a release keeps every cached lowering
(rendered HTML fragments, cheap to redo, are keyed with it).
"""

__version__ = "0.1.0"
