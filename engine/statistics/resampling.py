"""What the bootstrap and the paired tests share: input checks, and the resamples drawn in blocks.

Pure numpy, seeded by the caller's generator: the same generator gives the same draws, whatever
the block sizes (numpy hands out the same numbers in one draw or in many).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np

#: Largest resample matrix held at once (rows x queries), so a run with many queries stays small.
MAX_CELLS = 2_000_000
#: Resample cells (rows x queries) the batched functions draw and use at once: small enough for
#: the CPU cache. numpy's generator hands out the same numbers whatever the block sizes.
BLOCK_CELLS = 65_536


@functools.cache
def _blas_controller():
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


def one_blas_thread():
    """The batched products are thin (a few resamples x the queries, times the columns): BLAS
    threads cost more than they give on them (20x slower measured on 2 busy cores)."""
    return _blas_controller().limit(limits=1, user_api="blas")


def as_values(values: Sequence[float], name: str) -> np.ndarray:
    """``values`` as a flat float array.

    Raises:
        ValueError: not flat, or NaN or infinite values (naming ``name``).
    """
    array = np.asarray(values, dtype=float)
    if array.ndim != 1:
        raise ValueError(f"{name} must be a flat sequence of numbers, got shape {array.shape}")
    if not np.isfinite(array).all():
        raise ValueError(f"{name} holds NaN or infinite values: drop or fix them first")
    return array


def check_resampling(confidence: float, n_resamples: int) -> None:
    """Raises ValueError: confidence outside (0, 1), or n_resamples < 1."""
    if not 0 < confidence < 1:
        raise ValueError(f"confidence of {confidence} is not in (0, 1): use e.g. 0.95")
    if n_resamples < 1:
        raise ValueError(f"n_resamples of {n_resamples} is not positive: use e.g. 10_000")


def chunks(n_resamples: int, n: int) -> list[int]:
    """The resamples in blocks of rows that keep a block under MAX_CELLS cells of n queries."""
    rows = max(1, MAX_CELLS // max(n, 1))
    return [min(rows, n_resamples - start) for start in range(0, n_resamples, rows)]


def by_length(arrays: Sequence[np.ndarray]) -> dict[int, list[int]]:
    """Length -> the positions of the arrays of that length, in order."""
    groups: dict[int, list[int]] = {}
    for i, array in enumerate(arrays):
        groups.setdefault(len(array), []).append(i)
    return groups


def resampled_means(matrix: np.ndarray, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """The bootstrap means of every row of ``matrix`` (columns x n): an (n_resamples, columns) array.

    Resample r is row r of ``rng.integers(0, n, size=(n_resamples, n))``, drawn block by block
    (numpy hands out the same numbers as in one draw, or in bootstrap_ci's blocks); the mean of a
    column under it is (counts_r . values) / n, with counts_r how often each query was drawn: one
    matrix product per block for all columns.
    """
    n = matrix.shape[1]
    rows = max(1, BLOCK_CELLS // n)
    offsets = (np.arange(rows) * n)[:, None]
    means = np.empty((n_resamples, matrix.shape[0]))
    for start in range(0, n_resamples, rows):
        block = min(rows, n_resamples - start)
        index = rng.integers(0, n, size=(block, n))
        index += offsets[:block]
        counts = np.bincount(index.ravel(), minlength=block * n).reshape(block, n)
        means[start:start + block] = counts @ matrix.T
    means /= n
    return means
