"""The extension's error classes and the kinds of problem it reports.

Sphinx-free: the worker raises these too. The Sphinx side reports each problem through
:func:`sphinx_tlstages.ext.messages.warn` with ``type="tlstages"`` and one of
:data:`SUBTYPES`, so a book can silence one kind with
``suppress_warnings = ["tlstages.limit"]``.
"""

from __future__ import annotations

WARNING_TYPE = "tlstages"

# Subtypes, one per kind of problem; the reference page lists them.
SUBTYPES: dict[str, str] = {
    "option": "a directive option has a bad value or is not an option (said at its line, "
              "and ignored or cut to its good part)",
    "source": "the kernel source cannot be used (syntax error, no factory, missing file)",
    "name": "two directives share a :name: (an error at each: neither is checked against a "
            "snapshot until one is renamed)",
    "lowering": "a variant failed to lower (exception, timeout or crashed worker)",
    "limit": "a variant needs more shared memory than its target allows per block",
    "tilelang": "TileLang is missing or cannot lower CUDA here",
    "cache": "a local cache entry could not be read or written (corrupt, or an unwritable "
             "folder); a remote cache's errors are information, counted in its log line",
    "snapshot": "a snapshot is missing, drifted, unreadable or unused, or records variants "
                "this build cannot show",
    "assert": "an :assert: claim is false for a variant (an error: the build fails)",
    "report": "the drift report could not be added to the CI job summary",
    "toolkit": "NVIDIA's compiler is missing or failed: the resources part (registers, "
               "spills, occupancy) cannot be built",
    "bench": "a bench file is malformed, or its numbers are stale for the kernel shown",
    "hardware": "compute-sanitizer observed a race or a barrier error on a GPU that the "
                "hazard check did not report, or a hardware record is malformed",
    "timeline": "a timeline file is malformed, or its recording is stale for the code shown",
    "hazard": "the hazard check found a read of shared memory that can race a copy in the "
              "final code (a note instead where :expect-hazard: lists the variant)",
    "failed": "the closing line of a build whose checks failed: how many, by kind (snapshot "
              "checks, :assert: claims, :expect-hazard: variants, shared names...); each is "
              "reported at its own line with its own subtype",
    "unread": "a variant lowered, but its page shows less than it should: a schedule "
              "figure TileLang's IR could not be read for, a pipelined statement on no "
              "kernel line, pass configs the factory's decorators hold out of reach (the "
              "page says what and why)",
    "latex": "kernel text has characters pdflatex cannot print (CJK, Greek...): the PDF "
             "shows them as ?; xelatex and lualatex print them",
}


class TlStagesError(Exception):
    """Base class of the errors this extension raises and reports. ``problems``: the
    options in error found before it (:class:`~.plan.spec.Problem`), where a tolerant
    planning stopped at it; the caller says them too."""

    problems: tuple[object, ...] | None = None


class OptionError(TlStagesError):
    """A directive option or config value that cannot be used; ``line`` is the
    document line of the option, when known."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.line = line


class SourceError(TlStagesError):
    """Kernel source that cannot be used; ``line`` is relative to the kernel (1-based)."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.line = line
