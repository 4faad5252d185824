"""The hazard check's model: cp.async groups and mbarrier rings, pure."""
