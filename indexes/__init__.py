"""The systems under test: a registry of strategies behind one small interface.

- ``base``: the contract every strategy meets: the searcher, the executor's node and what it
  answers (``Answer``, ``Failure``), ``answer_each`` (one query at a time, timed, retried).
- ``registry``: strategy name -> factory; each built-in one entry (``BUILTIN``).
- ``build``: building the requested strategies from shared components, reusing artifacts on disk.
- ``executor``: running every strategy once per query over a graph of nodes.
- ``builtin/``: ANN, full-text (BM25) and hybrid; ``embeddings/``: models, backends, vector files;
  ``rerank/``: the cross-encoder and trained rerankers; ``declared/``: the user's own systems,
  each backend kind registered once (declared/kinds.py).
"""
