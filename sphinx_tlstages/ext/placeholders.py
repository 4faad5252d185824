"""Filling each placeholder with its rendered results, as each document is written.

Runs on ``doctree-resolved``, after the batch of :mod:`.batch` has lowered everything
(``env-updated`` precedes all writing). Builders other than HTML then get plain text where
HTML has collapsible blocks.

Why an event handler and not an HTML-only ``SphinxPostTransform``: every builder needs
the parts, and HTML builders reuse whole cached fragments of written HTML here (what holds
a warm ``-E`` rebuild near the cost of the same book without the extension); a
post-transform would have to rebuild the nodes before it could skip writing them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from docutils import nodes

from .collector import directives
from .config import settings
from .html import cuda_downloads, is_html, render_html
from .nodes import tl_collapsible, tl_pipeline_placeholder
from .render import Context, render
from .state import build_state

if TYPE_CHECKING:
    from sphinx.application import Sphinx


def fill_pipelines(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    """Replace every ``tl_pipeline_placeholder`` of ``docname`` with its rendering."""
    specs = {spec.name: spec for spec in directives(app.env).get(docname, [])}
    if any(p["name"] not in specs for p in doctree.findall(tl_pipeline_placeholder)):
        # An assembled document (LaTeX, texinfo, singlehtml) holds other documents'
        # directives too; names are unique in a project (a reused one is reported).
        for found in directives(app.env).values():
            for other in found:
                specs.setdefault(other.name, other)
    state = build_state(app)
    config = settings(app)
    html = is_html(app)
    for placeholder in list(doctree.findall(tl_pipeline_placeholder)):
        spec = specs.get(placeholder["name"])
        if spec is None or state is None:
            placeholder.parent.remove(placeholder)
            continue
        rows = [(variant, state.result(variant)) for variant in spec.variants]
        context = Context(
            version=state.version, max_lines=config.max_lines,
            downloads=cuda_downloads(app, docname, spec, rows) if html else None,
            bench=state.attached.get(spec.name, []),
            bench_stale=config.bench_stale,
        )
        if html:
            digests = [state.cache.digests.get(v.key(state.stamp)) for v in spec.variants]
            rendered = render_html(app, doctree, spec, rows, context, state.cache, digests)
        else:
            rendered = render(spec, rows, context)
        rendered.source, rendered.line = placeholder.source, placeholder.line
        placeholder.replace_self(rendered)
    if not html:
        collapse_for_print(doctree)


def collapse_for_print(doctree: nodes.document) -> None:
    """Builders without ``<details>`` get each collapsible's summary and a pointer."""
    for node in list(doctree.findall(tl_collapsible)):
        para = nodes.paragraph(classes=["tl-collapsed"])
        para += nodes.Text(node["summary"] + " ")
        para += nodes.emphasis(text="(the full text is in the HTML output)")
        node.replace_self(para)
