"""Starting lowering workers and talking to them: the pool and its line protocol.

Sphinx-free and TileLang-free: the extension and the ``tlstages`` command reach the
worker side only through here, as separate processes.
"""
