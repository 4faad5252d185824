"""The hazard check's trace of a variant's final device code, and its verdict.

Every lowered variant's final device IR (what the CUDA is printed from) is walked once more
after lowering, in the worker. The rooms, each one idea:

- :mod:`.verdict`: the driver. One check walks the function once per choice a walk
  cannot make alone, and checks each walk's records in the core
  (:mod:`...core.hazards.check`, the cp.async model; :mod:`...core.hazards.rings`, the
  mbarrier model); the verdict is the ``hazards`` fact, the search for synchronisation
  no dependence needs the ``unneeded_sync`` fact.
- :mod:`.trace`: the walk. It follows the code as every thread runs it and bounds every
  shared access as a byte interval (:mod:`.intervals`).
- :mod:`.rules`: what each intrinsic records, found by its name, one module per family
  (:mod:`.rules.cp_async`, :mod:`.rules.barriers`, :mod:`.rules.tma`, :mod:`.rules.mma`,
  :mod:`.rules.templates`).
- :mod:`.branches`: a synchronisation under a condition on the threads (one elected
  thread, the roles of a warp-specialised loop, a condition the block decides alike).
- :mod:`.masks`: conditions read from memory, and the walk of a loop a mask runs or skips.
- :mod:`.sizes`: sizes known only at launch, and the period of a loop's ring state.
- :mod:`.undecided`: what a walk cannot decide alone (each a choice the driver makes, or
  "not checked" with the reason); :mod:`.memo`: what the walks read of the IR once;
  :mod:`.calls`: the names of what the walk meets.

The records are plain data; the verdict is the ``hazards`` fact (result schema 4; since 5
each finding's statements carry ``cuda_lines``, and TMA rings compare bytes), shown in
every summary's *Hazards* row; a finding is a ``tlstages.hazard`` warning
(``ext/checks/run.py``), ``:expect-hazard:`` makes it a note.

Sizes known only at launch (:mod:`.sizes`): a synchronised loop's trip count matters to the
check only through a ring's state (slots, parities, open cp.async groups), which repeats
with a period ``P`` after a warm-up ``K0``; so trip counts ``0 .. K0 + 2P`` cover every
longer loop. A symbolic size is walked at the least value giving each of those counts
(elsewhere it leaves its ranges open: a grid, an unsynchronised loop), and a loop whose
trip count is a range (set by the block index, as in causal attention) at each count of
the range up to that bound (:class:`.undecided.Ranged`); ``verdict.at_sizes`` walks one value,
the brute-force reference of the tests. A synchronised loop whose first iteration depends
on the block index (a sliding window's ``max(0, bx - w)``) is walked once per value of that
index, in a grid of known extent (:class:`.undecided.Blocked`): each walk is those blocks' own
trace, start, trip count and every condition on the block decided, so the walks cover every
start (a grid of symbolic extent stays "not checked", said so). Test: ``WINDOW_SCORES``
(local attention scores; a wait deleted, barriers deleted or a parity flipped at one key
block are flagged in a block whose window holds it).

Values read from memory (:mod:`.trace`): a shared read at an index the data sets
(``s_cum[group[0]]``, the group a search found) reads some element of its buffer, so it is
taken as every byte of it (an index outside its buffer is not this check's subject); an
offset into global memory (a group's first row) bounds no shared byte and is not followed.
A synchronisation under a condition every thread of the block decides alike (it uses no
thread index, no thread's own local value: ``if tile < s_cum[groups]``, a block past the
data's tiles skipping its pipeline) is walked with the condition false and with it true
(:class:`.undecided.Forked`), where it is met once in a walk. One that reads memory at each
iteration of the synchronised loop whose synchronisation it guards (a block mask) is not
forked but walked as a mask (below); any other met again in the same walk (in an unrolled
loop) stays "not checked". Tests: ``GROUPED_ROWS`` (a group found in a
shared table of tile counts; the table moved over the pipelined tile, and the pipeline's
defects under the condition, are flagged).

Conditions read from memory (:mod:`.masks`, :func:`.masks.masked_loop`): a synchronisation
in each iteration of a synchronised loop under a condition of its variable that reads no
thread index and only global memory the kernel never writes (``if BlockMask[by, bx,
k]:``, a *mask*: the same value for every thread and both roles) is walked for every
pattern at a bounded cost. The loop it guards is walked once
with the mask false (which must record nothing and change no counter: a skipped iteration
is nothing to the check), then as ``m`` run iterations with the loop variable any of its
values (each access bounded over all of them) and its counters followed: every pattern
that runs ``m`` tiles records within that walk, and findings only grow with wider
accesses; ``m`` goes to the bound of the periodic argument. Where a premise fails, patterns
the kernel may meet are tried (``verdict._search``) and a racing one is a finding; else
"not checked". ``verdict.at_patterns`` walks each pattern, the brute-force reference of
the tests (``SKIPPED_TILES``, ``GATED_TILES``, ``SPARSE_SCORES``: a load waited for
only under the mask races when no tile runs, as TileLang 0.1.15 lowers it on sm_90a).

Beyond the intrinsics: a local integer scalar the kernel keeps (``T.alloc_var``: a ring's
counter, a phase it flips) is followed in the walk's environment (:func:`.calls.scalar_key`;
unknown after code walked once for many runs); ``T.wait_wgmma(n)`` retires wgmma reads as
``warpgroup_wait`` does (both are ``cute::warpgroup_wait<n>``); TileLang's
``tl::AllReduce`` template (``tl_templates/cuda/reduce.h``) reads its shared workspace at
each butterfly level of offset 32 or more, between two barriers
(:func:`.rules.templates.all_reduce`).

Rules: an operation on shared memory the walk has no rule for, a synchronisation under a
condition it cannot decide, or a loop it cannot bound is "not checked" with the reason,
never "hazard"; a walk that raises is "not checked" too, never a failed variant. A new
TileLang that emits a new intrinsic shows up as "not checked: X accesses S, which the
check does not model" on the book's pages: add its rule and a mutation test.

Beyond the device function, the trace reads the bytes of each TMA box from the host's
``__tvm_tensormap_create_tiled`` arguments (the ``tma_descriptor_args`` attribute kept on
the host function after ``tl.MergeSharedMemoryAllocations``; :func:`.verdict._boxes`), by
the descriptor's name. Cluster copies (``T.copy_cluster(..., cluster_mask=m)``) lower to
``if block_rank_in_cluster() == 0: tma_load_multicast ... else: if not in m: tma_load
...``: ``cluster_branch`` takes one path when both give the same copy (each CTA receives
the box on its own barrier). A condition on a variable's range (``if tx < 64``) bounds the
accesses under it. Findings name each statement's CUDA lines
(``core/results/facts.py``, ``_located``, through ``core/results/line_links.py``: the
``#line`` mapping the linked listings use, numbered in the listing without ``#line``
directives).

Tests (``tests/test_hazards.py``, kernels in ``tests/kernels/hazards``) lower for real: the
consume-then-fetch loop of tile-ai/tilelang#2668 is flagged on sm_80 and sm_90a (or its
code no longer has the defect), its fetch-then-consume twin is clean; mutations of the
seed GEMM's final IR (a wait deleted or raised, a ``__syncthreads`` deleted, a parity
flipped, an init count halved, the consumer's arrive dropped or moved before its
``warpgroup_wait``, a TMA moved to the next slot) are each flagged while the unmutated
variants are clean; tile-ai/tilelang#2927 (cluster copies in a loop, a barrier each,
waiting with the loop's parity) is flagged as a RAW at ``s=1`` with TileLang 0.1.15, its
one-barrier twin is clean, the loop's first ``expect_tx`` halved or doubled is a ``TX``
finding on sm_90a and sm_100a. ``verification/hazard_sweep`` runs the check over other
projects' kernels (what it found and what was fixed is in its README);
``benchmarks/hazard_check_cost`` measures its cost.

Each cp.async copy and shared load also carries its bytes per thread (``own``: the index
bounded with ``threadIdx.x`` a point, computed only where the check asks), so a thread
reading back its own completed copy needs no barrier; a named barrier records that it
names only the threads running it; ``cp.async.mbarrier.arrive`` marks the copies it
tracks (``cp``), and ``fence.proxy.async`` is recorded (``pfence``). Tests:
``GATHERED_GEMM`` (a cp.async gather signalled on a TMA full barrier: ordered by the wait,
a ``PROXY`` finding without a proxy fence, a RAW without the arrive), ``OWN_CHUNKS`` (own
bytes without ``__syncthreads``: clean; a neighbour's: flagged; named barriers both ways).

Where the verdict is "none", :mod:`...core.hazards.needed` asks of each synchronisation
statement (the trace marks every dynamic instance of a ``__syncthreads``, named barrier,
``cp_async_wait`` or mbarrier wait with its statement, numbered by :func:`.verdict.sites`
in the order the CUDA prints them) whether the check stays clean with it deleted, or a
wait weakened: the ``unneeded_sync`` fact (result schema 8), a row of the *Hazards*
table. For it the trace also records the stores the threads make into shared memory
(``store``: outside the check's model, which ignores them), so that no barrier one may
need is named.

Three warp groups (:func:`.branches.branch`): a split of a role's threads again
(``if tx < 128: ... elif tx < 256: ... else: ...``) makes a role of each branch, with its
thread range (``group``; a condition that is no one range is evaluated per thread,
:func:`.branches.thread_set`, and threads in several ranges may only split again);
:func:`...core.hazards.rings._sequences` runs the innermost groups, each with the records
of the groups around it. A barrier several roles arrive on gets its phases from what
each arriving role knows (``rings._shared_phases``, PTX ISA "mbarrier": "Phase Completion
of the mbarrier object"; the order is transitive: Memory Consistency Model, "Release and
Acquire Patterns"), including that every arrival of a phase was made (an arrival every
thread of a role makes tells that the role's earlier ones were: ``rings._learned``); where
two barriers' phases rest on each other, the next phase is guessed and kept only if what
the roles then know confirms it. A reader also hears of a copy, and of a
``fence.proxy.async`` after the wait on it, through another role's arrival ("Causality
Order": a proxy fence on the path). An overlap that rests only on a wgmma operand's
guessed extent is "not checked", never a finding. Tests: ``SPLIT_ROWS_GEMM`` (clean; its
bottom group copying into the top group's tile: RAW and WAR; its release dropped: WAR),
``SPLIT_CONSUMERS`` (two consumers and a cp.async producer, the second hearing of each
tile through the first's arrival: clean; a deleted wait or the first's proxy fence
flagged; a consumer that may run a tile ahead "not checked").

Blackwell (:func:`.rules.mma.commit`): a tcgen05 MMA (``ptx_tcgen05_mma_ss``/``_ts``,
block-scaled too) reads its shared operands through descriptors (``initialize_tcgen05_
descriptor``, as wgmma's) asynchronously (PTX ISA, "tcgen05.mma"); ``tl::tcgen05_mma_arrive``
(one elected lane per warp: ``tcgen05.commit.cta_group::1.mbarrier::arrive::one``) is one
arrival on its barrier, made when the MMAs it tracks complete ("tcgen05.commit"), and
those reads retire when its phase completes: to the copier that waits for that phase, and
to the issuing role from its wait on it on; in the cp.async model a ``__syncthreads``
orders them only after such a wait (``check._umma_retired``: TileLang's cp.async tcgen05
GEMM refills the stage before it, ``COPIED_TMEM_GEMM``). Tensor memory itself (the accumulator,
``tcgen05.ld``/``st``) is not shared memory and not checked; ``tcgen05.alloc`` writes the
allocated address into a shared word, a store as the threads' own. Not modelled (not
checked, said by name): ``tcgen05.cp`` (shared to tensor memory), two-CTA MMAs and their
multicast commits. Tests: ``SCALED_TMEM_GEMM`` (clean at 1-3 stages; the wait on the
commit barrier deleted: WAR; the commit deleted: HANG).
"""
