"""The worker side: the only code that imports TileLang, TVM or torch.

Its modules run in worker processes started as ``python -m sphinx_tlstages.worker``
(and, for ``tlstages bench``, in that command's own process); they import the Sphinx-free
:mod:`sphinx_tlstages.core` and nothing of Sphinx, docutils or Pygments. This
``__init__`` imports nothing, so starting a worker loads no more than it needs.
"""
