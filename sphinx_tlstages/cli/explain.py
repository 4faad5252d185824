"""``tlstages explain NAME``: why a directive's variants were lowered again."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from ..core.records.explain import find_records, report
from ..core.records.places import searched


def explain(name: str, places: Sequence[Path]) -> int:
    """Print the newest record of directive ``name``; 1 when there is none."""
    if not places:
        places = [Path("_build"), *(conf.parent / "_build" for conf in sorted(
            Path(".").glob("*/conf.py")))]
    found = find_records(name, searched(places))
    if not found:
        print(f"no record of a tl-pipeline directive named {name!r} under "
              f"{', '.join(map(str, places))}: build the docs first, or name the build "
              "folder", file=sys.stderr)
        return 1
    print(report(found[0]))
    return 0
