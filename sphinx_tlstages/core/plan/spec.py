"""What to lower: one :class:`VariantSpec` per variant, grouped by :class:`DirectiveSpec`.

A variant is identified by every input of its lowering (kernel text, factory, params,
num_stages, target, the passes whose IR is recorded) plus the TileLang build, this
extension's lowering code and its result schema; its key is the SHA-256 of that, so equal
inputs anywhere in a project are lowered once.
"""

from __future__ import annotations

import functools
import hashlib
import re
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from ..kernel.listing import Listing
from ..protocol.messages import Task
from ..results.result import RESULT_SCHEMA, Result
from ..results.stamps import lowering_stamp
from .options import Expected, Hardware
from .targets import Target
from .toolkit import Toolkit

if TYPE_CHECKING:
    from .fit import FitPlan


@dataclass(frozen=True)
class KernelOrigin:
    """Where a kernel's text lives, so that it imports what its module would import.

    ``folders`` (absolute) go first on the worker's import path: a ``:file:`` kernel's own
    folder, then ``tlstages_python_path``. ``where`` is the same, relative to ``conf.py``'s
    folder: what a key may depend on without depending on the machine.
    """

    file: str | None = None  # absolute path of a :file: kernel
    folders: tuple[str, ...] = ()
    where: tuple[str, ...] = ()


@dataclass(frozen=True)
class VariantSpec:
    """The inputs of one lowering, as plain data."""

    source: str
    source_name: str
    factory: str
    params: tuple[tuple[str, str], ...]  # (name, repr of the literal), as the author wrote them
    num_stages: int
    target: Target
    # Where the variant sits in its directive's matrix, e.g. (("block_K", "64"),
    # ("num_stages", "2")): names and headings only, never part of the key.
    axes: tuple[tuple[str, str], ...] = field(default=(), compare=False)
    # IR before/after these pass runs is recorded (``:passes:``); part of the key.
    ir_passes: tuple[str, ...] = ()
    origin: KernelOrigin = KernelOrigin()
    # On the page only: the num_stages values this column stands for, when they lowered
    # alike and are shown once (see core.plan.variants.merge_unchanged). Never in a key.
    merged: tuple[int, ...] = field(default=(), compare=False)
    # The factory parameter num_stages is given to; None: the kernel sets the depth itself
    # and is lowered as written (num_stages is then what it wrote). Part of the key, where
    # it is not the usual name.
    depth_param: str | None = "num_stages"
    # Whether the worker records what each pass run changed (the IR printed after every
    # run that changed it): the "passes" part, ``:passes:`` diffs and ``passes[...]`` in
    # an ``:assert:`` need it, and printing costs about a tenth of the lowering, so a
    # variant no page reads it for goes without. Part of the key, where it is asked for
    # (a variant that does not ask may take the result of one that does: see
    # ext/lowering/batch).
    record_passes: bool = False
    # Whether the worker takes the IR's fingerprint after each pass run (what a snapshot
    # keeps to name the pass behind a drift; the structural hash of every pass's output
    # costs about 2 % of a lowering): where a build may write a snapshot from the result
    # or explain a drift in it (see ext/directive).
    # Never part of the key, of equality nor of the repr (a page's fragments are keyed by
    # it): a result with them holds all of one without (see ext/lowering/batch), and one
    # without them is lowered again before a snapshot is written from it or a drift is
    # explained (ext/checks/snapshots).
    fingerprints: bool = field(default=True, compare=False, repr=False)
    # NVIDIA's compiler that builds the "resources" part, where the page shows it (and
    # the target is CUDA); where it came from is part of the key, its path is not.
    toolkit: Toolkit | None = None

    def __post_init__(self) -> None:
        # IR diffs of chosen passes are made of the same texts.
        if self.ir_passes and not self.record_passes:
            object.__setattr__(self, "record_passes", True)
        # Recording hashes every pass's output anyway: the fingerprints come free.
        if self.record_passes and not self.fingerprints:
            object.__setattr__(self, "fingerprints", True)

    def answered_by(self, result: Result) -> bool:
        """Whether ``result`` (of this variant's key) holds all this variant asks for: the
        pass fingerprints where it takes them (a failure has none to hold)."""
        return not self.fingerprints or not result.get("ok") or "pass_fingerprints" in result

    def recording(self) -> VariantSpec:
        """The same variant, recording its pass changes: its result holds all of this
        one's."""
        return replace(self, record_passes=True)

    def task(self) -> Task:
        """What a worker receives to lower this variant (:mod:`..protocol.messages`)."""
        return Task(source=self.source, source_name=self.source_name, factory=self.factory,
                    params=self.params, num_stages=self.num_stages,
                    target=self.target.as_dict, ir_passes=self.ir_passes,
                    file=self.origin.file, folders=self.origin.folders,
                    where=self.origin.where, depth_param=self.depth_param,
                    record_passes=self.record_passes, fingerprints=self.fingerprints,
                    toolkit=self.toolkit.payload if self.toolkit is not None else None)

    # Every lookup of a result asks for its key; the inputs are frozen, so compute it once.
    @functools.cache  # noqa: B019 - specs live as long as the build
    def key(self, stamp: str) -> str:
        """Content address of the result (:meth:`..protocol.messages.Task.key`)."""
        return self.task().key(stamp)

    def key_parts(self, stamp: str) -> dict[str, str]:
        """Each part of the key, readable (the kernel as a digest and its length), for
        ``tlstages explain``."""
        digest = hashlib.sha256(self.source.encode()).hexdigest()[:12]
        return {
            "kernel source": f"{digest} ({len(self.source.splitlines())} lines)",
            "kernel file name": self.source_name,
            "factory": self.factory,
            "params": " ".join(f"{k}={v}" for k, v in sorted(self.params)) or "(none)",
            "num_stages": str(self.num_stages) + (
                " (as written in the kernel)" if self.as_written else
                f" (given as {self.depth_param})" if self.depth_param != "num_stages" else ""),
            "target": self.target.canonical,
            "passes recorded": " ".join(self.ir_passes) or "(none)",
            "pass changes recorded": "yes" if self.record_passes else "no",
            "NVIDIA compiler": self.toolkit.origin if self.toolkit else "(none)",
            "TileLang build": stamp,
            "result schema": str(RESULT_SCHEMA),
            "sphinx-tlstages lowering code": lowering_stamp(),
        }

    @property
    def stages(self) -> str:
        """The num_stages value, or those of a merged column: ``1 2``, or a range (1-4)."""
        values = self.merged or (self.num_stages,)
        if len(values) > 2 and list(values) == list(range(values[0], values[0] + len(values))):
            return f"{values[0]}–{values[-1]}"
        return " ".join(map(str, values))

    @property
    def only_num_stages(self) -> bool:
        return not self.axes or [name for name, _ in self.axes] == ["num_stages"]

    @property
    def id(self) -> str:
        """The variant's key in snapshots and bench files: ``2``, or
        ``block_K=64,num_stages=2`` in a matrix."""
        if self.only_num_stages:
            return str(self.num_stages)
        return ",".join(f"{name}={value}" for name, value in self.axes)

    @property
    def label(self) -> str:
        """A file-name-safe short name: ``ns2``, ``sm_80-block_K64-ns2``."""
        stages = self.stages.replace("–", "-")
        if self.only_num_stages:
            return re.sub(r"[^A-Za-z0-9._-]+", "_", f"ns{stages}")
        words = [value if name == "target" else
                 f"ns{stages}" if name == "num_stages" else f"{name}{value}"
                 for name, value in self.axes]
        return re.sub(r"[^A-Za-z0-9._-]+", "_", "-".join(words)).strip("_")

    @property
    def heading(self) -> str:
        """A column heading: ``num_stages=2``, ``sm_80, block_K=64, num_stages=2``,
        ``num_stages=3 (as written)``."""
        stages = f"num_stages={self.stages}" + (" (as written)" if self.as_written else "")
        if self.only_num_stages:
            return stages
        return ", ".join(value if name == "target" else stages if name == "num_stages" else
                         f"{name}={value}" for name, value in self.axes)

    @property
    def as_written(self) -> bool:
        """The kernel sets its own pipeline depth (see :class:`~..kernel.depth.Depth`)."""
        return self.depth_param is None


@dataclass(frozen=True)
class Problem:
    """An option in error, or why a directive could not be read: the message the build
    log gave, and the document line it gave it at."""

    message: str
    line: int

    def __str__(self) -> str:
        return f"line {self.line}: {self.message}"


@dataclass(frozen=True)
class Unread:
    """A directive that could not be read at all (a missing :file:, a syntax error, a
    param the factory needs and lacks): nothing of it is lowered, and its snapshot, if
    it has one, is kept as it is. ``name``: its ``:name:`` (or the default name); None
    where ``:name:`` itself is in error, so that no snapshot can be told to be its."""

    name: str | None
    docname: str
    lineno: int
    problem: Problem


@dataclass(frozen=True)
class DirectiveSpec:
    """One ``tl-pipeline`` directive: where it stands, what it lowers, what it shows."""

    name: str
    docname: str
    lineno: int
    kernel_line: int | None  # document line of the kernel's first line (inline kernels)
    kernel_path: str | None  # absolute path of a :file: kernel, for messages only
    title: str
    targets: tuple[Target, ...]
    variants: tuple[VariantSpec, ...]
    show: tuple[str, ...]
    diff: str
    timeout: float | None = None
    node_id: str = field(default="")
    expect_error: tuple[Expected, ...] = ()  # variants that must fail
    expect_pattern: str | None = None  # a regex their messages must match
    expect_hazard: tuple[Expected, ...] = ()  # variants the hazard check must flag
    expect_hazard_pattern: str | None = None  # a regex one finding must match
    # (document line, expression) of each :assert: line; checked after lowering.
    asserts: tuple[tuple[int, str], ...] = ()
    # Only for `tlstages bench` and the numbers it attaches; not part of any lowering key.
    reference: str | None = None
    flops: str | None = None
    tolerance: float | None = None
    # ``:hardware:``: checked on a GPU under compute-sanitizer (``tlstages hardware``);
    # like the numbers, never part of any lowering key.
    hardware: Hardware | None = None
    # For `tlstages timeline`: the variants whose measured timeline is recorded.
    timeline: tuple[Expected, ...] = ()
    # (parameter, (repr of each value, ...)) of each :sweep: axis, in the order given.
    sweep: tuple[tuple[str, tuple[str, ...]], ...] = ()
    passes: tuple[str, ...] = ()  # :passes: selectors, as written
    passes_line: int = 0  # the document line of :passes:, for notes about its names
    params: tuple[tuple[str, str], ...] = ()  # :params: alone, without the swept ones
    # (kernel line, what it says) of each loop depth a kernel lowered as written sets.
    written_depth: tuple[tuple[int, str], ...] = ()
    # What the Kernel part lists, when the listing options cut it or caption it (None:
    # the whole kernel, as lowered).
    listing: Listing | None = None
    # Its place among its document's directives (1, 2, ...): what its placeholder finds
    # it by, so that two directives of one name never render each other's.
    serial: int = 0
    # The options in error, as the build log said them (see :attr:`in_error`).
    problems: tuple[Problem, ...] = ()
    # What the fit part lowers and reads (None: the page does not show it, and no claim
    # names ``fit``). Out of the repr: the table it makes is what a page's fragment is
    # keyed by, and its variants hold this machine's paths.
    fit: FitPlan | None = field(default=None, repr=False)

    @property
    def lowerings(self) -> tuple[VariantSpec, ...]:
        """Every variant the directive needs lowered: its own, then those its fit part
        lowers beyond them."""
        return self.variants + (self.fit.extra if self.fit is not None else ())

    @property
    def target(self) -> Target:
        """The first target (the only one, unless :target: lists several)."""
        return self.targets[0]

    def expects_failure(self, variant: VariantSpec) -> bool:
        """Whether ``:expect-error:`` says this variant must fail."""
        return any(e.matches(variant.num_stages, variant.target.label, variant.axes)
                   for e in self.expect_error)

    def expects_hazard(self, variant: VariantSpec) -> bool:
        """Whether ``:expect-hazard:`` says the hazard check must flag this variant."""
        return any(e.matches(variant.num_stages, variant.target.label, variant.axes)
                   for e in self.expect_hazard)

    @property
    def in_error(self) -> bool:
        """Whether an option of it is in error (reported, and ignored or cut to its good
        part): what it renders is what the other options allow, and its snapshot is
        neither written nor removed until the option is fixed."""
        return bool(self.problems)

    def wants_timeline(self, variant: VariantSpec) -> bool:
        """Whether ``:timeline:`` asks for this variant's measured timeline."""
        return any(e.num_stages == variant.num_stages
                   and e.target in (None, variant.target.label) for e in self.timeline)

    def kernel_location(self, line: int | None) -> tuple[str, int] | str:
        """Where a kernel line is: in the document, in the :file:, or at the directive."""
        return kernel_location(self.docname, self.lineno, self.kernel_line, self.kernel_path,
                               line)


def kernel_location(docname: str, lineno: int, kernel_line: int | None,
                    kernel_path: str | None, line: int | None) -> tuple[str, int] | str:
    """A Sphinx warning location for kernel line ``line`` (1-based, relative to the kernel).

    Inline kernels map to the document line; a ``:file:`` kernel to ``path:line`` (a string
    with a colon, which Sphinx prints as it is).
    """
    if line is None:
        return (docname, lineno)
    if kernel_path is not None:
        return f"{kernel_path}:{line}"
    if kernel_line is not None:
        return (docname, kernel_line + line - 1)
    return (docname, lineno)


def canonical_params(params: dict[str, object]) -> tuple[tuple[str, str], ...]:
    """Params as (name, repr) pairs: literals written alike (``1_024``, ``1024``) agree."""
    return tuple((key, repr(value)) for key, value in params.items())
