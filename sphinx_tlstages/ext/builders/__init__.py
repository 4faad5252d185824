"""What each builder gets besides the nodes: HTML, LaTeX, plain text, figure visitors and
table fitting."""
