"""Plain data and pure functions: specs and keys, targets, option values, results and
facts, CUDA text, diffs, pass comparison, snapshot and bench file formats, assertions.

Imports neither Sphinx (nor docutils, nor Pygments) nor TileLang: both sides use it.
"""
