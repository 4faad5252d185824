"""Filling each placeholder with its rendered results, as each document is written.

Runs on ``doctree-resolved``, after the batch of :mod:`.lowering.batch` has lowered everything
(``env-updated`` precedes all writing). Builders other than HTML then get plain nodes
where HTML has collapsible blocks (:mod:`.builders.plain`).

Why an event handler and not an HTML-only ``SphinxPostTransform``: every builder needs
the parts, and HTML builders reuse whole cached fragments of written HTML here (what holds
a warm ``-E`` rebuild near the cost of the same book without the extension); a
post-transform would have to rebuild the nodes before it could skip writing them.

Builders that assemble one output from many documents (singlehtml, latex, texinfo, man)
fire ``doctree-resolved`` once, with the root document's name, for a tree that holds every
included document: each placeholder is looked up under its own document's name, which the
directive stored on it. The event's name is still the page being written, which is what
links are relative to.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from docutils import nodes

from ..core.hardware.fit import fit_table
from .boxes import error_box
from .builders.html import cuda_downloads, has_downloads, is_html, render_html
from .builders.latex import for_latex
from .builders.plain import for_print
from .collector import directives
from .messages import warn
from .nodes import tl_pipeline_placeholder
from .render import Context, render
from .state import build_state, settings

if TYPE_CHECKING:
    from sphinx.application import Sphinx

    from ..core.plan.spec import DirectiveSpec


def _spec(app: Sphinx, placeholder: tl_pipeline_placeholder,
          docname: str) -> DirectiveSpec | None:
    """The placeholder's own directive: by its place among its document's directives,
    so that two of one name never render each other's."""
    origin = placeholder.get("docname") or docname
    serial = placeholder.get("serial")
    return next((spec for spec in directives(app.env).get(origin, [])
                 if spec.name == placeholder["name"]
                 and (serial is None or spec.serial == serial)), None)


def _missing(placeholder: tl_pipeline_placeholder, why: str) -> None:
    """The directive's place says what happened, and so does the build log."""
    message = f"tl-pipeline {placeholder['name']}: {why}"
    warn(message, "lowering", location=placeholder)
    note = error_box([message], prefix="")
    note.source, note.line = placeholder.source, placeholder.line
    placeholder.replace_self(note)


def fill_pipelines(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    """Replace every ``tl_pipeline_placeholder`` in ``doctree`` with its rendering."""
    state = build_state(app)
    config = settings(app)
    html = is_html(app)
    for placeholder in list(doctree.findall(tl_pipeline_placeholder)):
        spec = _spec(app, placeholder, docname)
        if state is None:
            _missing(placeholder, "no results: the project was not lowered in this build")
            continue
        if spec is None:
            _missing(placeholder, "no results: its document "
                     f"{placeholder.get('docname') or docname!r} recorded no such directive")
            continue
        rows = [(variant, state.result(variant)) for variant in spec.variants]
        context = Context(
            version=state.version, max_lines=config.max_lines,
            downloads=cuda_downloads(app, docname, spec, rows) if has_downloads(app) else None,
            bench=state.attached.get(spec.name, []),
            bench_stale=config.bench_stale,
            links=html,
            hardware=state.hardware_attached.get(spec.name, []),
            timelines=state.attached_timelines.get(spec.name, []),
            fit=fit_table(spec.fit, state.result) if spec.fit is not None else None,
        )
        if html:
            digests = [state.cache.digests.get(v.key(state.stamp)) for v in spec.variants]
            rendered = render_html(app, doctree, spec, rows, context, state.cache, digests,
                                   state.remote)
        else:
            rendered = render(spec, rows, context)
            for_print(app, rendered)
            if app.builder.format == "latex":
                for_latex(app, spec, rendered)
        rendered.source, rendered.line = placeholder.source, placeholder.line
        shared = state.duplicates.get((spec.docname, spec.serial))
        if shared is not None:  # the page says it as the log does, above the directive
            placeholder.replace_self([error_box([shared], prefix=""), rendered])
        else:
            placeholder.replace_self(rendered)
