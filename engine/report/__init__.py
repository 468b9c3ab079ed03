"""The dashboard's view models: what each screen shows, computed from the run store.

Screens (views/) call these functions and draw what they return; they never compute a metric or
write SQL. Everything reads stored runs through engine.store (SQL aggregates there, on long
tables) and returns pandas frames or small dataclasses. No Streamlit here: caching is the
screens' business.

- results, drilldown, trends, compare, evaluate: one module per screen.
- results_view: the record of what the Results page shows (built by results, read by recommendations).
- recommendations: what to do next, in words; significance: paired tests, in words.
- llm_panel: the LLM's part of a run; recompute: metrics at a cut-off the run did not store.
- ann_index: what the ANN index loses against exact search, in words.
- runs: run dropdowns and skipped strategies; downloads: CSV and TREC files; common: shared labels.
"""
