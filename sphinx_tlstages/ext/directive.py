"""The ``tl-pipeline`` directive: options and kernel in, a :class:`DirectiveSpec` out.

It lowers nothing: it checks what can be checked from the text alone (options, syntax,
the factory and its parameters), records the spec in the environment and leaves a
placeholder that :mod:`.render` fills once the whole project has been lowered.
"""

from __future__ import annotations

import difflib
import functools
import os
import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import ClassVar

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.util.docutils import SphinxDirective

from ..core import parts
from ..core.errors import OptionError, SourceError
from ..core.kernel.listing import Listing
from ..core.kernel.source import find_factories, normalise_source, parse_kernel
from ..core.plan import options
from ..core.plan.spec import DirectiveSpec, KernelOrigin, Problem, Unread, kernel_location
from ..core.plan.targets import parse_targets
from ..core.planner import Defaults, Kernel, parse_asserts, plan
from ..core.records import snapshots
from ..core.records.snapshot_policy import Policy
from .boxes import error_box
from .collector import directives as directives_of
from .collector import unread as unread_of
from .listing import OPTIONS as LISTING_OPTIONS
from .listing import ListingError, read_listing
from .lowering.prestart import directive_read
from .nodes import tl_pipeline_placeholder
from .reread import say
from .state import settings

INLINE_SOURCE_NAME = "kernel.py"

# Every option, once: the option_spec and the reference page are both made from this.
OPTIONS: dict[str, str] = {
    "num-stages": "num_stages values to lower, space or comma separated (default "
                  "``tlstages_num_stages``); a kernel that fixes its depth "
                  "(``T.Pipelined(..., num_stages=3)``) lowers as written, with that value "
                  "only.",
    "target": "An NVIDIA arch (``sm_75`` to ``sm_121a``: ``sm_80``, ``sm_90a``, ``sm_100a``), "
              "an AMD GPU (``gfx942``, ``gfx950``), Apple's GPUs (``metal``; ``metal4`` "
              "for the target TileLang picks on an Apple M5 or later), ``cuda "
              "-arch=sm_90a``, ``hip -mcpu=gfx942`` or a JSON target dict (default "
              "``tlstages_target``); never ``auto``. Several (``sm_80 sm_90a metal``, or any "
              "spellings separated by ``;``) lower every variant for each. WebGPU, "
              "TileLang's CPU target and Ascend are refused, saying why.",
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
    "show": parts.reference(),
    "diff": "``consecutive``, ``baseline`` (each against the first value) or ``none``.",
    "timeout": "Seconds one variant may take to lower (default ``tlstages_timeout``).",
    "expect-error": "num_stages values that must fail, each on every target or on one "
                    "(``sm_89:4``) and, in a sweep, for every combination or for the swept "
                    "values named (``block_N=128:2``, ``sm_90a:block_N=128:2``: each "
                    "``param=value`` written as in ``:sweep:``, without spaces, commas or "
                    "colons), optionally ``VALUES: regex`` on the message; a listed variant "
                    "that lowers is an error. For chapters that teach limits.",
    "expect-hazard": "num_stages values the hazard check must flag, as for ``:expect-error:`` "
                     "(``2 3``, ``sm_90a:2``, ``block_N=128:2``, ``2: RAW on S``: a regex one "
                     "finding must match); each finding is then a note, not a warning, and a "
                     "listed variant without one is an error. For chapters about compiler "
                     "bugs.",
    "assert": "Claims checked on every build, one Python expression per line over each "
              "lowered variant's facts (``max(sync[\"cp_async_wait\"]) == num_stages - 1``, "
              "``shared[\"A_shared\"].shape[-2:] == (128, 64)``, ``gemm[0] == (\"wgmma\" "
              "if target == \"sm_90a\" else \"mma_sync\")``; every name is listed below); a "
              "false one fails the build at its line, with the value of each name it "
              "compared. In MyST, give several lines as a YAML block (``assert: |``).",
    "reference": "For ``tlstages bench``: a Python expression over the kernel's tensors by "
                 "parameter name (``A @ B.T``); the result is checked against it, and it is "
                 "timed too.",
    "flops": "For ``tlstages bench``: floating-point operations per launch, an expression "
             "over the params (``2 * M * N * K``), for TFLOP/s.",
    "tolerance": "For ``tlstages bench``: the largest error against ``:reference:``, "
                 "relative to its largest value (default by dtype: 1e-2 for float16).",
    "hardware": "For ``tlstages hardware`` (or ``tlstages bench --hazards``) on a machine "
                "with an NVIDIA GPU: each variant is launched under compute-sanitizer's "
                "``racecheck`` (asynchronous copies included) and ``synccheck``, and what "
                "they observe is shown beside the hazard check's verdict. Empty, or "
                "``NAME=VALUE`` for a size known only at launch (``seqlen=129``; default "
                "the size a finding names, else 256), ``blocks=0,-1`` (the blocks launched, "
                "by linear index, -1 the last; default the first and the last) and "
                "``launches=2``.",
    "timeline": "For ``tlstages timeline``: num_stages values whose measured timeline is "
                "recorded on a GPU and drawn under the schedule figures (``1 2 3 4``, "
                "``sm_90a:3``; empty: every variant): the code the page lists, with a "
                "probe at each wait, commit, barrier and tensor-core call of its "
                "pipelined loops.",
}

# Options whose value can be checked alone, for reporting every bad one in a build.
_CHECKED_ALONE: dict[str, Callable[[str], object]] = {
    "name": options.parse_name, "num-stages": options.parse_num_stages,
    "target": parse_targets, "params": options.parse_params, "show": parts.parse_show,
    "diff": options.parse_diff, "timeout": options.parse_timeout,
    "expect-error": options.parse_expect_error, "expect-hazard": options.parse_expect_error,
    "sweep": options.parse_sweep, "passes": options.parse_passes,
    "reference": options.parse_expression, "flops": options.parse_expression,
    "tolerance": options.parse_tolerance, "hardware": options.parse_hardware,
    "timeline": options.parse_timeline,
}


class _Options(dict[str, Callable[[str], object]]):
    """The option_spec: every option's value as written (parsed in ``_spec``, where a bad
    one is said at its own line), and an unknown option kept too, to be said and ignored
    there: docutils would otherwise drop the whole directive over a misspelt name."""

    def __missing__(self, key: str) -> Callable[[str], object]:
        return directives.unchanged


class TlPipelineDirective(SphinxDirective):
    """``.. tl-pipeline:: [title]`` with a kernel as content or from ``:file:``."""

    has_content = True
    optional_arguments = 1
    final_argument_whitespace = True
    option_spec: ClassVar[dict[str, Callable[[str], object]]] = _Options(
        (name, directives.unchanged) for name in OPTIONS)

    def run(self) -> list[nodes.Node]:
        count = int(self.env.temp_data.get("tlstages_count") or 0) + 1
        self.env.temp_data["tlstages_count"] = count
        self._kernel_line: int | None = None
        self._kernel_path: Path | None = None
        self._problems: list[Problem] = []
        self._unknown_options()
        try:
            spec = self._spec(count)
        except (OptionError, SourceError) as exc:
            return self._unread(exc, count)
        spec = replace(spec, problems=(*self._problems, *spec.problems), serial=count)
        for problem in spec.problems[len(self._problems):]:
            self._say(problem.message, "option", (self.env.docname, problem.line))
        directives_of(self.env).setdefault(self.env.docname, []).append(spec)
        directive_read(self.config, spec)
        std = self.env.domains.standard_domain
        if spec.name not in std.labels:  # a duplicate is reported once, with both places
            std.note_hyperlink_target(spec.name, self.env.docname, spec.node_id, spec.title)
        # Its own document's name: assembled builders resolve it under the root's.
        placeholder = tl_pipeline_placeholder(name=spec.name, docname=self.env.docname,
                                              serial=count, ids=[spec.node_id])
        self.set_source_info(placeholder)
        if not spec.in_error:
            return [placeholder]
        # The page says what it leaves out, above what the other options allow.
        box = error_box([f"{len(spec.problems)} option value(s) in error, ignored or cut "
                         "to their good part (the snapshot is neither written nor removed "
                         "until they are fixed):",
                         *(str(p) for p in spec.problems)])
        return [box, placeholder]

    def _say(self, message: str, subtype: str, location: tuple[str, int] | str) -> None:
        say(self.env, message, subtype, location)

    def _unread(self, exc: OptionError | SourceError, count: int) -> list[nodes.Node]:
        """A directive that cannot be read at all: every problem said at its line, the
        error where it stands, and the directive kept as unread (its snapshot is neither
        written nor removed: see the snapshot policy)."""
        said = {p.message for p in self._problems}
        for problem in exc.problems or ():
            assert isinstance(problem, Problem)
            if problem.message not in said:
                said.add(problem.message)
                self._problems.append(problem)
                self._say(problem.message, "option", (self.env.docname, problem.line))
        if isinstance(exc, OptionError):
            line = exc.line or self.lineno
            self._say(str(exc), "option", (self.env.docname, line))
        else:
            where = self._kernel_location(exc.line)
            line = where[1] if isinstance(where, tuple) else self.lineno
            self._say(str(exc), "source", where)
        said.add(str(exc))
        self._report_others(exc, said)
        name = self._name(count)
        unread_of(self.env).setdefault(self.env.docname, []).append(
            Unread(name, self.env.docname, self.lineno, Problem(str(exc), line)))
        return [error_box([str(exc), *(p.message for p in self._problems)])]

    def _name(self, count: int) -> str | None:
        """The directive's name, where it can be told: its :name:, or the default."""
        default = f"{self.env.docname.replace('/', '-')}-{count}"
        try:
            return options.parse_name(self.options.get("name", default))
        except OptionError:
            return None

    def _written_options(self) -> list[str]:
        """The options as written: MyST drops (with its own warning) those the
        directive does not have before it runs, so they are read from its lines."""
        if not self._is_myst():
            return list(self.options)
        lines = self._lines[1:]
        if lines and lines[0].strip() == "---":
            block = lines[1:lines.index("---", 1)] if "---" in lines[1:] else []
            return [line.split(":", 1)[0].strip() for line in block
                    if line[:1] not in (" ", "\t", "#", "") and ":" in line]
        written = []
        for line in lines:
            match = re.match(r":([A-Za-z][\w-]*):", line.strip())
            if match is None:
                break
            written.append(match.group(1))
        return written

    def _unknown_options(self) -> None:
        """Each option this directive does not have: said at its line, with the names it
        may mean, and ignored."""
        for option in [o for o in self._written_options() if o not in OPTIONS]:
            close = difflib.get_close_matches(option, list(OPTIONS), n=2, cutoff=0.6)
            hint = f"; did you mean {' or '.join(f':{c}:' for c in close)}?" if close else \
                f" (options: {', '.join(OPTIONS)})"
            problem = Problem(f":{option}: is not an option of tl-pipeline{hint} (ignored)",
                              self._option_line(option))
            self._problems.append(problem)
            self._say(problem.message, "option", (self.env.docname, problem.line))
            self.options.pop(option, None)

    # --- where things are ----------------------------------------------------------

    def _option_line(self, option: str) -> int:
        lines = self._lines
        # MyST's YAML block (``---`` under the fence): ``option: value``, unindented.
        yaml = self._is_myst() and len(lines) > 1 and lines[1].strip() == "---"
        for offset, line in enumerate(lines):
            if line.strip().startswith(f":{option}:") \
                    or (yaml and offset > 1 and line.startswith(f"{option}:")):
                return int(self.lineno) + offset
            if yaml and offset > 1 and line.strip() == "---":
                break
        return int(self.lineno)

    def _value_line(self, option: str) -> int:
        """The line the option's value begins on: under a YAML block scalar's
        ``option: |``, the next one."""
        line = self._option_line(option)
        lines = self._lines
        offset = line - int(self.lineno)
        written = lines[offset].strip() if 0 <= offset < len(lines) else ""
        block = written.startswith(f"{option}:") \
            and written.removeprefix(f"{option}:").strip()[:1] in ("|", ">")
        return line + 1 if block else line

    @functools.cached_property
    def _lines(self) -> list[str]:
        """The directive as written, from its first line: its options are found here.
        MyST-Parser 5 gives that as ``block_text``; MyST-Parser 4 gives the content alone,
        so the lines are read from the document's source (the fence, the options, the
        content and the closing fence), once per directive: every option's line is
        looked up here."""
        lines = self.block_text.splitlines()
        if not self._is_myst() or (lines and lines[0].lstrip()[:3] in ("```", "~~~", ":::")):
            return lines
        source, _ = self.get_source_info()
        try:
            text = Path(source).read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError, TypeError):
            return lines
        start = int(self.lineno) - 1
        return text[start:start + int(self.content_offset) + len(self.content) + 2]

    def _is_myst(self) -> bool:
        return type(self.state).__module__.startswith("myst_parser")

    def _content_line(self) -> int:
        # MyST counts content_offset from the fence, docutils from the document start.
        if self._is_myst():
            return int(self.lineno + self.content_offset) + 1
        return int(self.content_offset) + 1

    def _kernel_location(self, line: int | None) -> tuple[str, int] | str:
        path = str(self._kernel_path) if self._kernel_path else None
        return kernel_location(self.env.docname, self.lineno, self._kernel_line, path, line)

    def _kernel(self) -> Kernel:
        """The kernel: inline, or read from ``:file:``."""
        self._check_continuation()
        file = self.options.get("file")
        if file and self.content:
            raise OptionError("give the kernel inline or with :file:, not both",
                              self._option_line("file"))
        if not file:
            if not self.content:
                raise OptionError("no kernel: write it as the directive's content or use :file:")
            self._kernel_line = self._content_line()
            return Kernel(normalise_source("\n".join(self.content)), INLINE_SOURCE_NAME,
                          self._origin(), self._kernel_line)
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
        return Kernel(normalise_source(text), path.name, self._origin(), None, str(path))

    def _spec(self, count: int) -> DirectiveSpec:
        config = settings(self.config)
        defaults = Defaults(targets=config.targets, num_stages=config.num_stages,
                            show=config.show, diff=config.diff, timeout=config.timeout,
                            toolkit=config.toolkit)
        given = {k: v for k, v in self.options.items() if k not in LISTING_OPTIONS}
        kernel = self._kernel()
        listed = None if "factory" in given else self._listed(kernel.source)
        if listed is not None:  # listing one of several factories says which is meant
            given["factory"] = listed
        spec = plan(given, kernel, defaults,
                    name=f"{self.env.docname.replace('/', '-')}-{count}",
                    docname=self.env.docname, lineno=self.lineno,
                    title=self.arguments[0] if self.arguments else None,
                    line_of=self._value_line, overridden=self._overridden, tolerant=True)
        spec = snapshots.fingerprinting(spec, self._writes_snapshots())
        return replace(spec, node_id=nodes.make_id(f"tl-{spec.name}"),
                       listing=self._listing(spec.variants[0].source,
                                             spec.variants[0].factory))

    def _writes_snapshots(self) -> bool:
        """Whether this build may write a snapshot from its results or explain a drift in
        them, so its variants take the pass fingerprints: the snapshot policy's
        :attr:`~..core.records.snapshot_policy.Policy.writes` (snapshots recorded or
        updated: ``auto`` where the docs are written, ``update``), not where they are only
        checked (``check``, CI's strict ``auto``) nor off. A drift found where they were
        not taken has its variants lowered again, taking them."""
        config = settings(self.config)
        return Policy(config.snapshot_mode, config.strict).writes

    def _overridden(self, option: str, message: str) -> None:
        """An option the kernel overrides (it sets its depth itself): a warning at the
        option's line; the page shows the kernel as written."""
        self._say(f":{option}: {message}", "option",
                  (self.env.docname, self._option_line(option)))

    def _listing(self, source: str, factory: str) -> Listing | None:
        """The part of the kernel to list; on a bad value, a warning at the option's line
        and the whole kernel (with the caption, if one was given)."""
        path = str(self._kernel_path) if self._kernel_path else None
        try:
            return read_listing(source, path, self.options, factory, self.config)
        except ListingError as exc:
            problem = Problem(f"{exc}; the whole kernel is listed",
                              self._option_line(exc.option))
            self._problems.append(problem)
            self._say(problem.message, "option", (self.env.docname, problem.line))
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

    def _listed(self, source: str) -> str | None:
        """The factory ``:pyobject:`` names, where it names one: listing one of several
        factories says which is meant, as ``:factory:`` would."""
        listed = self.options.get("pyobject", "").strip()
        if not listed:
            return None
        try:
            found = find_factories(parse_kernel(source, INLINE_SOURCE_NAME))
        except SourceError:
            return None  # reported when the kernel is parsed for real
        usable = {f.name for f in found if f.kind != "plain" or f.depth is not None}
        return listed if listed in usable else None

    def _check_continuation(self) -> None:
        """MyST ends an option at its line's end: an indented line under it is the first
        line of the kernel. Say so at the option, with what to write instead."""
        if not self._is_myst() or not self.content or not self.content[0][:1].isspace():
            return
        lines = self._lines
        at = next((i for i, line in enumerate(lines) if line == self.content[0]), None)
        if at is None or at < 2 or not lines[at - 1].startswith(":"):
            return
        option = lines[at - 1].split(":")[1]
        raise OptionError(
            f":{option}: its value goes on under it, indented, but MyST reads only the "
            f"option's own line: the indented line is taken as the kernel. Write several "
            f"lines as a YAML block under the fence instead:\n---\n{option}: |\n  "
            f"{lines[at - 1].split(':', 2)[2].strip()}\n  {self.content[0].strip()}\n---",
            int(self.lineno) + at - 1)

    def _report_others(self, first: Exception, said: set[str]) -> None:
        """Every other option with a bad value, each at its own line: one build reports
        all of them, not only the first met (where the kernel itself could not be read,
        the planner never saw them)."""
        for option, parser in _CHECKED_ALONE.items():
            if option not in self.options:
                continue
            try:
                parser(self.options[option])
            except OptionError as exc:
                problem = OptionError(f":{option}: {exc}", self._value_line(option))
                assert problem.line is not None
            else:
                continue
            if not any(str(problem) in known for known in said):
                said.add(str(problem))
                self._problems.append(Problem(str(problem), problem.line or self.lineno))
                self._say(str(problem), "option", (self.env.docname, problem.line))
        try:
            parse_asserts(self.options, self._value_line)
        except OptionError as exc:
            if not any(str(exc) in known for known in said):
                self._problems.append(Problem(str(exc), exc.line or self.lineno))
                self._say(str(exc), "option", (self.env.docname, exc.line or self.lineno))
