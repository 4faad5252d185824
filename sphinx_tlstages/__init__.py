"""sphinx-tlstages: show what TileLang's compiler does as ``num_stages`` changes.

The package has four sides: :mod:`.core` (plain data and pure functions, neither Sphinx
nor TileLang), :mod:`.worker` (the only importer of TileLang, TVM and torch, run in
worker processes), :mod:`.ext` (the Sphinx extension) and :mod:`.cli` (the ``tlstages``
command); :mod:`.runner` starts and talks to the workers. ``import sphinx_tlstages``
loads none of them: a worker started as ``python -m sphinx_tlstages.worker`` must not pay
for Sphinx.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .version import __version__

if TYPE_CHECKING:
    from sphinx.application import Sphinx

__all__ = ["__version__", "setup"]


def setup(app: Sphinx) -> dict[str, Any]:
    """Sphinx's entry point; imports the extension only when Sphinx loads it."""
    from .ext import setup as setup_extension

    return setup_extension(app)
