"""The messages between a build and its lowering processes, and their bytes."""
