"""``python -m sphinx_tlstages``: the ``tlstages`` command."""

from __future__ import annotations

import sys

from .cli import main

sys.exit(main())
