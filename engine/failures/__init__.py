"""Why queries fail: each failed (strategy, query) gets its kind and exactly one cause.

- ``causes``: the two kinds of a failed top 1 and the seven causes, in order, each defined once
  (docs/metrics.md#why-queries-fail says the same in words), and the rule that gives each failed
  query the first cause that holds.
- ``diagnosis``: a stored run's failed queries with their kind, cause and the evidence in words,
  and the counts per strategy (``searchgrade show``, the export, MCP and Results read these).
- ``exact``: the run-time evidence: the queries embedded once, and an exact search of the same
  vectors for the queries an ANN-based strategy failed on, to tell what the approximate index lost.
- ``groups``: failed queries grouped by meaning (k-means over their vectors, labelled by their most
  telling terms) and the 2-D map of a run's queries, seeded.
"""
