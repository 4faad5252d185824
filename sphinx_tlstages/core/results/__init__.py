"""A lowered variant's result: its facts, CUDA, passes, claims and digests."""
