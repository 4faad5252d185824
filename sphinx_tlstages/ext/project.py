"""A Sphinx project seen from outside a build: its configuration and its directives.

The ``tlstages`` command uses this to find a project's snapshot folder and its
``tl-pipeline`` directives the way the docs build does: by running Sphinx's own reader
(no second parser), with lowering switched off.
"""

from __future__ import annotations

import io
import tempfile
from pathlib import Path
from typing import Any

import sphinx
from sphinx.config import eval_config_file
from sphinx.util.tags import Tags

from ..core.plan.spec import DirectiveSpec
from .collector import all_directives
from .config import DEFAULT_SNAPSHOT_DIR


def conf_values(srcdir: Path) -> dict[str, Any]:
    """``conf.py``'s namespace, evaluated as Sphinx evaluates it."""
    conf: Any = srcdir / "conf.py"
    if sphinx.version_info < (9,):
        conf = str(conf)  # Sphinx 8.1 calls .encode() on the name; 9.2 its .parent
    return dict(eval_config_file(conf, Tags()))


def snapshot_folder(srcdir: Path) -> Path:
    return srcdir / str(conf_values(srcdir).get("tlstages_snapshot_dir", DEFAULT_SNAPSHOT_DIR))


def read_directives(srcdir: Path) -> list[DirectiveSpec]:
    """Every tl-pipeline directive of the project, read by Sphinx, nothing lowered."""
    return read_project(srcdir)[0]


def read_project(srcdir: Path) -> tuple[list[DirectiveSpec], dict[str, str]]:
    """Every tl-pipeline directive, and the source file of each document that has one
    (relative to ``srcdir``, as the build log names it)."""
    from sphinx.application import Sphinx
    from sphinx.util.docutils import docutils_namespace, patch_docutils

    # As sphinx-build does: docutils' registries are global, restore them afterwards.
    with tempfile.TemporaryDirectory(prefix="tlstages-read-") as tmp, \
            patch_docutils(srcdir), docutils_namespace():
        app = Sphinx(str(srcdir), str(srcdir), str(Path(tmp, "out")), str(Path(tmp, "dt")),
                     "dummy", confoverrides={"tlstages_collect_only": True},
                     status=io.StringIO(), warning=io.StringIO(), freshenv=True)
        app.build(force_all=True)
        specs = all_directives(app.env)
        sources = {spec.docname: Path(str(app.env.doc2path(spec.docname, False))).as_posix()
                   for spec in specs}
        return specs, sources
