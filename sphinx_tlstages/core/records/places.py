"""Where a build keeps the extension's records: the lowering cache, the ``tlstages
explain`` records and the drift report.

Beside Sphinx's doctrees, which survive ``-E`` and are never published, except where the
doctree folder is inside the output folder: a plain ``sphinx-build SRC OUT`` keeps its
doctrees in ``OUT/.doctrees``, and whatever is in ``OUT`` is published with the HTML. The
records then go to a folder beside the output one, ``OUT.tlstages``.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

SUFFIX = ".tlstages"


def records_folder(doctreedir: Path, outdir: Path) -> Path:
    """The folder the records of a build with these folders go in."""
    doctrees, out = doctreedir.resolve(), outdir.resolve()
    if doctrees.is_relative_to(out):
        return out.parent / f"{out.name}{SUFFIX}"
    return doctrees


def searched(places: Iterable[Path]) -> list[Path]:
    """``places`` (build, output or doctree folders), each followed by the records folder
    a build into it would use instead of its doctrees (``OUT.tlstages``)."""
    found: list[Path] = []
    for place in places:
        found.append(place)
        if place.name and not place.name.endswith(SUFFIX):
            found.append(place.parent / f"{place.name}{SUFFIX}")
    return found
