"""What only HTML builders get: ``<details>`` for collapsibles, the CSS, CUDA downloads."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sphinx.util.osutil import relative_uri

from .files import write_if_changed
from .nodes import skip, tl_collapsible

if TYPE_CHECKING:
    from sphinx.application import Sphinx
    from sphinx.writers.html5 import HTML5Translator

    from .spec import DirectiveSpec, VariantSpec

STATIC = Path(__file__).parent / "static"
DOWNLOAD_DIR = "_tlstages"


def is_html(app: Sphinx) -> bool:
    return app.builder.format == "html"


def visit_collapsible(self: HTML5Translator, node: tl_collapsible) -> None:
    classes = " ".join(["tl-collapsible", *node["classes"]])
    self.body.append(f'<details class="{classes}">')
    self.body.append(f"<summary>{self.encode(node['summary'])}</summary>\n")


def depart_collapsible(self: HTML5Translator, node: tl_collapsible) -> None:
    self.body.append("</details>\n")


def cuda_downloads(app: Sphinx, docname: str, spec: DirectiveSpec,
                   rows: list[tuple[VariantSpec, dict[str, Any]]]) -> dict[str, str]:
    """Write each variant's normalised CUDA under the output folder; return label -> URI.

    Files are written only when their content changed, so a rebuild touches nothing.
    """
    uris: dict[str, str] = {}
    page = app.builder.get_target_uri(docname)
    for variant, result in rows:
        if not result.get("ok"):
            continue
        name = f"{spec.name}-{variant.label}.cu"
        # The content hash in the folder name keeps a stale browser cache from lying.
        digest = hashlib.sha256(result["cuda"].encode()).hexdigest()[:12]
        relative = f"{DOWNLOAD_DIR}/{digest}/{name}"
        write_if_changed(Path(app.outdir, relative), result["cuda"])
        uris[variant.label] = relative_uri(page, relative)
    return uris


def _add_static(app: Sphinx) -> None:
    if is_html(app):
        app.config.html_static_path.append(str(STATIC))
        app.add_css_file("tlstages.css")


def setup_html(app: Sphinx) -> None:
    """Register the HTML visitors and, once the builder is known, the stylesheet."""
    # Other builders never see one (CollapsiblesAsText replaces it); skip is a guard.
    guard = (skip, None)
    app.add_node(tl_collapsible, html=(visit_collapsible, depart_collapsible), latex=guard,
                 text=guard, man=guard, texinfo=guard)
    app.connect("builder-inited", _add_static)


