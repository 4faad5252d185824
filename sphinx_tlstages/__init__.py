"""sphinx-tlstages: show what TileLang's compiler does as ``num_stages`` changes.

The package has four sides: :mod:`.core` (plain data and pure functions, neither Sphinx
nor TileLang), :mod:`.worker` (the only importer of TileLang, TVM and torch, run in
worker processes), :mod:`.ext` (the Sphinx extension) and :mod:`.cli` (the ``tlstages``
command); :mod:`.runner` starts and talks to the workers. ``import sphinx_tlstages``
loads none of them: a worker started as ``python -m sphinx_tlstages.worker`` must not pay
for Sphinx.
"""

from __future__ import annotations

import gc
from typing import TYPE_CHECKING, Any

from .version import __version__

if TYPE_CHECKING:
    from sphinx.application import Sphinx

__all__ = ["__version__", "setup"]


_frozen = False


def setup(app: Sphinx) -> dict[str, Any]:
    """Sphinx's entry point; imports the extension only when Sphinx loads it."""
    global _frozen
    # What exists when Sphinx loads extensions (its modules, the application, the
    # configuration, then this extension's modules) lives as long as the build: moved out
    # of the collector's reach, as a worker does after importing TileLang. Every full
    # collection during the build re-scanned all of it: measured on the chapter-22 page,
    # a warm -E rebuild spent more CPU in them than the whole extension's own work. Once
    # per process, so that a process building many projects freezes at most one set.
    first = not _frozen
    if first:
        _frozen = True
        gc.freeze()
    from .ext import setup as setup_extension

    found = setup_extension(app)
    if first:
        gc.freeze()
    return found
