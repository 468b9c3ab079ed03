"""Embeddings: the sentence-transformers encoder, its backends, the vector cache, vectors made elsewhere."""
