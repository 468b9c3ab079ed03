"""Strategies a user declares: the systems they already run, graded beside the built-ins.

- ``declaration``: one declared strategy (StrategySpec), the keys a kind takes, the shared checks.
- ``kinds``: every backend kind registered once (its keys, checks and builder); add one here.
- ``node``: what every declared kind's executor node shares (``DeclaredNode``: the skeleton and
  its answer loop; a backend writes one search attempt and what its errors mean).
- ``spec``: the strategies file (TOML): parsing and checking each declaration against its kind.
- ``http``: any HTTP search API, and the Elasticsearch / OpenSearch ``_search`` presets.
- ``milvus``: a Milvus collection (Milvus Lite file or server): dense, BM25 or hybrid search.
- ``plugin``: a Python class with ``search(queries, k)``, by class path or entry point.
- ``postgres/``: a Postgres table (pgvector, full-text search) or the user's own SQL; ``lancedb``:
  a LanceDB table; ``hybrid``: the fusion of two strategies; ``rerankers``: declared rerankers.
"""
