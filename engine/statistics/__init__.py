"""Statistics over per-query values: pure functions on plain data, no I/O.

- bootstrap: percentile bootstrap intervals of a mean; resampling: the draws they share.
- weighted_bootstrap: the traffic-weighted mean of a query set and its weighted bootstrap interval.
- paired: THE procedure of every verdict the app shows: paired bootstrap differences with an
  interval adjusted for the m comparisons read together (Bonferroni), whose verdict is the
  interval's; the gate's margin form. The reranker training's held-out report uses it too.
- kappa: Cohen's kappa and the confusion matrix; krippendorff: agreement between many raters.
- judge_vs_human: how far the LLM judge agrees with people (kappas, bias, with CIs).
- ppi: prediction-powered inference, a judged mean corrected by the pairs people rated.
"""
