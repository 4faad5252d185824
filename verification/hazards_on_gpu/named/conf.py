project = "named barrier check"
extensions = ["sphinx_tlstages"]
exclude_patterns = ["_build", "kernels"]
tlstages_target = "sm_90a"
