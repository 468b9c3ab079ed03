"""Statistics over per-query values: bootstrap intervals, paired tests, agreement (kappa, Krippendorff), PPI."""
