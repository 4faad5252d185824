"""``tlstages snapshots accept|status``: a book's golden snapshots from the terminal."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path

from ..core.records import snapshots
from ..core.results.stamps import tilelang_version
from ..ext.project import read_all, snapshot_folder


def accept(srcdir: Path, names: Sequence[str]) -> int:
    """Move each pending result over its golden (one rename each: never half-written),
    but for a directive with an option in error or that could not be read: its snapshot
    is left as it is until it is fixed."""
    folder = snapshot_folder(srcdir)
    chosen = [(name, path) for name, path, pending in snapshots.stored(folder)
              if pending and (not names or name in names)]
    unknown = set(names) - {name for name, _ in chosen}
    for name in sorted(unknown):
        print(f"no pending snapshot for {name}", file=sys.stderr)
    if not chosen:
        print(f"nothing pending in {folder}")
        return 1 if unknown else 0
    held = read_all(srcdir).held()
    refused = False
    for name, pending in chosen:
        if name in held:
            print(f"not accepted {name}: {held[name]}; fix it and build again",
                  file=sys.stderr)
            refused = True
            continue
        snapshots.load(pending)  # refuse to accept a file that is not a snapshot
        os.replace(pending, snapshots.golden_path(folder, name))
        print(f"accepted {name}")
    return 1 if unknown or refused else 0


def status(srcdir: Path) -> int:
    """List every snapshot and what needs attention: pending, missing, unused, held (its
    directive has an option in error, or could not be read), and the facts a page shows
    that its snapshot does not keep. Exit status 1 when anything is pending, missing,
    held or not kept."""
    folder = snapshot_folder(srcdir)
    project = read_all(srcdir)
    specs = {spec.name: spec for spec in project.specs}
    held = project.held()
    files = snapshots.stored(folder)
    pending = [name for name, _, is_pending in files if is_pending]
    goldens = {name: path for name, path, is_pending in files if not is_pending}
    missing = sorted(specs.keys() - goldens.keys())
    # A directive that could not be read still has its snapshot; where a :name: is in
    # error, no snapshot can be said to be unused.
    unused = [] if project.unnamed() else sorted(goldens.keys() - specs.keys() - held.keys())
    for label, items in (("pending", pending), ("missing", missing), ("unused", unused)):
        for name in items:
            print(f"{label:8} {name}")
    for name, why in sorted(held.items()):
        print(f"{'held':8} {name}: {why} (its snapshot is only read until it is fixed)")
    installed = tilelang_version()
    lacking = 0
    for name, path in sorted(goldens.items()):
        if name not in specs:
            continue
        try:
            data = snapshots.load(path) or {}
        except ValueError as exc:
            print(f"{'broken':8} {name}: {exc}")
            lacking += 1
            continue
        facts = snapshots.lacks(data, specs[name])
        if facts:
            lacking += 1
            print(f"{'lacks':8} {name}: {', '.join(facts)} (the page reads them; "
                  "TLSTAGES_SNAPSHOTS=update records them)")
        else:
            print(f"{'current':8} {name}")
        recorded = data.get("tilelang")
        if recorded != installed:
            # Provenance only: the build says whether anything a reader sees changed.
            print(f"{'recorded':8} {name} with TileLang {recorded} (installed: "
                  f"{installed or 'none'})")
    if not (pending or missing or unused or lacking or held):
        print(f"{len(specs)} snapshots, all current in {folder}")
    return 1 if pending or missing or lacking or held else 0
