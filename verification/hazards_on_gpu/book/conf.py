"""A book of two directives for verification/hazards_on_gpu: the seed GEMM, two stages
deep, on Ampere and on Hopper, each checked on the GPU under compute-sanitizer."""

project = "hazards on a GPU"
extensions = ["sphinx_tlstages"]
tlstages_snapshots = "off"
tlstages_file_roots = ["../../../book/kernels"]  # the book's own seed GEMM
