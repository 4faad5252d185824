"""The ``tl-pipeline`` directive: options and kernel in, a :class:`DirectiveSpec` out.

It lowers nothing: it checks what can be checked from the text alone (options, syntax,
the factory and its parameters), records the spec in the environment and leaves a
placeholder that :mod:`.render` fills once the whole project has been lowered.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar, TypeVar

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.util.docutils import SphinxDirective

from ..core.claims import names_used, reads_passes
from ..core.errors import OptionError, SourceError
from ..core.kernel.listing import Listing
from ..core.kernel.source import normalise_source
from ..core.plan import options
from ..core.plan.spec import DirectiveSpec, KernelOrigin, canonical_params, kernel_location
from ..core.plan.targets import parse_targets
from ..core.plan.toolkit import find as find_toolkit
from ..core.plan.variants import (
    OptionClash,
    depth_of,
    depths,
    kernel_factory,
    matrix,
    with_toolkit,
    written_depth,
)
from ..core.results.fact_table import BY_NAME
from .collector import directives as directives_of
from .listing import OPTIONS as LISTING_OPTIONS
from .listing import ListingError, read_listing
from .lowering.prestart import directive_read
from .messages import warn
from .nodes import tl_pipeline_placeholder
from .state import settings

INLINE_SOURCE_NAME = "kernel.py"

# Every option, once: the option_spec and the reference page are both made from this.
OPTIONS: dict[str, str] = {
    "num-stages": "num_stages values to lower, space or comma separated (default "
                  "``tlstages_num_stages``); a kernel that fixes its depth "
                  "(``T.Pipelined(..., num_stages=3)``) lowers as written, with that value "
                  "only.",
    "target": "An NVIDIA arch (``sm_75`` to ``sm_121a``: ``sm_80``, ``sm_90a``, ``sm_100a``), "
              "an AMD GPU (``gfx942``, ``gfx950``), ``cuda -arch=sm_90a``, ``hip "
              "-mcpu=gfx942`` or a JSON target dict (default ``tlstages_target``); never "
              "``auto``. Several (``sm_80 sm_90a gfx942``, or any spellings separated by "
              "``;``) lower every variant for each.",
    "params": "``KEY=VALUE`` Python literals passed to the factory as keywords; TileLang "
              "dtypes and enum constants as its examples write them (``T.bfloat16``, "
              "``T.GemmWarpPolicy.FullRow``).",
    "sweep": "Factory parameters to sweep besides num_stages, ``KEY=V1,V2`` each "
             "(``block_K=32,64``): every combination, times each num_stages and target, is "
             "a variant with its own column.",
    "passes": "Compiler passes whose IR before and after is shown as collapsible diffs, "
              "``InjectSoftwarePipeline`` or ``tl.InjectSoftwarePipeline`` (every run of "
              "it) or ``Simplify#3`` (its third run).",
    "factory": "Which top-level function builds the kernel, when the source defines several.",
    "file": "A ``.py`` file instead of inline content, resolved like ``literalinclude``; it "
            "must be inside the source directory or a folder of ``tlstages_file_roots``.",
    # Listing options: literalinclude's, cutting what the Kernel part lists (not what is
    # lowered).
    **LISTING_OPTIONS,
    "name": "Stable identifier, unique in the project: the snapshot's file name and a "
            "``:ref:`` target (default ``<docname>-<n>``, which moves when a directive is "
            "inserted above: name every directive).",
    "show": "Any of ``" + " ".join(options.SHOW_PARTS) + "`` (default ``tlstages_show``): "
            "``chart`` draws the benchmark numbers, ``figure`` the pipeline schedule.",
    "diff": "``consecutive``, ``baseline`` (each against the first value) or ``none``.",
    "timeout": "Seconds one variant may take to lower (default ``tlstages_timeout``).",
    "expect-error": "num_stages values that must fail, each on every target or on one "
                    "(``sm_89:4``), optionally ``VALUES: regex`` on the message; a listed "
                    "variant that lowers is an error. For chapters that teach limits.",
    "expect-hazard": "num_stages values the hazard check must flag, as for ``:expect-error:`` "
                     "(``2 3``, ``sm_90a:2``, ``2: RAW on S``: a regex one finding must "
                     "match); each finding is then a note, not a warning, and a listed "
                     "variant without one is an error. For chapters about compiler bugs.",
    "assert": "Claims checked on every build, one Python expression per line over each "
              "lowered variant's facts (``shared[\"A_shared\"].shape[0] == num_stages``, "
              "``max(sync[\"cp_async_wait\"]) == num_stages - 1``, ``gemm[0] == "
              "\"wgmma\"``, ``tmem[\"C_tmem\"].columns == 128``); a false one fails the "
              "build at its line.",
    "reference": "For ``tlstages bench``: a Python expression over the kernel's tensors by "
                 "parameter name (``A @ B.T``); the result is checked against it, and it is "
                 "timed too.",
    "flops": "For ``tlstages bench``: floating-point operations per launch, an expression "
             "over the params (``2 * M * N * K``), for TFLOP/s.",
    "tolerance": "For ``tlstages bench``: the largest error against ``:reference:``, "
                 "relative to its largest value (default by dtype: 1e-2 for float16).",
}
_T = TypeVar("_T")


def error_box(message: str) -> nodes.Element:
    """What the page shows in place of a directive that could not be used."""
    return nodes.error("", nodes.paragraph(text=f"tl-pipeline: {message}"),
                       classes=["tl-error"])


class TlPipelineDirective(SphinxDirective):
    """``.. tl-pipeline:: [title]`` with a kernel as content or from ``:file:``."""

    has_content = True
    optional_arguments = 1
    final_argument_whitespace = True
    # Values are parsed in _spec, where a bad one becomes a warning at its own line.
    option_spec: ClassVar[dict[str, Callable[[str], object]]] = {
        name: directives.unchanged for name in OPTIONS
    }

    def run(self) -> list[nodes.Node]:
        count = int(self.env.temp_data.get("tlstages_count") or 0) + 1
        self.env.temp_data["tlstages_count"] = count
        self._kernel_line: int | None = None
        self._kernel_path: Path | None = None
        try:
            spec = self._spec(count)
        except OptionError as exc:
            warn(str(exc), "option", location=(self.env.docname, exc.line or self.lineno))
            return [error_box(str(exc))]
        except SourceError as exc:
            warn(str(exc), "source", location=self._kernel_location(exc.line))
            return [error_box(str(exc))]
        directives_of(self.env).setdefault(self.env.docname, []).append(spec)
        directive_read(self.config, spec)
        std = self.env.domains.standard_domain
        if spec.name not in std.labels:  # a duplicate is reported once, with both places
            std.note_hyperlink_target(spec.name, self.env.docname, spec.node_id, spec.title)
        # Its own document's name: assembled builders resolve it under the root's.
        placeholder = tl_pipeline_placeholder(name=spec.name, docname=self.env.docname,
                                              ids=[spec.node_id])
        self.set_source_info(placeholder)
        return [placeholder]

    # --- where things are ----------------------------------------------------------

    def _option_line(self, option: str) -> int:
        for offset, line in enumerate(self.block_text.splitlines()):
            if line.strip().startswith(f":{option}:"):
                return int(self.lineno) + offset
        return int(self.lineno)

    def _content_line(self) -> int:
        # MyST counts content_offset from the fence, docutils from the document start.
        if type(self.state).__module__.startswith("myst_parser"):
            return int(self.lineno + self.content_offset) + 1
        return int(self.content_offset) + 1

    def _kernel_location(self, line: int | None) -> tuple[str, int] | str:
        path = str(self._kernel_path) if self._kernel_path else None
        return kernel_location(self.env.docname, self.lineno, self._kernel_line, path, line)

    # --- reading the options -------------------------------------------------------

    def _option(self, option: str, parser: Callable[[str], _T], default: str) -> _T:
        if option not in self.options:
            return parser(default)
        return self._given(option, parser)

    def _or(self, option: str, parser: Callable[[str], _T], configured: _T) -> _T:
        """The option's value, else the configured default (parsed once, in config)."""
        return self._given(option, parser) if option in self.options else configured

    def _given(self, option: str, parser: Callable[[str], _T]) -> _T:
        try:
            return parser(self.options[option])
        except OptionError as exc:
            raise OptionError(f":{option}: {exc}", self._option_line(option)) from None

    def _kernel(self) -> tuple[str, str]:
        """(normalised source, the file name it compiles under)."""
        file = self.options.get("file")
        if file and self.content:
            raise OptionError("give the kernel inline or with :file:, not both",
                              self._option_line("file"))
        if not file:
            if not self.content:
                raise OptionError("no kernel: write it as the directive's content or use :file:")
            self._kernel_line = self._content_line()
            return normalise_source("\n".join(self.content)), INLINE_SOURCE_NAME
        line = self._option_line("file")
        rel, absolute = self.env.relfn2path(file.strip(), self.env.docname)
        path = Path(absolute).resolve()
        roots = [Path(self.env.srcdir).resolve(), *settings(self.config).file_roots]
        if not any(path.is_relative_to(root) for root in roots):
            raise OptionError(f":file: {file} is outside the source directory and "
                              "tlstages_file_roots", line)
        if not path.is_file():
            raise OptionError(f":file: {file} is not a file (looked for {rel})", line)
        self.env.note_dependency(str(path))
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise OptionError(f":file: {file} cannot be read: {exc}", line) from None
        self._kernel_path = path
        return normalise_source(text), path.name

    def _spec(self, count: int) -> DirectiveSpec:
        config = settings(self.config)
        default_name = f"{self.env.docname.replace('/', '-')}-{count}"
        name = self._option("name", options.parse_name, default_name)
        num_stages = self._or("num-stages", options.parse_num_stages, config.num_stages)
        targets = self._or("target", parse_targets, config.targets)
        params = self._option("params", options.parse_params, "")
        show = self._or("show", options.parse_show, config.show)
        diff = self._or("diff", options.parse_diff, config.diff)
        timeout = self._or("timeout", options.parse_timeout, config.timeout)
        expected, pattern = self._option("expect-error", options.parse_expect_error, "") \
            if "expect-error" in self.options else ((), None)
        hazards, hazard_pattern = self._option("expect-hazard", options.parse_expect_error,
                                               "") \
            if "expect-hazard" in self.options else ((), None)
        source, source_name = self._kernel()
        sweep = self._option("sweep", options.parse_sweep, "") if "sweep" in self.options \
            else {}
        passes = self._option("passes", options.parse_passes, "") \
            if "passes" in self.options else ()
        origin = self._origin()
        try:
            factory = kernel_factory(source, source_name, self.options.get("factory"), params,
                                     sweep)
            arguments = {**params, **{k: v[0] for k, v in sweep.items()}}
            num_stages, unmet = depths(factory, num_stages, "num-stages" in self.options,
                                       arguments)
            if unmet:  # the kernel lowers as its author wrote it; the option is what to drop
                warn(f":num-stages: {unmet}", "option",
                     location=(self.env.docname, self._option_line("num-stages")))
            asserts = self._asserts()
            variants = matrix(source, source_name, factory.name, params, sweep, num_stages,
                              targets, passes, origin, factory.depth_param,
                              record_passes=any(reads_passes(e) for _, e in asserts),
                              depth_for=depth_of(factory))
            # The passes table compares variants: with one, it has nothing to show.
            if "passes" in show and len(variants) > 1:
                variants = tuple(variant.recording() for variant in variants)
            if "resources" in show \
                    or names_used(e for _, e in asserts) & set(BY_NAME["resources"].names):
                variants = with_toolkit(variants, find_toolkit(config.toolkit))
        except OptionClash as exc:
            raise OptionError(f":{exc.option}: {exc}", self._option_line(exc.option)) from None
        labels = [t.label for t in targets]
        for option, entries in (("expect-error", expected), ("expect-hazard", hazards)):
            for entry in entries:
                if entry.num_stages not in num_stages:
                    among = f"the depth the kernel fixes ({num_stages[0]}, as written)" \
                        if variants[0].as_written else "in :num-stages:"
                    raise OptionError(f":{option}: {entry.num_stages} is not {among}",
                                      self._option_line(option))
                if entry.target is not None and entry.target not in labels:
                    raise OptionError(f":{option}: {entry} names no target of this "
                                      f"directive ({', '.join(labels)})",
                                      self._option_line(option))
        return DirectiveSpec(
            name=name,
            docname=self.env.docname,
            lineno=self.lineno,
            kernel_line=self._kernel_line,
            kernel_path=str(self._kernel_path) if self._kernel_path else None,
            title=self.arguments[0] if self.arguments else f"Kernel {factory.name}",
            targets=targets,
            variants=variants,
            show=show,
            diff=diff,
            timeout=timeout,
            node_id=nodes.make_id(f"tl-{name}"),
            expect_error=expected,
            expect_pattern=pattern,
            expect_hazard=hazards,
            expect_hazard_pattern=hazard_pattern,
            asserts=asserts,
            reference=self._optional("reference", options.parse_expression),
            flops=self._optional("flops", options.parse_expression),
            tolerance=self._optional("tolerance", options.parse_tolerance),
            sweep=tuple((k, tuple(map(repr, v))) for k, v in sweep.items()),
            passes=passes,
            passes_line=self._option_line("passes"),
            params=canonical_params(params),
            written_depth=written_depth(factory, arguments),
            listing=self._listing(source, factory.name),
        )

    def _listing(self, source: str, factory: str) -> Listing | None:
        """The part of the kernel to list; on a bad value, a warning at the option's line
        and the whole kernel (with the caption, if one was given)."""
        path = str(self._kernel_path) if self._kernel_path else None
        try:
            return read_listing(source, path, self.options, factory, self.config)
        except ListingError as exc:
            warn(f"{exc}; the whole kernel is listed", "option",
                 location=(self.env.docname, self._option_line(exc.option)))
        caption = " ".join(self.options.get("caption", "").split())
        return Listing(source, caption=caption) if caption else None

    def _origin(self) -> KernelOrigin:
        """The kernel's folders for imports: a :file: kernel's own, then
        ``tlstages_python_path``; keyed by where they are relative to conf.py."""
        folders = [self._kernel_path.parent] if self._kernel_path else []
        config = settings(self.config)
        folders += config.python_path
        where = tuple(os.path.relpath(folder, config.confdir).replace(os.sep, "/")
                      for folder in folders)
        return KernelOrigin(str(self._kernel_path) if self._kernel_path else None,
                            tuple(map(str, folders)), where)

    def _asserts(self) -> tuple[tuple[int, str], ...]:
        if "assert" not in self.options:
            return ()
        first = self._option_line("assert")
        found = []
        for offset, line in enumerate(self.options["assert"].splitlines()):
            if line.strip():
                try:
                    found.append((first + offset, options.parse_expression(line)))
                except OptionError as exc:
                    raise OptionError(f":assert: {exc}", first + offset) from None
        return tuple(found)

    def _optional(self, option: str, parser: Callable[[str], _T]) -> _T | None:
        return self._given(option, parser) if option in self.options else None
