"""Evaluation suites: saved, repeatable evaluations, run on demand or on a schedule, each run
compared with the previous one by the one paired procedure, alerting on significant drops.

- definition: a suite made from a run (its frozen queries and configuration), and what a new run
  of it evaluates; updating its declared strategies.
- changes: the configuration snapshot of each run and what changed between two.
- regression: the paired comparison of two runs of a suite (drop, gain, or neither).
- runner: one run of a suite, its entry, its comparison and its alerts.
- schedule: cron expressions (croniter) and fixed intervals, in UTC; slots.
- worker: running due slots, each once (a lease in the store), and the long-running loop.

See docs/suites.md.
"""
