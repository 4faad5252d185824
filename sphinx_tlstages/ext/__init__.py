"""The Sphinx extension: ``setup`` wires one feature per call, in the order data flows.

Configuration, the directive that records what to lower, the batch that lowers it after
reading and the checks after it, the rendering that fills the pages (with what builders
without HTML get instead of collapsible blocks), the HTML-only touches and the LaTeX
package.
"""

from __future__ import annotations

from typing import Any

from sphinx.application import Sphinx

from ..version import __version__
from . import priorities
from .builders.figure_visitors import setup_figures
from .builders.html import setup_html
from .builders.latex import setup_latex
from .builders.plain import setup_plain
from .checks.drift_report import write_report
from .checks.run import check_project, set_exit_status
from .collector import TlPipelineCollector
from .config import setup_config
from .directive import TlPipelineDirective
from .lowering.batch import finish_remote, lower_project
from .lowering.prestart import before_reading, early
from .lowering.prestart import close as close_workers
from .nodes import skip, tl_pipeline_placeholder
from .placeholders import fill_pipelines
from .reread import reading, say_again
from .state import setup_state


def setup_directive(app: Sphinx) -> None:
    app.add_directive("tl-pipeline", TlPipelineDirective)
    app.add_env_collector(TlPipelineCollector)
    # What reading a document said is said again by a build that does not read it.
    app.connect("env-before-read-docs", reading)
    app.connect("env-updated", say_again, priority=priorities.SAY_AGAIN)
    # The placeholder never reaches a writer; these only guard builders that skip
    # post-transforms.
    visitors = (skip, None)
    app.add_node(tl_pipeline_placeholder, html=visitors, latex=visitors, text=visitors,
                 man=visitors, texinfo=visitors)


def setup_batch(app: Sphinx) -> None:
    # Workers start while Sphinx reads, when the reading will leave something to lower
    # (a cold build: as soon as the configuration is read, after Settings are made).
    app.connect("config-inited", early, priority=priorities.EARLY_WORKERS)
    app.connect("env-before-read-docs", before_reading)
    app.connect("build-finished", close_workers)
    # env-updated: every document is read (and merged, with -j), nothing written yet.
    # Lowering first, the checks on its results after (a later priority).
    app.connect("env-updated", lower_project, priority=priorities.LOWER)
    app.connect("env-updated", check_project, priority=priorities.CHECK)
    app.connect("build-finished", finish_remote, priority=priorities.FINISH_REMOTE)
    app.connect("build-finished", set_exit_status)
    app.connect("build-finished", write_report)


def setup_render(app: Sphinx) -> None:
    app.connect("doctree-resolved", fill_pipelines)
    setup_plain(app)


def setup(app: Sphinx) -> dict[str, Any]:
    """Register the extension with ``app``."""
    setup_config(app)
    setup_state(app)
    setup_directive(app)
    setup_batch(app)
    setup_render(app)
    setup_html(app)
    setup_latex(app)
    setup_figures(app)
    # env_version: bumped when what the environment stores changes shape, so that an older
    # pickled environment is read again (2: placeholders carry their document's name;
    # 3: :expect-error: values name their target; 5: specs say how a kernel's depth is given,
    # and where a kernel lowered as written sets it; 6: variants say whether they record
    # their pass changes; 7: specs hold :expect-hazard:; 8: specs hold their problems and
    # place, expectations name swept values, unread directives and what reading said are
    # kept per document, :timeline:, the fit part's plan).
    return {"version": __version__, "parallel_read_safe": True, "parallel_write_safe": True,
            "env_version": 8}
