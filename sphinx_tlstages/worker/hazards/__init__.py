"""The hazard check's trace of a variant's final device code, and its verdict."""
