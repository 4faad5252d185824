"""Every event priority the extension connects with, in one place (Sphinx runs a lower
priority first; its default is 500).

- ``config-inited``: :data:`SETTINGS` validates the configuration into ``Settings``;
  :data:`EARLY_WORKERS` then starts the lowering workers of a cold build, which read them.
- ``env-updated`` (every document read and merged, nothing written): :data:`SAY_AGAIN`
  first says again what reading said of the documents this build did not read;
  :data:`LOWER` lowers what the cache lacks; :data:`CHECK` then checks the results
  (snapshots, ``:assert:``, names, attached numbers).
- ``build-finished``: :data:`FINISH_REMOTE` joins the shared cache's writes (and says
  what it did) before the other handlers, which close the workers and set the exit
  status.
"""

from __future__ import annotations

SETTINGS = 500
EARLY_WORKERS = 600
SAY_AGAIN = 450
LOWER = 500
CHECK = 510
FINISH_REMOTE = 400
