"""A warm build is as strict as a cold one: what reading a document said is said again.

Sphinx reads a document only when its source (or a file it depends on) changed, so a
warning given while reading it (a bad option, a missing :file:, a syntax error, a param
the factory lacks) would be given once and then never again: a warm ``-W`` build, or a
CI job restoring a warm cache, would pass where the cold one failed. Each such warning is
therefore kept with its document in the environment (:func:`..collector.said`, merged
across ``-j`` readers, dropped when the document is read again) and said again, at its
place, by every build that does not read that document (``env-updated``, which every
build reaches, before anything is lowered).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .collector import said
from .messages import warn

if TYPE_CHECKING:
    from sphinx.application import Sphinx
    from sphinx.environment import BuildEnvironment

# The documents this build reads (``env-before-read-docs``), on the environment of this
# process alone: never pickled into the next build's.
_READING = "_tlstages_reading"


def say(env: BuildEnvironment, message: str, subtype: str, location: Any) -> None:
    """A warning while reading ``env.docname``: said now, and kept to be said again."""
    warn(message, subtype, location=location)
    said(env).setdefault(env.docname, []).append((message, subtype, location))


def reading(app: Sphinx, env: BuildEnvironment, docnames: list[str]) -> None:
    """``env-before-read-docs``: which documents this build reads."""
    env.__dict__[_READING] = set(docnames)


def say_again(app: Sphinx, env: BuildEnvironment) -> list[str]:
    """``env-updated``: what reading said of each document this build did not read."""
    read = env.__dict__.pop(_READING, set())
    table = said(env)
    for docname in sorted(table.keys() - read):
        if docname not in env.all_docs:  # removed since
            continue
        for message, subtype, location in table[docname]:
            warn(message, subtype, location=location)
    return []
