"""What to lower: option values, targets, and the variants a directive asks for."""
