"""Timing probes in a variant's generated CUDA, inserted as text, and what they record.

For ``tlstages timeline``: the code the page lists is compiled once more with a probe
around each synchronisation point of its pipelined loops, and lane 0 of every warp of the
first few blocks writes ``clock64()``, the probe's site and the loop iteration into a
global buffer. This module knows the code only as TileLang prints it (one statement per
line, a block opened at the end of its line and closed by a line of its own), which is
what makes a text rewrite safe here; it is no C parser.

Which statements get probes: the kernel body is walked from the top; a ``for``, ``if``
(with its ``else``) or plain block that holds a cp.async commit or wait, a
``__syncthreads()`` or an mbarrier wait or arrive is walked into (a loop's probes record
its variable as their iteration); any other statement that holds one of those, a tensor
core call (``tl::mma_sync``, ``tl::wgmma_ss``, ...) or a TMA load is a *site*: a probe
before it and one after it (after only, for a commit or an arrive, which do not block).
A block run by one elected thread (``tl_shuffle_elect``) is never walked into: a probe
there would record only where lane 0 is the elected one. So a T.gemm's whole expansion is
one "mma" site, a warp-specialised producer's elected TMA issue one "tma" site, and the
copies themselves are the time before the commit that closes their group.

The buffer holds, per (block, warp), ``capacity`` records of two 64-bit words: record 0
is the count of records written and the ``%globaltimer`` at the kernel's start, record 1
the ``%globaltimer`` at its end and a magic word; from record 2 on, the cycle and
``site << 32 | iteration``. :func:`decode` reads it back.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

MAGIC = 0x746C70  # "tlp": the slot of a warp that ran to the end
HEADER = 2  # records before the first event
BEGIN, END = 0, 1  # the site ids of the kernel's first and last statement
NO_ITERATION = -1

# In the order a compound statement is named by (a T.gemm's block holds no wait, a TMA
# issue block may hold an arrive): the first kind whose spelling it holds.
_KINDS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("tma", re.compile(r"\btl::tma_load(?:_im2col)?\(")),
    ("mma", re.compile(r"\btl::(?:mma_sync|wgmma_(?:ss|rs)|tcgen05mma_\w+)<")),
    ("mbarrier_wait", re.compile(r"\]\.wait\(|\btl::mbarrier_wait_parity\(")),
    ("wait", re.compile(r"\btl::cp_async_wait<(\d+)>\(\)")),
    ("sync", re.compile(r"__syncthreads\(\)")),
    ("arrive", re.compile(r"\]\.arrive\(|\btl::mbarrier_arrive\(|\btl::ptx_arrive_barrier\(")),
    ("commit", re.compile(r"\btl::cp_async_commit\(\)")),
)
# What makes a block worth walking into: the kinds that order a pipeline.
_WAIT = dict(_KINDS)["wait"]
_ORDERING = {"mbarrier_wait", "wait", "sync", "arrive", "commit"}
POINTS = {"commit", "arrive"}  # kinds that do not block: one probe, after
_ELECTED = re.compile(r"\btl_shuffle_elect\b|\belect_one\b")
_LOOP = re.compile(r"^\s*for\s*\(\s*(?:const\s+)?(?:unsigned\s+)?\w+\s+(\w+)\s*=")
_KERNEL = re.compile(r'__global__\s+void\b.*\{\s*$')


@dataclass(frozen=True)
class Site:
    """One probe: where it stands and what it times."""

    id: int
    kind: str  # begin, end, or one of _KINDS
    at: str  # "before" or "after" the statement
    part: str  # "prologue" (before the loops), "loop", "epilogue" (after them)
    line: int  # 1-based line of the statement in the CUDA probed
    text: str  # the statement's first line, stripped
    n: int | None = None  # a cp.async wait's N
    role: str | None = None  # "producer" or "consumer" where the block is split so
    loop_var: str | None = None  # the innermost loop walked into

    def as_json(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}


@dataclass
class _Node:
    start: int  # first line: a #line or #pragma before the statement, or the statement
    head: int  # the statement's own line
    end: int  # its last line (a block's closing brace)
    branches: list[tuple[int, list[_Node]]] = field(default_factory=list)  # (head, body)


def _statements(lines: Sequence[str], i: int) -> tuple[list[_Node], int]:
    """The statements from line ``i`` to the ``}`` that closes their block (its index)."""
    found: list[_Node] = []
    pending: int | None = None
    while i < len(lines):
        text = lines[i].strip()
        if text.startswith("#"):
            pending = i if pending is None else pending
            i += 1
            continue
        if text.startswith("}"):
            return found, i
        start = i if pending is None else pending
        pending = None
        if text.endswith("{"):
            node = _Node(start, i, i)
            body, close = _statements(lines, i + 1)
            node.branches.append((i, body))
            while close < len(lines) and lines[close].strip().startswith("} else"):
                head = close
                body, close = _statements(lines, close + 1)
                node.branches.append((head, body))
            node.end = close
            i = close + 1
        else:
            node = _Node(start, i, i)
            i += 1
        found.append(node)
    return found, i


def _kinds(lines: Sequence[str], node: _Node) -> list[str]:
    text = "\n".join(lines[node.head:node.end + 1])
    return [kind for kind, pattern in _KINDS if pattern.search(text)]


def _role(lines: Sequence[str], body: list[_Node]) -> str | None:
    kinds = {k for node in body for k in _kinds(lines, node)}
    if "tma" in kinds and "mma" not in kinds:
        return "producer"
    if "mma" in kinds and "tma" not in kinds:
        return "consumer"
    return None


@dataclass
class _Walk:
    lines: Sequence[str]
    sites: list[Site] = field(default_factory=list)
    # line index -> probe lines to insert before it / after it
    before: dict[int, list[str]] = field(default_factory=dict)
    after: dict[int, list[str]] = field(default_factory=dict)
    loops: list[tuple[int, int, str | None]] = field(default_factory=list)  # walked loops

    def probe(self, node: _Node, kind: str, at: str, loop_var: str | None,
              role: str | None) -> None:
        head = self.lines[node.head]
        indent = head[:len(head) - len(head.lstrip())]
        pattern = dict(_KINDS)[kind]
        # A compound statement is named by the call that makes it a site.
        at_line = next((i for i in range(node.head, node.end + 1)
                        if pattern.search(self.lines[i])), node.head)
        line = self.lines[at_line]
        wait = _WAIT.search(line) if kind == "wait" else None
        site = Site(id=len(self.sites) + 2, kind=kind, at=at, part="", line=at_line + 1,
                    text=line.strip()[:120], n=int(wait.group(1)) if wait else None,
                    role=role, loop_var=loop_var)
        self.sites.append(site)
        call = f"{indent}TLP_REC({site.id}, {loop_var or NO_ITERATION});"
        if at == "before":
            self.before.setdefault(node.start, []).append(call)
        else:
            self.after.setdefault(node.end, []).append(call)

    def walk(self, body: list[_Node], loop_var: str | None, role: str | None) -> None:
        for node in body:
            kinds = _kinds(self.lines, node)
            if not kinds:
                continue
            head = self.lines[node.head]
            if node.branches and _ORDERING & set(kinds) and not _ELECTED.search(head):
                loop = _LOOP.match(head)
                if loop:
                    self.loops.append((node.start, node.end, role))
                roles = [_role(self.lines, b) for _, b in node.branches]
                split = len(node.branches) > 1 and len(set(roles)) == len(roles) \
                    and None not in roles
                for (_, branch), branch_role in zip(node.branches, roles, strict=True):
                    self.walk(branch, loop.group(1) if loop else loop_var,
                              branch_role if split else role)
                continue
            kind = kinds[0]
            if kind not in POINTS:
                self.probe(node, kind, "before", loop_var, role)
            self.probe(node, kind, "after", loop_var, role)


def _part(site: Site, loops: list[tuple[int, int, str | None]]) -> str:
    """Where a site stands against the walked loops of its own role (or of any role, for
    a site outside the roles' branches)."""
    line = site.line - 1
    mine = [(s, e) for s, e, role in loops if site.role is None or role in (None, site.role)]
    if any(s <= line <= e for s, e in mine):
        return "loop"
    return "prologue" if any(line < s for s, _ in mine) else "epilogue"


@dataclass(frozen=True)
class Probed:
    """The CUDA with its probes, and what each site id stands for."""

    code: str
    sites: tuple[Site, ...]


def preamble(buffer: int, blocks: int, warps: int, capacity: int) -> str:
    """What the probes need, before the first kernel: where they write, how much, the
    clock reads and the store (``volatile`` with a memory clobber: the compiler keeps
    memory accesses on their side of a probe). The store is one predicated instruction,
    not a branch on the lane: a first version branched, and cost the sm_80 GEMM about a
    third of its time on an H100 (a branch and its reconvergence at every probe)."""
    return f"""\
// Timeline probes (sphinx-tlstages): lane 0 of each warp of the first {blocks} blocks
// records clock64(), a site id and the loop iteration at each synchronisation point.
#define TLP_BUFFER ((unsigned long long*){buffer:#x}ull)
#define TLP_BLOCKS {blocks}u
#define TLP_WARPS {warps}u
#define TLP_CAP {capacity}u
static __device__ __forceinline__ unsigned long long tlp_clock() {{
  unsigned long long t;
  asm volatile("mov.u64 %0, %%clock64;" : "=l"(t) :: "memory");
  return t;
}}
static __device__ __forceinline__ unsigned long long tlp_globaltimer() {{
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t) :: "memory");
  return t;
}}
// One probe: every lane reads the clock; lane 0 of a recorded warp stores the cycle and
// the tag with one predicated 16-byte store (no branch: the warp never diverges here).
static __device__ __forceinline__ void tlp_rec(unsigned long long* at, unsigned& n, bool on,
                                               unsigned long long tag) {{
  const unsigned long long t = tlp_clock();
  asm volatile("{{ .reg .pred p; setp.ne.b32 p, %3, 0; @p st.global.v2.u64 [%0], {{%1, %2}}; }}"
               :: "l"(at + 2ull * n), "l"(t), "l"(tag), "r"((int)(on && n < TLP_CAP))
               : "memory");
  ++n;
}}
#define TLP_REC(site, iter) tlp_rec(tlp_at, tlp_n, tlp_on, \\
    ((unsigned long long)(site) << 32) | (unsigned)(int)(iter))
"""


_ENTRY = """\
{i}const unsigned tlp_block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
{i}const unsigned tlp_thread = threadIdx.x
{i}    + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
{i}const bool tlp_on = (tlp_thread & 31u) == 0u && tlp_block < TLP_BLOCKS
{i}    && (tlp_thread >> 5) < TLP_WARPS;
{i}unsigned long long* const tlp_at = TLP_BUFFER
{i}    + 2ull * TLP_CAP * (tlp_block * TLP_WARPS + (tlp_thread >> 5));
{i}unsigned tlp_n = {header}u;
{i}if (tlp_on) {{ tlp_at[1] = tlp_globaltimer(); }}
{i}TLP_REC({begin}, -1);"""

_EXIT = """\
{i}TLP_REC({end}, -1);
{i}if (tlp_on) {{
{i}  tlp_at[2] = tlp_globaltimer(); tlp_at[0] = tlp_n - {header}u; tlp_at[3] = {magic:#x}ull;
{i}}}"""


def instrument(cuda: str, buffer: int, blocks: int, warps: int, capacity: int) -> Probed:
    """``cuda`` with probes writing to the device address ``buffer`` (a buffer of
    ``blocks * warps * capacity * 2`` 64-bit words, zeroed), and their sites. Raises
    ValueError where the code holds no kernel definition."""
    lines = cuda.splitlines()
    kernels = [i for i, line in enumerate(lines) if _KERNEL.search(line)]
    if not kernels:
        raise ValueError("no __global__ kernel definition found in the CUDA")
    walk = _Walk(lines)
    entries: dict[int, int] = {}  # a kernel's opening line -> its closing line
    for first in kernels:
        body, close = _statements(lines, first + 1)
        entries[first] = close
        walk.walk(body, None, None)
    sites = [Site(BEGIN, "begin", "before", "prologue", kernels[0] + 1, "kernel start"),
             Site(END, "end", "after", "epilogue", entries[kernels[0]] + 1, "kernel end"),
             *(Site(**{**asdict(s), "part": _part(s, walk.loops)}) for s in walk.sites)]
    # Before the first kernel's declaration or definition, after the includes.
    declared = next(i for i, line in enumerate(lines)
                    if "__global__" in line or i == kernels[0])
    out: list[str] = []
    for i, line in enumerate(lines):
        if i == declared:
            out.append(preamble(buffer, blocks, warps, capacity).rstrip("\n"))
        if i in entries.values():
            indent = line[:len(line) - len(line.lstrip())] + "  "
            out.append(_EXIT.format(i=indent, end=END, header=HEADER, magic=MAGIC))
        out.extend(walk.before.get(i, []))
        out.append(line)
        out.extend(walk.after.get(i, []))
        if i in entries:
            indent = line[:len(line) - len(line.lstrip())] + "  "
            out.append(_ENTRY.format(i=indent, header=HEADER, begin=BEGIN))
    return Probed("\n".join(out) + "\n", tuple(sites))


# One warp's recording: (site id, iteration, cycle) per event, in the order executed.
Events = list[tuple[int, int, int]]


@dataclass(frozen=True)
class WarpRecord:
    block: int
    warp: int
    events: Events
    nanoseconds: int  # %globaltimer from the kernel's start to its end, in this warp
    lost: int  # events past the buffer's capacity, not recorded


def decode(words: Sequence[int], blocks: int, warps: int, capacity: int) -> list[WarpRecord]:
    """The buffer read back as unsigned 64-bit words: each warp that ran to the end."""
    found: list[WarpRecord] = []
    for block in range(blocks):
        for warp in range(warps):
            base = 2 * capacity * (block * warps + warp)
            count, started, ended, magic = words[base:base + 4]
            if magic != MAGIC:
                continue
            kept = min(count, capacity - HEADER)
            events: Events = []
            for r in range(HEADER, HEADER + kept):
                cycle, packed = words[base + 2 * r], words[base + 2 * r + 1]
                iteration = packed & 0xFFFFFFFF
                if iteration >= 1 << 31:
                    iteration -= 1 << 32
                events.append((packed >> 32, iteration, cycle))
            found.append(WarpRecord(block, warp, events, ended - started, count - kept))
    return found
