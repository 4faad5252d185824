"""Every fact a variant's result may hold, declared once.

A fact is one field of a lowered variant: what the worker read off the IR or the code.
Its entry says its JSON type, which parts of the page show it, whether a snapshot keeps
it, whether a kept value is compared, since which result schema it exists and the names
an ``:assert:`` reads it by. Everything else is derived from this table: the fields a
result must have (:mod:`.result`), what a snapshot keeps and compares
(:mod:`..records.snapshots`) and which assertion names a page built from an older snapshot may
lack (:mod:`..claims`).

It is an allow-list. A snapshot keeps a fact only when it is declared here, and only when
the directive shows a part that reads it or asserts on one of its names; a fact that is
declared shown is kept and compared from the day it is declared, and a snapshot recorded
before then is reported as not guarding it (see ``missing``). A fact no page shows is
declared with no parts, and stays out of snapshots.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import KW_ONLY, dataclass

from ..parts import ALWAYS as ALWAYS_SHOWN
from ..parts import BY_WORD

# The part every directive shows (declared in :mod:`..parts`): the caption, the summary
# table and the merge of variants that lowered alike into one column.
ALWAYS = ALWAYS_SHOWN[0]


@dataclass(frozen=True)
class Fact:
    """One field of a lowered variant's result."""

    name: str  # as the result and the snapshot spell it
    type: type | tuple[type, ...]  # its JSON type
    # The rest by keyword: a row of bare True/1 would say nothing to its reader.
    _: KW_ONLY
    parts: tuple[str, ...]  # the parts that show it: ``:show:`` words, or ALWAYS
    kept: bool  # snapshots keep it (where the directive shows or asserts on it)
    compared: bool  # a kept value that changed fails the build
    since: int  # the first result schema with it
    required: bool = False  # every lowered result of this schema has it
    names: tuple[str, ...] = ()  # what an :assert: expression reads it by
    about: str = ""  # one line for CONTRIBUTING readers and error messages
    # Kept to explain a drift, never compared, never shown: a snapshot without it (one
    # recorded before it existed) is not reported as unguarding anything.
    provenance: bool = False


FACTS: tuple[Fact, ...] = (
    Fact("num_stages", int, parts=(ALWAYS,), kept=True, compared=True, since=1,
         about="the pipeline depth the variant was lowered with"),
    Fact("pipeline", list, parts=(ALWAYS, "figure", "annotations"), kept=True,
         compared=True, since=1, required=True, names=("stage", "order"),
         about="each pipelined loop: depth, stage and order of its statements"),
    Fact("warp_specialized", (dict, type(None)), parts=(ALWAYS, "figure", "annotations"),
         kept=True, compared=True, since=1, names=("warp_specialized",),
         about="producer and consumer warps, their barriers"),
    Fact("shared", list, parts=("shared",), kept=True, compared=True, since=1,
         required=True, names=("shared",),
         about="shared-memory buffers: name, shape, dtype, bytes"),
    Fact("dynamic_shared_bytes", int, parts=(ALWAYS, "shared"), kept=True, compared=True,
         since=1, required=True, names=("dynamic_shared_bytes",),
         about="the merged dynamic shared allocation"),
    Fact("static_shared_bytes", int, parts=(ALWAYS, "shared"), kept=True, compared=True,
         since=1, required=True, about="statically allocated shared memory"),
    Fact("threads", int, parts=(ALWAYS,), kept=True, compared=True, since=1,
         names=("threads",), about="threads per block"),
    Fact("sync", dict, parts=(ALWAYS, "sync"), kept=True, compared=True, since=1,
         required=True, names=("sync",),
         about="counts of synchronisation and async operations in the code"),
    Fact("cuda_lines", int, parts=(ALWAYS,), kept=True, compared=True, since=1,
         required=True, names=("cuda_lines",), about="lines of generated code"),
    # Read by every page: variants whose code is the same are shown as one column.
    Fact("cuda", str, parts=(ALWAYS, "diff", "cuda"), kept=True, compared=True, since=1,
         required=True, about="the generated device code, normalised"),
    # A digest of TileLang's IR, which a release may print differently: only what it
    # decides (which variants are shown as one) is compared, as "lowered alike".
    Fact("planned_ir", (str, type(None)), parts=(ALWAYS,), kept=True, compared=False,
         since=3, about="a digest of the IR after pipeline planning (variants shown as one)"),
    Fact("tmem", list, parts=("shared",), kept=True, compared=True, since=3,
         names=("tmem",), about="tensor-memory buffers: name, shape, dtype, columns"),
    Fact("gemm", list, parts=("gemm",), kept=True, compared=True, since=3, names=("gemm",),
         about="the instruction each tile-level T.gemm call became"),
    # The hazard check's verdict (core.hazards): every page's summary shows it. Not
    # required: a snapshot recorded before it still renders its page (and is reported).
    Fact("hazards", dict, parts=(ALWAYS,), kept=True, compared=True, since=4,
         names=("hazards",),
         about="the hazard check's verdict on the final code: none, hazard or not checked"),
    # Where the verdict is "none": each synchronisation statement no shared-memory
    # dependence the check models needs (core.hazards.needed), shown under the verdict.
    Fact("unneeded_sync", list, parts=(ALWAYS,), kept=True, compared=True, since=8,
         about="synchronisation no modelled shared-memory dependence needs, by CUDA line"),
    # NVIDIA's compiler's view of the variant (core.hardware.resources): registers, spills,
    # stack, shared memory, barriers, occupancy, static SASS counts. Only where the page
    # shows the part and a toolkit compiled it; the toolkit's version is provenance.
    Fact("resources", dict, parts=("resources",), kept=True, compared=True, since=4,
         names=("registers", "spills", "stack", "occupancy", "sass"),
         about="registers, spills, occupancy and SASS counts of the compiled cubin"),
    # The same cubin's SASS by kernel line, from its line table (hardware/sass_lines.py):
    # counts by class per line, through which templates, and those on no kernel line.
    Fact("sass_lines", dict, parts=("resources",), kept=True, compared=True, since=9,
         names=("sass_line",),
         about="static SASS counts by class per kernel line, and those on no kernel line"),
    Fact("sass", str, parts=("resources",), kept=False, compared=False, since=4,
         about="the SASS listing of the compiled cubin (without encodings)"),
    # The whole pass pipeline is large, and a run that changes nothing shown is
    # provenance: snapshots keep only the counts an :assert: names (pass_counts).
    Fact("passes", list, parts=("passes",), kept=False, compared=False, since=1,
         names=("passes",), about="every pass run and the lines of IR it changed"),
    Fact("pass_diffs", dict, parts=("passes",), kept=False, compared=False, since=1,
         about="IR before and after the runs :passes: names"),
    Fact("pass_counts", dict, parts=(), kept=True, compared=True, since=3,
         names=("passes",),
         about="lines changed by each run a passes[...] claim names (snapshots only)"),
    # Provenance in every snapshot (the summary's, so every page keeps it): when a shown
    # fact drifts, the recorded fingerprints name the first pass whose output changed.
    Fact("pass_fingerprints", list, parts=(ALWAYS,), kept=True, compared=False, since=7,
         provenance=True,
         about="the IR's fingerprint after each pass run (names the pass behind a drift)"),
    # Derived from the IR and bulky; its waits are the sync counts', its stages the
    # pipeline's. Absent in results read back from a snapshot.
    Fact("schedule", dict, parts=("figure",), kept=False, compared=False, since=2,
         about="what the schedule figures draw"),
    # Said under the summary and as a warning; the lowering it explains is what a
    # snapshot records.
    Fact("unapplied_configs", dict, parts=(ALWAYS,), kept=False, compared=False, since=10,
         about="pass configs the kernel's text gives that its decorators kept out of reach"),
)

# Fields of a result that are not facts: how and when it was made, never shown as a
# fact, never in a snapshot's variants (a failure is kept as its message).
BOOKKEEPING = ("schema", "ok", "seconds", "error", "from_snapshot", "imports", "templates",
               "toolkit", "resources_error")

BY_NAME = {fact.name: fact for fact in FACTS}
# A part word misspelt here would keep a fact out of every snapshot, silently.
assert {p for fact in FACTS for p in fact.parts} <= BY_WORD.keys()
# What every lowered result must hold (checked on reading a cache entry).
REQUIRED = {fact.name: fact.type for fact in FACTS if fact.required}
# What a snapshot may keep (one directive keeps those its page reads) and compares.
KEPT = frozenset(fact.name for fact in FACTS if fact.kept)
COMPARED = frozenset(fact.name for fact in FACTS if fact.kept and fact.compared)
PROVENANCE = frozenset(fact.name for fact in FACTS if fact.provenance)
assert not PROVENANCE & COMPARED
# Assertion name -> the facts it reads (``passes`` reads the records, or the counts a
# snapshot kept of them).
ASSERT_NAMES: dict[str, tuple[str, ...]] = {}
for _fact in FACTS:
    for _name in _fact.names:
        ASSERT_NAMES[_name] = (*ASSERT_NAMES.get(_name, ()), _fact.name)


def read_by(parts: Iterable[str], names: Iterable[str]) -> list[str]:
    """The kept facts a page reads when it shows ``parts`` (ALWAYS included) and its
    claims use ``names``, in table order. ``pass_counts`` is read only by claims."""
    shown = {ALWAYS, *parts}
    used = set(names)
    return [fact.name for fact in FACTS if fact.kept
            and (shown & set(fact.parts) or used & set(fact.names))]
