"""Per-document directive specs, kept in the environment and merged across ``-j`` readers."""

from __future__ import annotations

from collections.abc import Set
from typing import TYPE_CHECKING

from sphinx.environment.collectors import EnvironmentCollector

if TYPE_CHECKING:
    from docutils import nodes
    from sphinx.application import Sphinx
    from sphinx.environment import BuildEnvironment

    from ..core.plan.spec import DirectiveSpec


def directives(env: BuildEnvironment) -> dict[str, list[DirectiveSpec]]:
    """``docname -> [DirectiveSpec, ...]`` in document order."""
    if not hasattr(env, "tlstages_directives"):
        env.tlstages_directives = {}  # type: ignore[attr-defined]
    found: dict[str, list[DirectiveSpec]] = env.tlstages_directives  # type: ignore[attr-defined]
    return found


def all_directives(env: BuildEnvironment) -> list[DirectiveSpec]:
    """Every directive of the project, in a stable order (document, then line)."""
    table = directives(env)
    return [spec for docname in sorted(table) for spec in table[docname]]


def project_directives(env: BuildEnvironment) -> list[DirectiveSpec]:
    """Every directive, the first of each :name: only (the checks report the rest)."""
    seen: set[str] = set()
    kept = []
    for spec in all_directives(env):
        if spec.name not in seen:
            seen.add(spec.name)
            kept.append(spec)
    return kept


class TlPipelineCollector(EnvironmentCollector):
    """Keeps :func:`directives` in step with Sphinx's reading, serial or parallel."""

    def clear_doc(self, app: Sphinx, env: BuildEnvironment, docname: str) -> None:
        directives(env).pop(docname, None)

    def merge_other(self, app: Sphinx, env: BuildEnvironment, docnames: Set[str],
                    other: BuildEnvironment) -> None:
        mine, theirs = directives(env), directives(other)
        for docname in docnames:
            if docname in theirs:
                mine[docname] = theirs[docname]

    def process_doc(self, app: Sphinx, doctree: nodes.document) -> None:
        """The directive records its spec itself, while the document is parsed."""
