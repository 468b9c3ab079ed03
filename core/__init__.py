"""What the evaluator (engine/) and the systems under test (indexes/) share.

- records: documents, queries, collections, ranked results, grades, the user-facing error.
- checks: validation both sides apply alike (a cut-off k, unique ids).

core imports neither engine nor indexes (tests/test_layers.py checks it).
"""
