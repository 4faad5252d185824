"""What reading each document left, kept in the environment and merged across ``-j``
readers: per document, its directives' specs, the directives that could not be read,
and what the build log said while reading it (said again by builds that do not read it:
:mod:`.reread`)."""

from __future__ import annotations

from collections.abc import Set
from typing import TYPE_CHECKING, Any

from sphinx.environment.collectors import EnvironmentCollector

if TYPE_CHECKING:
    from docutils import nodes
    from sphinx.application import Sphinx
    from sphinx.environment import BuildEnvironment

    from ..core.plan.spec import DirectiveSpec, Unread

# What the log said while reading a document: (message, subtype, location), the location
# a (docname, line) pair or a ``path:line`` string.
Said = tuple[str, str, Any]

# The environment's attribute for each per-document table.
_TABLES = ("tlstages_directives", "tlstages_unread", "tlstages_said")


def _table(env: BuildEnvironment, name: str) -> dict[str, list[Any]]:
    if not hasattr(env, name):
        setattr(env, name, {})
    found: dict[str, list[Any]] = getattr(env, name)
    return found


def directives(env: BuildEnvironment) -> dict[str, list[DirectiveSpec]]:
    """``docname -> [DirectiveSpec, ...]`` in document order."""
    return _table(env, "tlstages_directives")


def unread(env: BuildEnvironment) -> dict[str, list[Unread]]:
    """``docname -> [Unread, ...]``: the directives that could not be read at all."""
    return _table(env, "tlstages_unread")


def said(env: BuildEnvironment) -> dict[str, list[Said]]:
    """``docname -> [(message, subtype, location), ...]``: this extension's warnings
    while reading the document, in the order said."""
    return _table(env, "tlstages_said")


def all_directives(env: BuildEnvironment) -> list[DirectiveSpec]:
    """Every directive of the project, in a stable order (document, then line)."""
    table = directives(env)
    return [spec for docname in sorted(table) for spec in table[docname]]


def all_unread(env: BuildEnvironment) -> list[Unread]:
    """Every directive that could not be read, in the same order."""
    table = unread(env)
    return [found for docname in sorted(table) for found in table[docname]]


def project_directives(env: BuildEnvironment) -> list[DirectiveSpec]:
    """Every directive whose :name: no other directive has (the checks report those that
    share one, and none of them is checked against a snapshot)."""
    specs = all_directives(env)
    names = [spec.name for spec in specs]
    return [spec for spec in specs if names.count(spec.name) == 1]


class TlPipelineCollector(EnvironmentCollector):
    """Keeps the tables in step with Sphinx's reading, serial or parallel."""

    def clear_doc(self, app: Sphinx, env: BuildEnvironment, docname: str) -> None:
        for name in _TABLES:
            _table(env, name).pop(docname, None)

    def merge_other(self, app: Sphinx, env: BuildEnvironment, docnames: Set[str],
                    other: BuildEnvironment) -> None:
        for name in _TABLES:
            mine, theirs = _table(env, name), _table(other, name)
            for docname in docnames:
                if docname in theirs:
                    mine[docname] = theirs[docname]

    def process_doc(self, app: Sphinx, doctree: nodes.document) -> None:
        """The directive records its spec itself, while the document is parsed."""
