"""Post-transforms: fill each placeholder with its rendered results, and give builders
other than HTML plain text where HTML has collapsible blocks.

Post-transforms run per document as it is written, after the batch of
:mod:`.batch` has lowered everything (``env-updated`` precedes all writing).
"""

from __future__ import annotations

from typing import Any

from docutils import nodes
from sphinx.transforms.post_transforms import SphinxPostTransform

from .batch import batch_state
from .collector import directives
from .html import cuda_downloads, is_html
from .nodes import tl_collapsible, tl_pipeline_placeholder
from .render import render


class FillPipelines(SphinxPostTransform):
    """Replace every ``tl_pipeline_placeholder`` with the rendered directive."""

    default_priority = 5  # before references are resolved (10): nothing here links

    def run(self, **kwargs: Any) -> None:
        docname = self.env.docname
        specs = {spec.name: spec for spec in directives(self.env).get(docname, [])}
        state = batch_state(self.app)
        for placeholder in list(self.document.findall(tl_pipeline_placeholder)):
            spec = specs.get(placeholder["name"])
            if spec is None or state is None:
                placeholder.parent.remove(placeholder)
                continue
            rows = [(variant, state.result(variant)) for variant in spec.variants]
            downloads = cuda_downloads(self.app, docname, spec, rows) if is_html(self.app) \
                else None
            rendered = render(spec, rows, state.version, self.config.tlstages_diff_max_lines,
                              downloads)
            rendered.source, rendered.line = placeholder.source, placeholder.line
            placeholder.replace_self(rendered)


class CollapsiblesAsText(SphinxPostTransform):
    """Builders without ``<details>`` get the summary line and a pointer to HTML."""

    default_priority = 6

    def run(self, **kwargs: Any) -> None:
        if is_html(self.app):
            return
        for node in list(self.document.findall(tl_collapsible)):
            para = nodes.paragraph(classes=["tl-collapsed"])
            para += nodes.Text(node["summary"])
            para += nodes.emphasis(text=" (the full text is in the HTML output)")
            node.replace_self(para)
