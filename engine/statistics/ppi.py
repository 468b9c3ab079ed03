"""Prediction-powered inference for a mean (Angelopoulos et al., 2023, "Prediction-powered
inference", Science 382).

A metric's mean over N queries graded by the LLM judge (predictions, Y-hat) is biased by the
judge's errors. On the n queries people rated, the human-graded value Y is known too. The
prediction-powered estimate corrects the LLM mean by the mean human-minus-judge difference on
the rated queries (the "rectifier"):

    theta_PP = mean_N(Y-hat) + mean_n(Y - Y-hat)

It is unbiased for the human-graded mean whenever the rated queries are a random sample of the N,
whatever the judge's bias. Its variance adds both samples' parts:

    Var = s2(Y-hat) / N + s2(Y - Y-hat) / n + 2 cov(Y-hat, Y - Y-hat) / N

The last term is there because here the rated queries are part of the N (the paper's two samples
are disjoint; with n << N the term is small either way). The CI is the normal one,
theta_PP +- z * sqrt(Var). A good judge makes s2(Y - Y-hat) small, so the interval is narrower
than the classical one from the n rated queries alone; a biased judge moves the estimate back to
the truth, where the LLM-only interval misses it.
"""

from __future__ import annotations

from collections.abc import Sequence
from statistics import NormalDist
from typing import NamedTuple

import numpy as np


class PPIEstimate(NamedTuple):
    """A prediction-powered estimate of a mean, with what it rests on."""

    estimate: float
    ci_low: float
    ci_high: float
    #: mean_N(Y-hat): the LLM-only figure.
    llm_mean: float
    #: mean_n(Y - Y-hat): how far the judge is off, on average, on the rated queries.
    correction: float
    n_rated: int
    n_all: int


def ppi_mean(predicted: Sequence[float], human: Sequence[float | None], confidence: float = 0.95) -> PPIEstimate:
    """The prediction-powered estimate of the mean of ``human`` over all items.

    Args:
        predicted: Y-hat for every item (the LLM-graded value), N of them.
        human: Y for the same items in the same order; None or NaN where nobody rated the item.
        confidence: Of the interval, in (0, 1).

    Raises:
        ValueError: lengths differ, a predicted value is NaN or infinite, fewer than 2 rated
            items (no variance to estimate), or confidence outside (0, 1).
    """
    y_hat = np.asarray(predicted, dtype=float)
    y = np.asarray([np.nan if v is None else v for v in human], dtype=float)
    if y_hat.ndim != 1 or y_hat.shape != y.shape:
        raise ValueError(f"predicted has {y_hat.size} values and human {y.size}: give one of each per item")
    if not np.isfinite(y_hat).all():
        raise ValueError("predicted holds NaN or infinite values: every item needs an LLM-graded value")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence of {confidence} is not in (0, 1): use e.g. 0.95")
    rated = np.isfinite(y)
    n, big_n = int(rated.sum()), len(y_hat)
    if n < 2:
        raise ValueError(f"{n} rated item(s): a prediction-powered interval needs at least 2")
    rectifier = y[rated] - y_hat[rated]
    llm_mean = float(y_hat.mean())
    correction = float(rectifier.mean())
    estimate = llm_mean + correction
    variance = y_hat.var(ddof=1) / big_n + rectifier.var(ddof=1) / n
    variance += 2 * float(np.cov(y_hat[rated], rectifier, ddof=1)[0, 1]) / big_n
    half = NormalDist().inv_cdf(0.5 + confidence / 2) * float(np.sqrt(max(variance, 0.0)))
    return PPIEstimate(estimate, estimate - half, estimate + half, llm_mean, correction, n, big_n)
