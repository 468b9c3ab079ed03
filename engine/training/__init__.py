"""Training a domain reranker from a run's grades (see engine/training/reranker.py)."""
