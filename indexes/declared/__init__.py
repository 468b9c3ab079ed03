"""Strategies a user declares: the systems they already run, graded beside the built-ins.

- ``declaration``: one declared strategy (StrategySpec), the keys a kind takes, the shared checks.
- ``kinds``: every backend kind registered once (its keys, checks and builder); add one here.
- ``spec``: the strategies file (TOML): parsing and checking each declaration against its kind.
- ``http``: any HTTP search API, and the Elasticsearch / OpenSearch ``_search`` presets.
- ``milvus``: a Milvus collection (Milvus Lite file or server): dense, BM25 or hybrid search.
- ``plugin``: a Python class with ``search(queries, k)``, by class path or entry point.
"""
