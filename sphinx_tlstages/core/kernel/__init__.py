"""Reading kernel source as Python text: factories, statements, depths, listings."""
