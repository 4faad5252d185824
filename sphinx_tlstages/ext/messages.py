"""The one way the extension reports a problem: a typed, filterable Sphinx message.

Every warning and error carries ``type="tlstages"`` and a subtype from
:data:`~sphinx_tlstages.core.errors.SUBTYPES`, so ``suppress_warnings =
["tlstages.limit"]`` silences one kind. Errors (a drift, a false ``:assert:``) are logged
as errors and also counted by the checks, which fail the build at its end.
"""

from __future__ import annotations

from typing import Any

from sphinx.util import logging

from ..core.errors import SUBTYPES, WARNING_TYPE

logger = logging.getLogger("sphinx_tlstages")


def warn(message: str, subtype: str, location: Any = None) -> None:
    """Log a filterable ``tlstages`` warning at ``location`` (a node or ``(docname, line)``)."""
    assert subtype in SUBTYPES, subtype
    logger.warning(message, type=WARNING_TYPE, subtype=subtype, location=location)


def error(message: str, subtype: str, location: Any = None) -> None:
    """Log a ``tlstages`` error; the caller counts it so that the build fails."""
    assert subtype in SUBTYPES, subtype
    logger.error(message, type=WARNING_TYPE, subtype=subtype, location=location)


def info(message: str, location: Any = None) -> None:
    """A line of the build log (``-q`` hides it), at ``location`` if given."""
    logger.info(message, location=location)


def verbose(message: str) -> None:
    """A line shown with ``-v``."""
    logger.verbose(message)
