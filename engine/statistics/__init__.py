"""Statistics over per-query values: pure functions on plain data, no I/O.

- bootstrap: percentile bootstrap intervals of a mean; resampling: the draws they share.
- weighted_bootstrap: the traffic-weighted mean of a query set and its weighted bootstrap interval.
- paired: paired sign-flip tests with the interval of the difference, and non-inferiority.
- multiple: Holm's adjustment over a family of tests.
- kappa: Cohen's kappa and the confusion matrix; krippendorff: agreement between many raters.
- judge_vs_human: how far the LLM judge agrees with people (kappas, bias, with CIs).
- ppi: prediction-powered inference, a judged mean corrected by the pairs people rated.
"""
