"""Lowering what the cache lacks: the batch, the cache's two levels, prestarted workers."""
