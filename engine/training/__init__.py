"""Training a domain reranker from a run's grades, measured on queries it never saw (see reranker.py)."""
