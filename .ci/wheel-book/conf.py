"""A small book built with the installed wheel (``nox -s dist``): every part once, on a
reStructuredText page and a Markdown page. The kernel is the book's seed GEMM, copied
in as ``kernels/gemm.py`` by the session."""

project = "wheel check"
extensions = ["myst_parser", "sphinx_tlstages"]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build", "kernels"]
html_theme = "alabaster"  # Sphinx's own: the wheel's static files are what is checked
tlstages_target = "sm_80"
tlstages_num_stages = "2 3"  # two variants keep it to seconds
latex_documents = [("index", "wheel.tex", project, "sphinx-tlstages", "manual")]
