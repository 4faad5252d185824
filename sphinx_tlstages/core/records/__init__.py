"""What a build keeps and reports: snapshots, drift, explain records, benchmark files,
cache entries."""
