"""The built-in strategies: dense ANN (faiss), full-text BM25, hybrid fusion."""
