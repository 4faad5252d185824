"""What only HTML builders get: ``<details>`` for collapsibles, the CSS, code downloads."""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import replace
from html import escape as html_escape
from pathlib import Path
from typing import TYPE_CHECKING

import docutils
import pygments
import sphinx
from docutils import nodes
from docutils.utils import new_document
from sphinx.util.osutil import relative_uri

from ...core.files import write_if_changed
from ...core.hardware.sass_lines import sass_words
from ...core.kernel.listing import Listing
from ...core.plan.variants import merge_unchanged
from ...core.results import line_links
from ...core.results.cuda import source_map, without_line_directives
from ...core.results.stamps import code_digest
from ...version import __version__
from ..nodes import replace_undrawable, tl_collapsible
from ..render import load_renderers, render_head, render_parts

if TYPE_CHECKING:
    from sphinx.application import Sphinx
    from sphinx.config import Config
    from sphinx.writers.html5 import HTML5Translator

    from ...core.plan.spec import DirectiveSpec, VariantSpec
    from ...core.results.result import Result
    from ..cache.local import Cache
    from ..cache.remote import Remote
    from ..render import Context

STATIC = Path(__file__).parent.parent / "static"
# The code a cached HTML fragment is written by (with every package module it imports).
RENDER_ROOTS = ("sphinx_tlstages.ext.render", "sphinx_tlstages.ext.builders.html",
                "sphinx_tlstages.ext.builders.figure_visitors")
DOWNLOAD_DIR = "_tlstages"


def is_html(app: Sphinx) -> bool:
    return app.builder.format == "html"


def has_downloads(app: Sphinx) -> bool:
    """HTML builders but EPUB, which packs every file of its output folder into the book
    and warns about each file type it cannot declare (``.cu``); its pages hold the
    listings themselves."""
    return is_html(app) and app.builder.name != "epub"


def visit_collapsible(self: HTML5Translator, node: tl_collapsible) -> None:
    classes = " ".join(["tl-collapsible", *node["classes"]])
    self.body.append(f'<details class="{classes}">')
    self.body.append(f"<summary>{self.encode(node['summary'])}</summary>\n")


def depart_collapsible(self: HTML5Translator, node: tl_collapsible) -> None:
    self.body.append("</details>\n")


def cuda_downloads(app: Sphinx, docname: str, spec: DirectiveSpec,
                   rows: list[tuple[VariantSpec, Result]]) -> dict[str, str]:
    """Write each variant's normalised CUDA under the output folder; return label -> URI
    of the file as the page lists it (``#line`` directives left out, so its line N is
    the listing's and the hazard sentences' line N), ``label:lines`` -> URI of the file
    with them (which maps each line to the kernel), and ``label:sass`` -> URI of its
    SASS listing, where the resources part made one.

    Files are written only when their content changed, so a rebuild touches nothing.
    """
    uris: dict[str, str] = {}
    page = app.builder.get_target_uri(docname)
    for variant, result in merge_unchanged(rows)[0]:
        if not result.get("ok"):
            continue
        suffix = variant.target.source_suffix
        for key, name, text in (
                (variant.label, f"{spec.name}-{variant.label}{suffix}",
                 without_line_directives(result["cuda"])),
                (f"{variant.label}:lines", f"{spec.name}-{variant.label}-lines{suffix}",
                 result["cuda"])):
            # The content hash in the folder name keeps a stale browser cache from lying.
            digest = hashlib.sha256(text.encode()).hexdigest()[:12]
            relative = f"{DOWNLOAD_DIR}/{digest}/{name}"
            write_if_changed(Path(app.outdir, relative), text, durable=False)
            uris[key] = relative_uri(page, relative)
        if result.get("sass"):
            digest = hashlib.sha256(result["sass"].encode()).hexdigest()[:12]
            relative = f"{DOWNLOAD_DIR}/{digest}/{spec.name}-{variant.label}.sass"
            write_if_changed(Path(app.outdir, relative), result["sass"])
            uris[f"{variant.label}:sass"] = relative_uri(page, relative)
    return uris


def _add_static(app: Sphinx, config: Config) -> None:
    # On config-inited, before the saved environment's config is compared with this one:
    # later, the change would make every incremental build rewrite every page.
    if str(STATIC) not in config.html_static_path:
        config.html_static_path.append(str(STATIC))
    app.add_css_file("tlstages.css")
    app.add_js_file("tlstages.js", loading_method="defer")


def setup_html(app: Sphinx) -> None:
    """Register the HTML visitors and the stylesheet."""
    # HTML only: every other builder gets the summaries in a list (see .plain), which
    # it would not if it had a visitor of its own here.
    app.add_node(tl_collapsible, html=(visit_collapsible, depart_collapsible))
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


_HINT = ("In each {language} listing, the first number of a line is its own (as the hazard "
         "check's sentences and the downloadable file count them), the second the kernel "
         "line it came from, as the compiler's <code>#line</code> directives say{metal} "
         "(<em>in italics</em>: expanded from a TileLang template for the tile operation on "
         "that line; TL: a template line no single kernel line accounts for; blank: "
         "inserted by the compiler).")
# TileLang prints Metal without #line directives: the worker writes them from the spans of
# the IR the code was printed from (worker.ir.source_lines).
_METAL_HINT = (" (for Metal, which TileLang prints without them, the source lines its IR "
               "records for each statement)")
_UNSHOWN_HINT = (" A number underlined with dots is a line of the kernel file that this listing "
                 "leaves out; its tooltip says which.")


def _anchors(holder: nodes.Element) -> dict[str, dict[int, str]]:
    """Variant label -> listing line -> id, for each CUDA line a sentence of the parts
    links to (:func:`..render.cuda_refs.cuda_lines`)."""
    found: dict[str, dict[int, str]] = {}
    for ref in holder.findall(nodes.reference):
        if "tl-cuda-ref" in ref["classes"]:
            found.setdefault(ref["tl_variant"], {})[ref["tl_line"]] = ref["refuri"][1:]
    return found


def link_listings(app: Sphinx, spec: DirectiveSpec,
                  rows: list[tuple[VariantSpec, Result]], holder: nodes.Element,
                  max_lines: int) -> None:
    """Write every full CUDA listing line by line, each line numbered (as the hazard
    check's sentences and the downloadable file number it) and those a sentence cites
    given the id it links to; where the page lists the kernel, each line linked to the
    kernel line it came from, and the kernel listing to them."""
    ok = {v.label: (v, r) for v, r in merge_unchanged(rows)[0] if r.get("ok")}
    # The CUDA listings only: the SASS listings of the resources part name their variant
    # too, and their text is no CUDA.
    listings = [node for node in holder.findall(tl_collapsible) if node.get("variant") in ok
                and "tl-cuda-item" in node["classes"]]
    if not listings:
        return
    source = next((c for c in holder.findall(nodes.container) if "tl-source" in c["classes"]),
                  None)
    anchors = _anchors(holder)
    first = spec.kernel_line or 1
    kernel = spec.variants[0].source
    listing = spec.listing or Listing(kernel)
    per_variant = []
    sass: list[dict[int, str]] = []
    for node in listings:
        variant, result = ok[node["variant"]]
        mapped = source_map(result["cuda"], variant.source_name)[:max_lines]
        links = line_links.attribute(mapped, kernel) if source is not None else None
        if links is not None:
            per_variant.append((variant.heading, line_links.counts(links),
                                variant.target.language))
            sass.append(sass_words(result.get("sass_lines")))
        block = next(iter(node.findall(nodes.literal_block)))
        unshown = None if not listing.cut else (variant.source_name, listing.shows)
        block.replace_self(nodes.raw("", line_links.cuda_html(
            mapped, links, first, variant.heading, unshown, anchors.get(variant.label)),
            format="html"))
    if source is None:
        return
    block = next(iter(source.findall(nodes.literal_block)))
    prefix = f"{spec.node_id}-src"
    # The listed part only, numbered as in the whole kernel: the spans' numbers stay
    # the kernel's (see line_links.source_html).
    highlighted = app.builder.highlighter.highlight_block(  # type: ignore[attr-defined]
        listing.text, "python", linenos="inline", linenostart=first + listing.start - 1,
        linespans=prefix, location=block, hl_lines=list(listing.emphasize))
    html = line_links.source_html(highlighted, prefix, first, per_variant, sass)
    hint = _UNSHOWN_HINT if listing.cut else ""
    targets = [ok[node["variant"]][0].target for node in listings]
    languages = {target.language for target in targets}
    said = _HINT.format(language=languages.pop() if len(languages) == 1 else "generated",
                        metal=_METAL_HINT if any(t.kind == "metal" for t in targets) else "")
    block.replace_self(nodes.raw(
        "", f'<div class="highlight-python notranslate tl-linked-source">{html}</div>\n'
            f'<p class="tl-note tl-link-hint">{said}{hint}</p>\n'
            '<p class="tl-link-status" aria-live="polite"></p>\n', format="html"))


def _captions(holder: nodes.Element) -> None:
    """The kernel listing's caption as Sphinx writes a code block's: the translator's own
    visitor would look the caption up among the page's numbered figures, which a
    fragment written here (perhaps before the page) has no access to."""
    for caption in list(holder.findall(nodes.caption)):
        text = html_escape(caption.astext())
        caption.replace_self(nodes.raw(
            "", f'<div class="code-block-caption"><span class="caption-text">{text}'
                "</span></div>\n", format="html"))


@functools.cache
def _renderer_stamp() -> str:
    """The rendering code and every package module it uses (the core's included): an
    edited renderer must not reuse old fragments (its version string alone would not
    change during development)."""
    return code_digest(RENDER_ROOTS)


# HTML settings that change how the parts are written; the rest of conf.py cannot.
_HTML_SETTINGS = ("highlight_language", "html_codeblock_linenos_style", "html_compact_lists",
                  "html_permalinks", "html_permalinks_icon", "html_secnumber_suffix")


def _content(result: Result) -> str:
    return hashlib.sha256(json.dumps({k: v for k, v in result.items() if k != "seconds"},
                                     sort_keys=True).encode()).hexdigest()


def _placeless(spec: DirectiveSpec) -> DirectiveSpec:
    """``spec`` without the absolute paths of this folder (a :file: kernel's, its import
    folders), which the page never shows: so that a fragment serves any folder or machine
    (``origin.where`` keeps those folders relative to ``conf.py``)."""
    variants = tuple(replace(v, origin=replace(v.origin, file=None, folders=()))
                     for v in spec.variants)
    return replace(spec, kernel_path=None, variants=variants)


def fragment_key(app: Sphinx, spec: DirectiveSpec,
                 rows: list[tuple[VariantSpec, Result]], context: Context,
                 digests: list[str | None] | None = None) -> str:
    """Everything the parts' HTML depends on: the spec (where it stands included), each
    result's content (its cache entry's digest where there is one), the attached numbers
    and links, and the writing toolchain."""
    known = digests or [None] * len(rows)
    results = [[variant.label, digest or _content(result)]
               for (variant, result), digest in zip(rows, known, strict=True)]
    blob = json.dumps([
        _renderer_stamp(), __version__, sphinx.__version__, pygments.__version__,
        docutils.__version__, app.builder.name,
        [repr(getattr(app.config, name, None)) for name in _HTML_SETTINGS],
        repr(_placeless(spec)), results, context.version, context.max_lines, context.downloads,
        context.bench, context.bench_stale, context.links, context.hardware,
        context.timelines, context.fit,
    ], sort_keys=True, default=repr)
    return hashlib.sha256(blob.encode()).hexdigest()


def _write_html(app: Sphinx, doctree: nodes.document, parts: list[nodes.Node]) -> str:
    """The HTML the builder's own translator writes for ``parts``."""
    # The writer's settings, as the builder will write the page (prepare_writing made them).
    settings = getattr(app.builder, "docsettings", doctree.settings)
    document = new_document(str(doctree.get("source", "")), settings)
    holder = nodes.container()
    holder.extend(parts)
    document += holder
    translator = app.builder.create_translator(document, app.builder)
    for node in parts:
        node.walkabout(translator)
    return "".join(translator.body)  # type: ignore[attr-defined]


def render_html(app: Sphinx, doctree: nodes.document, spec: DirectiveSpec,
                rows: list[tuple[VariantSpec, Result]], context: Context,
                cache: Cache, digests: list[str | None] | None = None,
                remote: Remote | None = None) -> nodes.container:
    """The directive for an HTML builder: the caption as nodes (so search finds it), the
    parts as HTML written once and reused while nothing they depend on changes.

    Writing the parts' tables and listings costs more than the rest of a warm build;
    the same HTML is inserted whether it came from the cache or was just written, so a
    cold and a warm build give identical pages. A fragment the local cache lacks is asked
    of the ``remote`` (and kept locally); one written here is stored there too, where the
    build may write: a fresh folder against a warm remote writes no listing again.
    """
    root = render_head(spec, rows, context)
    key = fragment_key(app, spec, rows, context, digests)
    html = cache.fragment(key)
    if html is None and remote is not None:
        html = remote.fragment(key)
        if html is not None:
            cache.put_fragment(key, html)
    if html is None:
        load_renderers()
        holder = nodes.container("", *render_parts(spec, rows, context))
        replace_undrawable(app, holder)
        _captions(holder)
        link_listings(app, spec, rows, holder, context.max_lines)
        highlight_cached(app, cache, holder)
        html = _write_html(app, doctree, list(holder.children))
        cache.put_fragment(key, html)
        if remote is not None:
            remote.write_fragment(key, html)
    root += nodes.raw("", html, format="html", classes=["no-search"])
    return root
