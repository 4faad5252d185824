"""Print figures as PDF, for LaTeX: byte for byte the same on every run.

Two converters, tried in this order:

- ``rsvg-convert`` (librsvg; Debian and Ubuntu ``librsvg2-bin``, Homebrew ``librsvg``):
  a program, nothing to install in Python, and it honours ``SOURCE_DATE_EPOCH`` for the
  PDF's creation date;
- cairosvg (``pip install sphinx-tlstages[pdf]``; needs the system's cairo library),
  whose cairo surface is given a fixed creation date, since cairo stamps the current time.

Both read the figures' ``<style>`` and hatch patterns alike. The date is
``SOURCE_DATE_EPOCH`` when set, else the epoch. The fonts embedded are the machine's:
byte-identical PDFs also need the same fonts.
"""

from __future__ import annotations

import datetime
import functools
import importlib.util
import os
import shutil
import subprocess

CONVERTERS = ("rsvg-convert", "cairosvg")


class ConversionError(RuntimeError):
    """The converter failed on a figure."""


@functools.cache
def converter() -> str | None:
    """The converter this machine has, or None."""
    if shutil.which("rsvg-convert"):
        return "rsvg-convert"
    if importlib.util.find_spec("cairosvg") is not None:
        return "cairosvg"
    return None


def _epoch() -> str:
    value = os.environ.get("SOURCE_DATE_EPOCH", "0").strip()
    return value if value.isdigit() else "0"


def svg_to_pdf(svg: str, using: str | None = None) -> bytes:
    """The PDF of ``svg`` (a print-theme figure); raises :class:`ConversionError`."""
    tool = using or converter()
    if tool == "rsvg-convert":
        path = shutil.which("rsvg-convert")
        if path is None:
            raise ConversionError("rsvg-convert is not on PATH")
        try:
            done = subprocess.run([path, "-f", "pdf"], input=svg.encode("utf-8"),
                                  capture_output=True, check=True, timeout=60,
                                  env={**os.environ, "SOURCE_DATE_EPOCH": _epoch()})
        except (OSError, subprocess.SubprocessError) as exc:
            raise ConversionError(f"rsvg-convert failed: {exc}") from None
        return done.stdout
    if tool == "cairosvg":
        return _cairosvg(svg)
    raise ConversionError("no SVG-to-PDF converter (rsvg-convert or cairosvg) is installed")


def _cairosvg(svg: str) -> bytes:
    try:
        import cairocffi
        from cairosvg.surface import PDFSurface
    except (ImportError, OSError) as exc:
        raise ConversionError(f"cairosvg cannot be used: {exc}") from None
    stamp = datetime.datetime.fromtimestamp(int(_epoch()), datetime.timezone.utc)
    date = stamp.strftime("%Y-%m-%dT%H:%M:%SZ")

    class FixedDatePDF(PDFSurface):  # type: ignore[misc]
        def _create_surface(self, width: float, height: float) -> tuple[object, float, float]:
            surface, w, h = super()._create_surface(width, height)
            surface.set_metadata(cairocffi.PDF_METADATA_CREATE_DATE, date)
            return surface, w, h

    try:
        result = FixedDatePDF.convert(bytestring=svg.encode("utf-8"))
    except Exception as exc:  # cairosvg raises whatever its parser or cairo raises
        raise ConversionError(f"cairosvg failed: {type(exc).__name__}: {exc}") from None
    return bytes(result)
