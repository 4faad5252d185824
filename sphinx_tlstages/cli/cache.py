"""``tlstages cache export|import|status``: the lowering cache as one archive, and what
the local and the remote cache hold.

An archive is a tar file of remote-cache entries (:mod:`..core.records.cache_entry`):
each proves its own key and content, so ``import`` keeps only whole, correct entries, and
one archive is one entry in a CI system's own cache (GitHub's ``actions/cache``), not one
per variant.
"""

from __future__ import annotations

import io
import json
import os
import sys
import tarfile
from collections import Counter
from pathlib import Path

from ..core.files import write_atomic
from ..core.records.cache_entry import BadEntry, object_name, pack, unpack
from ..core.results.result import validate


def cache_dir(given: Path | None) -> Path | None:
    """The local cache: ``--cache-dir``, else ``TLSTAGES_CACHE_DIR``."""
    if given is not None:
        return given
    chosen = os.environ.get("TLSTAGES_CACHE_DIR")
    if chosen:
        return Path(chosen)
    print("tlstages cache: say which cache: --cache-dir DIR or TLSTAGES_CACHE_DIR (a "
          "build's default is tlstages-cache in its doctree folder, or in OUT.tlstages "
          "where the doctrees are inside the output folder OUT)", file=sys.stderr)
    return None


def _entries(folder: Path) -> list[Path]:
    return sorted(folder.glob("??/" + "?" * 64 + ".json"))


def export(folder: Path, archive: Path) -> int:
    """Every local entry, packed, into one tar file (written atomically)."""
    buffer = io.BytesIO()
    entries = _entries(folder)
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for path in entries:
            data = pack(path.stem, path.read_bytes())
            info = tarfile.TarInfo(object_name(path.stem))
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    write_atomic(archive, buffer.getvalue())
    print(f"exported {len(entries)} entries from {folder} to {archive}")
    return 0


def import_(folder: Path, archive: Path) -> int:
    """Every whole, correct entry of ``archive`` into the local cache; the rest is
    counted and skipped."""
    kept = bad = 0
    try:
        with tarfile.open(archive, mode="r:*") as tar:
            for member in tar:
                key = member.name.rsplit("/", 1)[-1].removesuffix(".entry")
                handle = tar.extractfile(member) if member.isfile() else None
                body = _checked(key, handle.read()) if handle and len(key) == 64 else None
                if body is None:
                    bad += 1
                    continue
                write_atomic(folder / key[:2] / f"{key}.json", body)
                kept += 1
    except (OSError, tarfile.TarError, EOFError) as exc:
        print(f"tlstages cache import: {archive}: {exc}", file=sys.stderr)
        return 1
    print(f"imported {kept} entries into {folder}" + (f"; {bad} skipped (bad)" if bad else ""))
    return 1 if bad else 0


def _checked(key: str, data: bytes) -> bytes | None:
    """The body of a whole, correct entry holding a result of this schema, else None."""
    try:
        body = unpack(key, data)
        return body if validate(json.loads(body.decode("utf-8"))) is not None else None
    except (BadEntry, ValueError, UnicodeDecodeError):
        return None


def _size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


def status(folder: Path | None, url: str | None, timeout: float) -> int:
    """Entries, size and result schemas of the local cache and of the remote one."""
    if folder is not None:
        schemas: Counter[str] = Counter()
        size = 0
        for path in _entries(folder):
            size += path.stat().st_size
            try:
                schemas[str(json.loads(path.read_bytes()).get("schema"))] += 1
            except (OSError, ValueError, AttributeError):
                schemas["unreadable"] += 1
        print(f"local {folder}: {sum(schemas.values())} entries, {_size(size)}, schema "
              + (", ".join(f"{s}: {n}" for s, n in sorted(schemas.items())) or "-"))
    if url:
        from ..ext.cache.remote import open_store, shown_url

        try:
            import obstore

            listed = obstore.list(open_store(url, timeout)).collect()
        except Exception as exc:
            print(f"remote {shown_url(url)}: unreachable: {type(exc).__name__}: "
                  f"{str(exc).splitlines()[0] if str(exc) else ''}", file=sys.stderr)
            return 1
        remote_schemas: Counter[str] = Counter()
        remote_size = fragments = 0
        for item in listed:
            top = str(item["path"]).split("/", 1)[0]
            if top == "fragments":  # the pages' rendered HTML, not results
                fragments += 1
            else:
                remote_schemas[top] += 1
            remote_size += int(item["size"])
        print(f"remote {shown_url(url)}: {sum(remote_schemas.values())} entries, "
              f"{_size(remote_size)}, schema " + (", ".join(
                  f"{s.removeprefix('v')}: {n}" for s, n in sorted(remote_schemas.items()))
                  or "-") + (f"; {fragments} page fragments" if fragments else ""))
    return 0
