"""Variants of the built-in strategies, declared like any strategy (``kind = "ann"``, ``"fulltext"``).

- ``common``: the keys variants share (chunking, aggregate), their checks, and their settings (the
  run's, with the variant's own on top).
- ``ann``, ``fulltext``: the two kinds, each registered once in indexes/declared/kinds.py (``hybrid``
  is indexes/declared/hybrid.py, which names its inputs).
- ``components``: the indexes they search, each made once per build and shared.
- ``nodes``: retrieval over chunks, reported per document.
- ``costs``: what each strategy's index cost (build time, embedding throughput, bytes, chunks).
- ``sweep``: a small grid of variants (models x chunkings x aggregates) from one declaration.
"""
