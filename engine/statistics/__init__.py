"""Statistics over per-query values: pure functions on plain data (pairing's one read aside).

- bootstrap: percentile bootstrap intervals of a mean; resampling: the draws they share.
- weighted_bootstrap: the traffic-weighted mean of a query set and its weighted bootstrap interval.
- paired: THE procedure of every verdict the app shows: paired bootstrap differences with an
  interval adjusted for the m comparisons read together (Bonferroni), whose verdict is the
  interval's. The reranker training's held-out report uses it too.
- pairing: THE way to compare two runs (Compare, the gate, suites, MCP): the pairing rule, one order,
  10,000 resamples with seed 0, the checks, and a drop or a gain; it reads the runs' per-query
  values through engine/run/stored_metrics.py, its one read.
- kappa: Cohen's kappa and the confusion matrix; krippendorff: agreement between many raters.
- judge_vs_human: how far the LLM judge agrees with people (kappas, bias, with CIs).
- ppi: prediction-powered inference, a judged mean corrected by the pairs people rated.
"""
