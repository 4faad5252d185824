"""What only HTML builders get: ``<details>`` for collapsibles, the CSS, CUDA downloads."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pygments
import sphinx
from docutils import nodes
from sphinx.util.osutil import relative_uri

from .files import write_if_changed
from .nodes import skip, tl_collapsible

if TYPE_CHECKING:
    from sphinx.application import Sphinx
    from sphinx.config import Config
    from sphinx.writers.html5 import HTML5Translator

    from .cache import Cache
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


def _add_static(app: Sphinx, config: Config) -> None:
    # On config-inited, before the saved environment's config is compared with this one:
    # later, the change would make every incremental build rewrite every page.
    if str(STATIC) not in config.html_static_path:
        config.html_static_path.append(str(STATIC))
    app.add_css_file("tlstages.css")


def setup_html(app: Sphinx) -> None:
    """Register the HTML visitors and the stylesheet."""
    # Other builders never see one (CollapsiblesAsText replaces it); skip is a guard.
    guard = (skip, None)
    app.add_node(tl_collapsible, html=(visit_collapsible, depart_collapsible), latex=guard,
                 text=guard, man=guard, texinfo=guard)
    app.connect("config-inited", _add_static)




def highlight_cached(app: Sphinx, cache: Cache, root: nodes.Element) -> None:
    """Swap each long listing (diffs, full CUDA) for its highlighted HTML from the cache.

    Highlighting these listings costs more than all the rest of a warm build, and the
    output depends only on the text, the lexer and the Pygments and Sphinx versions.
    """
    highlighter = app.builder.highlighter  # type: ignore[attr-defined]
    for block in list(root.findall(nodes.literal_block)):
        if not isinstance(block.parent, tl_collapsible):
            continue
        language, text = block["language"], block.astext()
        key = hashlib.sha256(json.dumps(
            ["fragment", 1, language, text, pygments.__version__, sphinx.__version__]
        ).encode()).hexdigest()
        html = cache.fragment(key)
        if html is None:
            highlighted = highlighter.highlight_block(text, language, location=block)
            html = f'<div class="highlight-{language} notranslate">{highlighted}</div>\n'
            cache.put_fragment(key, html)
        block.replace_self(nodes.raw("", html, format="html"))
