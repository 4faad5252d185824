"""After lowering: the checks a build makes on the results, snapshots and the drift report."""
