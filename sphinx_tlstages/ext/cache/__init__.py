"""The lowering cache's two levels: this machine's folder and the shared remote."""
