"""A remote cache entry: one object per variant that proves itself.

An object is one header line of JSON (format, result schema, the variant key, the size
and SHA-256 of the body) and the body: the bytes the local cache stores for that key (a
result, or a directive's rendered HTML under its fragment key).
A reader checks every field before it trusts the body; anything short, unparsable, for
another key or schema, or with another digest is a bad entry, never served.

Because the body is the local cache's exact bytes, a hit is written locally as it came,
and the pages' digests are those of a local build.
"""

from __future__ import annotations

import hashlib
import json

from ..results.result import RESULT_SCHEMA

FORMAT = "sphinx-tlstages cache entry"
MAX_HEADER = 1024


class BadEntry(ValueError):
    """An object that is not a whole, correct entry for the key asked."""


def object_name(key: str) -> str:
    """Where ``key``'s entry lives under the store's prefix: one folder per schema, so
    that a lifecycle rule can expire an old schema whole."""
    return f"v{RESULT_SCHEMA}/{key[:2]}/{key}.entry"


def fragment_name(key: str) -> str:
    """Where a rendered page fragment (a directive's written HTML, keyed by everything it
    depends on) lives: apart from the results, which ``tlstages cache`` lists and exports."""
    return f"fragments/{key[:2]}/{key}.html.entry"


def pack(key: str, body: bytes) -> bytes:
    """The object for ``key`` holding ``body``."""
    header = {"format": FORMAT, "schema": RESULT_SCHEMA, "key": key,
              "size": len(body), "sha256": hashlib.sha256(body).hexdigest()}
    return json.dumps(header, sort_keys=True).encode() + b"\n" + body


def unpack(key: str, data: bytes) -> bytes:
    """The body of ``data`` if it is a whole, correct entry for ``key``."""
    end = data.find(b"\n", 0, MAX_HEADER)
    if end < 0:
        raise BadEntry("no header")
    try:
        header = json.loads(data[:end].decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise BadEntry("unparsable header") from exc
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise BadEntry("not an entry")
    if header.get("schema") != RESULT_SCHEMA:
        raise BadEntry(f"result schema {header.get('schema')!r}")
    if header.get("key") != key:
        raise BadEntry("an entry for another key")
    body = data[end + 1:]
    if header.get("size") != len(body):
        raise BadEntry(f"{len(body)} bytes of {header.get('size')!r}: short or long")
    if header.get("sha256") != hashlib.sha256(body).hexdigest():
        raise BadEntry("wrong digest")
    return body
