"""Rerankers: the cross-encoder, rerankers trained on a run's grades."""
