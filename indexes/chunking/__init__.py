"""Chunking: documents cut into passages, retrieval over the passages, results per document.

- ``spec``: a chunking setting (method, size, overlap), checked once; the methods it offers.
- ``splitter``: the cutting itself, by semantic-text-splitter with the variant's own tokenizer.
- ``chunks``: a collection's chunks (each a span of its document's text, carrying the title),
  made once per setting and tokenizer and kept on disk.
- ``aggregate``: how the scores of a document's chunks become the document's (max, sum of the top
  n, first chunk).
"""
