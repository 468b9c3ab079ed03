"""Tuning a strategy's parameters on some of a run's queries, and proving the gain on the others.

- space: the parameters a tuning may change (built-ins, a declared strategy's template
  variables), read from a TOML file or a kind's default.
- split: tuning vs held-out queries (seeded, stratified by query type; k-fold when few).
- grades: the grades a tuner may read, only its tuning queries'.
- target: a trial's strategy rebuilt from its parameters over inputs computed once.
- tuner: Optuna's TPE per fold, then the held-out comparison (engine/statistics/paired.py).
- setup: from a stored run to a target; study: one tuning kept in the run store, resumable.

docs/tuning.md is the guide.
"""
