"""Strategies a user declares: the systems they already run, graded beside the built-ins.

- ``spec``: the strategies file (TOML): parsing and checking each declaration.
- ``http``: any HTTP search API, and the Elasticsearch / OpenSearch ``_search`` presets.
- ``milvus``: a Milvus collection (Milvus Lite file or server): dense, BM25 or hybrid search.
- ``plugin``: a Python class with ``search(queries, k)``, by class path or entry point.
- ``factories``: kind -> the function that builds a declared strategy's executor node.
"""
