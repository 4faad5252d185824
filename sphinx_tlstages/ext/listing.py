"""The kernel listing options, with the meanings ``literalinclude`` gives them.

The cutting is Sphinx's own :class:`~sphinx.directives.code.LiteralIncludeReader`, always
with ``:lineno-match:`` (a listed line keeps the kernel's number for it, which the CUDA
gutters, the line links and the tables use). Where Sphinx would only log a warning and
go on with something else (lines out of range, text stripped by ``:dedent:``), a value
here is refused, so that the directive can list the whole kernel and say why at the
option's line (a ``tlstages.option`` warning).

``:pyobject:`` reads its tags from the kernel text, not from the file, because Sphinx
caches a file's analysis for the whole process. Tests: ``tests/test_listing.py`` on the
kernels in ``tests/kernels/listing`` (a cookbook-style example with ``main()`` and Chinese
comments, a module of several kernels with a macro and a class).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from sphinx.directives.code import LiteralIncludeReader
from sphinx.pycode import ModuleAnalyzer

from ..core.kernel.listing import Listing

try:
    from sphinx.util._lines import parse_line_num_spec
except ImportError:  # Sphinx < 8.2
    from sphinx.util import parselinenos as parse_line_num_spec  # type: ignore[no-redef]

if TYPE_CHECKING:
    from sphinx.config import Config

# Option -> what the reference page says; in the order literalinclude's docs give them.
OPTIONS: dict[str, str] = {
    "pyobject": "List only this function or class of the kernel (``matmul``, "
                "``Kernels.matmul``), decorators included, as ``literalinclude`` does; "
                "without a value, the factory being lowered. Without any cutting option "
                "the whole kernel is listed. The kernel is always lowered whole.",
    "lines": "List only these lines (``20-40``; ``literalinclude``'s syntax, counted within "
             "what ``:pyobject:``, ``:start-*:`` and ``:end-*:`` kept); they must follow "
             "each other, since listed lines keep the kernel's own numbers.",
    "start-after": "List from the line after the first one containing this text.",
    "start-at": "List from the first line containing this text.",
    "end-before": "List up to the line before the first one (after the start) containing "
                  "this text.",
    "end-at": "List up to the first line (after the start) containing this text.",
    "emphasize-lines": "Highlight these lines of the listing (``1,3-5``), counted from its "
                       "first line as ``literalinclude`` counts them, not by the numbers "
                       "shown.",
    "caption": "A caption over the kernel listing (plain text).",
    "dedent": "Remove this many leading spaces from each listed line (no value: the "
              "common indentation), e.g. to list a method at the margin.",
}
# Those that cut: the rest apply to an inline kernel as well.
CUTTING = ("pyobject", "lines", "start-after", "start-at", "end-before", "end-at", "dedent")


class ListingError(ValueError):
    """A listing option with a value that cannot be used; ``option`` names it."""

    def __init__(self, option: str, message: str) -> None:
        super().__init__(f":{option}: {message}")
        self.option = option


@contextmanager
def _blame(option: str) -> Iterator[None]:
    try:
        yield
    except ListingError:
        raise
    except ValueError as exc:
        raise ListingError(option, str(exc)) from None


class _Reader(LiteralIncludeReader):
    """Sphinx's reader over the kernel text the directive lowers, strict where Sphinx
    only warns."""

    def __init__(self, source: str, filename: str, options: dict[str, Any],
                 config: Config) -> None:
        self.source = source
        super().__init__(filename, options, config)

    def read_file(self, filename: Any, location: Any = None) -> list[str]:
        return self.source.splitlines(True)

    def pyobject_filter(self, lines: list[str], location: Any = None) -> list[str]:
        name = self.options.get("pyobject")
        if not name:
            return lines
        # From the text, not the file: Sphinx caches a file's analysis for the whole
        # process, which a live-reloading server would read stale after an edit.
        tags = ModuleAnalyzer.for_string(self.source, "").find_tags()
        if name not in tags:
            known = ", ".join(sorted(tags)) or "none"
            raise ListingError("pyobject", f"the kernel defines no {name!r} (it defines: "
                                           f"{known})")
        _, start, end = tags[name]
        self.lineno_start = start
        return lines[start - 1:end]

    def start_filter(self, lines: list[str], location: Any = None) -> list[str]:
        with _blame("start-at" if "start-at" in self.options else "start-after"):
            return super().start_filter(lines, location)

    def end_filter(self, lines: list[str], location: Any = None) -> list[str]:
        with _blame("end-at" if "end-at" in self.options else "end-before"):
            return super().end_filter(lines, location)

    def lines_filter(self, lines: list[str], location: Any = None) -> list[str]:
        spec = self.options.get("lines")
        if spec:
            with _blame("lines"):
                wanted = parse_line_num_spec(spec, len(lines))
            if not wanted or any(n >= len(lines) for n in wanted):
                raise ListingError("lines", f"{spec!r} is out of range: what is listed has "
                                            f"lines 1-{len(lines)}")
            if wanted != list(range(wanted[0], wanted[-1] + 1)):
                raise ListingError("lines", f"{spec!r} is not one run of lines (listed "
                                            "lines keep the kernel's numbers, as with "
                                            ":lineno-match:)")
        with _blame("lines"):
            return super().lines_filter(lines, location)

    def dedent_filter(self, lines: list[str], location: Any = None) -> list[str]:
        dedent = self.options.get("dedent")
        if dedent is not None and any(line[:dedent].strip() for line in lines):
            raise ListingError("dedent", f"{dedent} would strip text, not just spaces")
        return super().dedent_filter(lines, location)


def _dedent(value: str) -> int | None:
    if not value.strip():
        return None
    try:
        number = int(value)
    except ValueError:
        raise ListingError("dedent", f"{value.strip()!r} is not a whole number") from None
    if number < 0:
        raise ListingError("dedent", f"{number} is negative")
    return number


def _emphasize(value: str, count: int) -> tuple[int, ...]:
    with _blame("emphasize-lines"):
        wanted = parse_line_num_spec(value, count)
    if any(n >= count for n in wanted):
        raise ListingError("emphasize-lines", f"{value!r} is out of range: the listing has "
                                              f"lines 1-{count}")
    return tuple(n + 1 for n in wanted)


def read_listing(source: str, filename: str | None, given: dict[str, str], factory: str,
                 config: Config) -> Listing | None:
    """The listing ``given`` (the directive's options) asks for, of ``source`` (the
    kernel, from ``filename`` when it is a :file: one); None when none is asked for."""
    chosen = {name: value for name, value in given.items() if name in OPTIONS}
    if not chosen:
        return None
    cutting = [name for name in CUTTING if name in chosen]
    if cutting and filename is None:
        raise ListingError(cutting[0], "lists part of a :file: kernel; an inline kernel "
                                       "is listed as written")
    options: dict[str, Any] = {"lineno-match": True}
    for name in ("start-after", "start-at", "end-before", "end-at", "lines"):
        if name in chosen:
            if not chosen[name].strip():
                raise ListingError(name, "needs a value")
            options[name] = chosen[name] if name != "lines" else chosen[name].strip()
    if "pyobject" in chosen:
        options["pyobject"] = chosen["pyobject"].strip() or factory
    if "dedent" in chosen:
        options["dedent"] = _dedent(chosen["dedent"])
    text, start = source, 1
    if cutting:
        try:
            reader = _Reader(source, filename or "", options, config)
        except ListingError:
            raise
        except ValueError as exc:  # two options that exclude each other
            second = [n for n in ("start-at", "end-at") if n in options]
            raise ListingError(second[0] if second else cutting[0], str(exc)) from None
        text, _ = reader.read()
        start = int(reader.lineno_start)
        if not text.strip():
            raise ListingError(cutting[0], "leaves nothing to list")
    text = text.rstrip("\n") + "\n"
    count = len(text.splitlines())
    emphasize = _emphasize(chosen["emphasize-lines"], count) \
        if chosen.get("emphasize-lines", "").strip() else ()
    caption = " ".join(chosen.get("caption", "").split()) or None
    return Listing(text, start, emphasize, caption, cut=bool(cutting))
