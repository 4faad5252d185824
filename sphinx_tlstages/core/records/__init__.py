"""What a build keeps and reports: snapshots, and the policy of what a build writes, fails
on and notes about them (``snapshot_policy``), drift, explain records, benchmark files,
cache entries."""
