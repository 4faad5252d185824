"""Which pipelined loop each ``cp_async_wait<n>`` of the code belongs to.

The ``sync`` fact lists a variant's waits in code order, every loop's together: a kernel
with two pipelined loops reads ``<1> <0> <1> <0>``, and a reader cannot tell where one
loop's end. The code says it: a wait inside a loop's body, or in its prologue, carries a
``#line`` directive naming the loop or one of its statements; the wait that drains a
loop's copies after it (``cp_async_wait<0>``, inserted by the pipeliner) carries none,
and belongs to the loop the code last entered.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from .cuda import Mapped
from .line_links import statement_lines

_WAIT = re.compile(r"\btl::cp_async_wait<(\d+)>\(\)")


def waits_by_loop(mapped: Sequence[Mapped], source: str, loops: Sequence[int]
                  ) -> list[tuple[int, list[int]]] | None:
    """``[(loop's kernel line, its waits' n in code order)]`` for the loops at ``loops``
    (kernel lines) that wait, in code order; None where a wait fits no loop (then the
    waits are said together, as the code has them)."""
    lines = source.splitlines()
    regions = {loop: statement_lines(lines, loop) for loop in loops}
    found: dict[int, list[int]] = {}
    current: int | None = None  # the loop whose `for` the code entered last
    for item in mapped:
        at = item.line if item.line is not None else item.within
        if item.line in regions and item.text.lstrip().startswith("for"):
            current = item.line
        wait = _WAIT.search(item.text)
        if wait is None:
            continue
        # The innermost loop whose lines hold the wait's (a loop may hold another).
        holding = [loop for loop, region in regions.items() if at is not None and at in region]
        loop = min(holding, key=lambda n: len(regions[n])) if holding else current
        if loop is None:
            return None
        found.setdefault(loop, []).append(int(wait[1]))
    return list(found.items())


__all__ = ["waits_by_loop"]
