"""The view models: what each screen, `searchgrade show` and the MCP server show, computed from the
run store.

The layer between the evaluator (engine/) and the surfaces that show it (views/, cli/, server/):
engine/ never imports it; a run that wants its first Results page kept is handed that hook by its
caller (results.keep_first_view).

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
- results_cache: a complete run's Results reads, kept in the store the first time they are computed.
"""
