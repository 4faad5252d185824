"""A Sphinx project seen from outside a build: its configuration and its directives.

The ``tlstages`` command uses this to find a project's snapshot folder and its
``tl-pipeline`` directives the way the docs build does: by running Sphinx's own reader
(no second parser), with lowering switched off.
"""

from __future__ import annotations

import io
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sphinx
from sphinx.config import eval_config_file
from sphinx.util.tags import Tags

from ..core.plan.spec import DirectiveSpec, Unread
from .collector import all_directives, all_unread
from .config import DEFAULT_SNAPSHOT_DIR


def conf_values(srcdir: Path) -> dict[str, Any]:
    """``conf.py``'s namespace, evaluated as Sphinx evaluates it."""
    conf: Any = srcdir / "conf.py"
    if sphinx.version_info < (9,):
        conf = str(conf)  # Sphinx 8.1 calls .encode() on the name; 9.2 its .parent
    return dict(eval_config_file(conf, Tags()))


def snapshot_folder(srcdir: Path) -> Path:
    return srcdir / str(conf_values(srcdir).get("tlstages_snapshot_dir", DEFAULT_SNAPSHOT_DIR))


@dataclass(frozen=True)
class Project:
    """A project as Sphinx reads it: its directives, those that could not be read, and
    the source file of each document that has either (relative to the source folder, as
    the build log names it)."""

    specs: list[DirectiveSpec]
    unread: list[Unread]
    sources: dict[str, str]

    def held(self) -> dict[str, str]:
        """The names whose snapshot no command may rewrite or remove now, each with why:
        a directive with an option in error, or one that could not be read."""
        held = {spec.name: f"an option is in error at {self.sources[spec.docname]}:"
                           f"{spec.problems[0].line}" for spec in self.specs if spec.in_error}
        held.update((found.name, f"the directive at {self.sources[found.docname]}:"
                                 f"{found.lineno} could not be read")
                    for found in self.unread if found.name is not None)
        return held

    def unnamed(self) -> list[str]:
        """Where a directive stands whose :name: is in error (so its snapshot is not
        known)."""
        return [f"{self.sources[f.docname]}:{f.lineno}" for f in self.unread if f.name is None] \
            + [f"{self.sources[s.docname]}:{p.line}" for s in self.specs for p in s.problems
               if p.message.startswith(":name:")]


def read_directives(srcdir: Path) -> list[DirectiveSpec]:
    """Every tl-pipeline directive of the project, read by Sphinx, nothing lowered."""
    return read_project(srcdir)[0]


def read_project(srcdir: Path) -> tuple[list[DirectiveSpec], dict[str, str]]:
    """Every tl-pipeline directive, and the source file of each document that has one
    (relative to ``srcdir``, as the build log names it)."""
    found = read_all(srcdir)
    return found.specs, found.sources


def read_all(srcdir: Path) -> Project:
    """The project's directives, read by Sphinx, nothing lowered (:class:`Project`)."""
    from sphinx.application import Sphinx
    from sphinx.util.docutils import docutils_namespace, patch_docutils

    # As sphinx-build does: docutils' registries are global, restore them afterwards.
    with tempfile.TemporaryDirectory(prefix="tlstages-read-") as tmp, \
            patch_docutils(srcdir), docutils_namespace():
        app = Sphinx(str(srcdir), str(srcdir), str(Path(tmp, "out")), str(Path(tmp, "dt")),
                     "dummy", confoverrides={"tlstages_collect_only": True},
                     status=io.StringIO(), warning=io.StringIO(), freshenv=True)
        app.build(force_all=True)
        specs, unread = all_directives(app.env), all_unread(app.env)
        sources = {doc: Path(str(app.env.doc2path(doc, False))).as_posix()
                   for doc in {*(s.docname for s in specs), *(u.docname for u in unread)}}
        return Project(specs, unread, sources)
