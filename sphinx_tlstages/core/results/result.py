"""The result of lowering one variant: its type, its schema version, its failures.

A result is plain JSON-ready data, built by the worker (:mod:`.facts`), stored by the
cache and the snapshots, read by the checks and the renderer. Everything that asks
"did it lower?", "is this failure about the kernel or about the machine?" or "does it
fit in shared memory?" asks here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, TypedDict

from .fact_table import REQUIRED

if TYPE_CHECKING:  # typing.Required is Python 3.11+; annotations stay strings at run time
    from typing_extensions import Required

# Bump when the shape of a result changes: every cached entry becomes a miss. Stored
# snapshots of an older schema are still read: a new schema may add facts (declared in
# core.results.fact_table with its number), never nest or rename them.
RESULT_SCHEMA = 10

FailureKind = Literal["exception", "timeout", "crash", "unavailable"]
FAILURE_KINDS: tuple[FailureKind, ...] = ("exception", "timeout", "crash", "unavailable")
# Failures that say something about the kernel, the same on every machine: only these
# are cached, recorded in snapshots and checked against them. A timeout, a crashed
# worker or a missing TileLang depend on where the build ran.
_KERNEL_FAILURES = ("exception",)


class ErrorInfo(TypedDict):
    """Why a variant failed; ``line`` is relative to the kernel's first line."""

    kind: FailureKind
    message: str
    line: int | None


# -- the records inside a result (produced in core.results.facts and the worker, read by
# the renderers, checks and snapshots) --------------------------------------------------

class NamedStatement(TypedDict, total=False):
    """A statement of a pipelined loop, by its source text and kernel line; with line
    None, its operation and buffers as the IR gives them, and ``why`` no kernel line is
    given (schema 6). ``added`` (schema 10): a statement TileLang added, what it is, named
    by the kernel statement it serves; ``replayed`` (schema 10): a binding TileLang left
    out of the stage and order arrays and evaluates again with each statement that reads
    it, those statements' stages."""

    text: Required[str]
    line: Required[int | None]
    why: str
    added: str
    replayed: list[int]


class PipelineLoop(TypedDict, total=False):
    """A ``T.Pipelined`` loop as ``tl.PipelinePlanning`` annotated it; ``line`` and
    ``trips`` (schema 6): the kernel line of the ``T.Pipelined`` loop it is (None: none
    found) and how many times it runs."""

    num_stages: Required[int]
    stage: Required[list[int]]
    order: Required[list[int]]
    statements: Required[list[NamedStatement]]
    line: int | None
    trips: int | None  # how many times the loop runs (None: not a number in the IR)


class Role(TypedDict, total=False):
    """Who runs a statement of a warp-specialised loop; ``inserted``: a barrier call the
    compiler added (``op`` names it)."""

    text: Required[str]
    line: Required[int | None]
    role: Required[str]
    inserted: Required[bool]
    op: str


class Barrier(TypedDict):
    name: str
    shape: list[int]
    dtype: str
    init: list[int]


class WarpSpecialization(TypedDict, total=False):
    """The producer/consumer split; ``line``, ``slots``, ``trips`` (schema 6): the
    kernel line of the ``T.Pipelined`` loop that was split (None: none found), its ring
    slots and trip count."""

    threads: Required[int]
    producer_threads: Required[int]
    consumer_threads: Required[int]
    roles: Required[list[Role]]
    barriers: Required[list[Barrier]]
    line: int | None
    slots: int | None  # the ring slots its copies cycle through (its num_stages)
    trips: int | None  # how many times the split loop runs


class SharedBuffer(TypedDict):
    """A shared buffer as allocated after pipelining (its version dimension first)."""

    name: str
    shape: list[int]
    dtype: str
    scope: str
    bytes: int


class TensorMemoryBuffer(TypedDict):
    name: str
    shape: list[int]
    dtype: str
    columns: int | None


class GemmCall(TypedDict):
    """A tile-level gemm call and the instruction it became (None: not traced)."""

    text: str
    line: int | None
    operands: list[str]
    instruction: str | None
    form: str | None


class Hazards(TypedDict):
    """The hazard check's verdict (core.hazards): ``none``, ``hazard`` or ``not
    checked``, in words, and each finding."""

    verdict: str
    text: str
    findings: list[dict[str, Any]]


class Result(TypedDict, total=False):
    """One variant's lowering: ``ok`` with its facts, or not ``ok`` with ``error``.

    The facts are declared in :mod:`.fact_table` (their types, parts, snapshot rules);
    each is a field here too, for the type checker; a test holds the two together."""

    schema: Required[int]
    ok: Required[bool]
    seconds: float
    error: ErrorInfo
    num_stages: int
    pipeline: list[PipelineLoop]
    warp_specialized: WarpSpecialization | None
    shared: list[SharedBuffer]
    # Since schema 3: tensor-memory buffers ({name, shape, dtype, columns}); each
    # tile-level gemm call in source order ({text, line, operands, instruction, form});
    # a digest of the IR after pipeline planning (None where it did not run).
    tmem: list[TensorMemoryBuffer]
    gemm: list[GemmCall]
    planned_ir: str | None
    # Since schema 4: the hazard check's verdict on the final code (core.hazards):
    # {"verdict": "none" | "hazard" | "not checked", "text", "findings"}. Since schema 5:
    # each finding's statements are {text, line, cuda_lines} (the CUDA listing's lines
    # the statement became), and mbarrier rings compare expected bytes with TMA boxes.
    hazards: Hazards
    # Since schema 8: where the verdict is "none", each synchronisation statement no
    # modelled shared-memory dependence needs (core.hazards.needed): {op, site, what,
    # text, of, suffices?, cuda_lines, line}.
    unneeded_sync: list[dict[str, Any]]
    dynamic_shared_bytes: int
    static_shared_bytes: int
    threads: int
    sync: dict[str, Any]
    cuda_lines: int
    cuda: str  # the generated device code: CUDA, or HIP for an AMD target
    passes: list[dict[str, Any]]
    pass_diffs: dict[str, Any]
    # Since schema 7: the fingerprint of the IR after each pass run, ``name#run hex``
    # (core/results/fingerprints.py): provenance that names the pass behind a drift;
    # absent where the variant was lowered without them (no snapshot to write).
    pass_fingerprints: list[str]
    # Only in results read back from a snapshot: {"name#run": lines changed} of the runs
    # a passes[...] claim names, where the pass records themselves are not kept.
    pass_counts: dict[str, int | None]
    from_snapshot: bool
    # Files the kernel imported from its own folders: {"path" (absolute), "sha256"};
    # a cached result is reused only while each is unchanged. Never in snapshots.
    imports: list[dict[str, str]]
    # Digest of the TileLang template headers the code includes (see bench_data).
    templates: str
    # What the schedule figures draw (worker/ir/schedule.py; shapes in core/figures/model.py):
    # derived from the IR and bulky, so never in snapshots; absent when nothing is
    # pipelined and in results read back from a snapshot.
    schedule: dict[str, Any]
    # Since schema 10, only where the kernel's text gives pass configs that the
    # factory's decorators keep out of TileLang's reach: {"keys": as written, "why"}.
    unapplied_configs: dict[str, Any]
    # Since schema 4, where the page shows "resources": what NVIDIA's compiler made of
    # the CUDA (core/hardware/resources.py), the SASS listing, the compiler's version
    # (provenance), or why it could not compile.
    resources: dict[str, Any]
    # Since schema 9, with the listing: its counts by kernel line (core/hardware/sass_lines.py).
    sass_lines: dict[str, Any]
    sass: str
    toolkit: str
    resources_error: str


def failure(kind: FailureKind, message: str, line: int | None,
            seconds: float = 0.0) -> Result:
    """A failed variant: the one constructor of failures."""
    assert kind in FAILURE_KINDS, kind
    return {"schema": RESULT_SCHEMA, "ok": False, "seconds": round(seconds, 3),
            "error": {"kind": kind, "message": message, "line": line}}


def failure_kind(result: Result) -> FailureKind | None:
    """``None`` for a lowered variant, else the kind of its failure."""
    return None if result.get("ok") else result["error"]["kind"]


def depends_on_machine(result: Result) -> bool:
    """Whether a result says something about this machine rather than the kernel
    (a timeout, a crashed worker, TileLang unavailable): never cached nor snapshotted."""
    kind = failure_kind(result)
    return kind is not None and kind not in _KERNEL_FAILURES


def shared_bytes(result: Result) -> int:
    """Shared memory one block of a lowered variant needs: dynamic plus static."""
    return int(result.get("dynamic_shared_bytes", 0)) + int(result.get("static_shared_bytes", 0))


def over_limit(result: Result, limit: int | None) -> bool:
    """Whether a variant needs more shared memory per block than its target allows."""
    return bool(result.get("ok")) and limit is not None and shared_bytes(result) > limit


def validate(result: object,
             required: dict[str, type | tuple[type, ...]] | None = None) -> Result | None:
    """``result`` if it is a well-formed result of this schema (holding the ``required``
    facts, by default every fact the table says a result has), else ``None``."""
    if not isinstance(result, dict) or result.get("schema") != RESULT_SCHEMA:
        return None
    if result.get("ok") is True:
        wanted = REQUIRED if required is None else required
        if all(isinstance(result.get(k), t) for k, t in wanted.items()):
            return result  # type: ignore[return-value]
        return None
    error = result.get("error")
    if result.get("ok") is False and isinstance(error, dict) \
            and error.get("kind") in FAILURE_KINDS and isinstance(error.get("message"), str):
        return result  # type: ignore[return-value]
    return None
