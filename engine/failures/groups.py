"""Failed queries grouped by meaning, and a 2-D map of a run's queries: scikit-learn, seeded.

- Groups: k-means over the failed queries' vectors (unit length, so near in cosine is near in
  k-means' distance), k chosen by the silhouette (cosine) from ceil(n / ``GROUP_SIZE``) (at least 2,
  so that a group holds ``GROUP_SIZE`` queries or fewer on average: a reader reads a group, not a
  list) to ``MAX_GROUPS``, each group labelled
  by its most telling terms: the words its queries share that the run's other queries rarely use
  (a group's share of queries holding the word, times the word's inverse document frequency over
  the run's queries). So a reader sees "dosage, dose, mg: 14 queries" rather than 40 rows.
- The map: the run's query vectors in two dimensions by t-SNE (seeded, started from PCA), which
  keeps near queries near, so groups found in the full vectors show as groups; above
  ``MAP_TSNE_MAX`` queries by PCA (their first two principal components), whose cost does not grow
  with the square of the queries.
- Vectors: the run's own (its ANN's embedding model, stored by the run); for a run that stored
  none (no ANN), the queries' words (TF-IDF reduced by truncated SVD, latent semantic analysis).

The same vectors and seed give the same groups and map.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

#: Fewer failed queries than this are not grouped: listing them says as much.
MIN_TO_GROUP = 4
#: At most this many groups.
MAX_GROUPS = 8
#: The fewest groups are as many as make groups of this many queries on average.
GROUP_SIZE = 40
#: Terms that label a group.
TERMS = 3
#: Silhouettes are computed on at most this many queries (a seeded sample): their cost is quadratic.
SILHOUETTE_SAMPLE = 2000
#: Up to this many queries the map is t-SNE's, above it PCA's.
MAP_TSNE_MAX = 2000
_WORD = re.compile(r"[^\W\d_]{3,}")


@dataclass(frozen=True)
class Group:
    """A group of failed queries: their indices (into the vectors grouped) and its telling terms."""

    members: list[int]
    terms: list[str]


def _words(text: str) -> set[str]:
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return {w for w in _WORD.findall(text.lower()) if w not in ENGLISH_STOP_WORDS}


def telling_terms(members: Sequence[str], every: Sequence[str], n: int = TERMS) -> list[str]:
    """The ``n`` words that tell ``members`` (a group's query texts) from ``every`` (all the run's
    queries): share of members holding the word x log((1 + N) / (1 + queries holding it)); a word
    must be in two members when the group has three or more (one query's odd word labels nothing)."""
    held = Counter(w for text in members for w in _words(text))
    df = Counter(w for text in every for w in _words(text))
    floor = 2 if len(members) >= 3 else 1
    scored = [(held[w] / len(members) * math.log((1 + len(every)) / (1 + df[w])), w)
              for w in held if held[w] >= floor]
    return [w for _, w in sorted(scored, key=lambda x: (-x[0], x[1]))[:n]]


def _unit(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms > 0, norms, 1.0)


def group_failures(vectors: np.ndarray, texts: Sequence[str], every: Sequence[str], *, seed: int = 0,
                   max_groups: int = MAX_GROUPS) -> list[Group]:
    """The failed queries (``vectors``, ``texts``: one per query) in groups by meaning, largest first.

    Args:
        every: all the run's query texts (what the terms tell a group from).
        seed: k-means' and the silhouette sample's seed.

    Returns:
        [] for fewer than ``MIN_TO_GROUP`` queries.
    """
    from sklearn.cluster import KMeans
    from sklearn.metrics import silhouette_score

    n = len(texts)
    if n < MIN_TO_GROUP:
        return []
    x = _unit(np.asarray(vectors, dtype=np.float64))
    best: tuple[float, np.ndarray] | None = None
    # No more groups than distinct queries (the same text twice is one point).
    most = min(max_groups, n - 1, len(np.unique(x.round(6), axis=0)))
    fewest = min(max(2, math.ceil(n / GROUP_SIZE)), most)
    for k in range(fewest, most + 1):
        labels = KMeans(n_clusters=k, n_init=4, random_state=seed).fit_predict(x)
        if len(set(labels)) < 2:
            continue
        score = silhouette_score(x, labels, metric="cosine", sample_size=min(n, SILHOUETTE_SAMPLE),
                                 random_state=seed)
        if best is None or score > best[0] + 1e-12:
            best = (score, labels)
    if best is None:  # fewer than two distinct queries: one group
        labels = np.zeros(n, dtype=int)
    else:
        labels = best[1]
    groups = []
    for label in sorted(set(labels.tolist())):
        members = np.flatnonzero(labels == label).tolist()
        groups.append(Group(members, telling_terms([texts[i] for i in members], every)))
    return sorted(groups, key=lambda g: (-len(g.members), g.members[0]))


def query_map(vectors: np.ndarray, seed: int = 0) -> tuple[np.ndarray, str]:
    """Each query's place on a 2-D map (n x 2), and how it was made ("t-SNE" or "PCA"): t-SNE up to
    ``MAP_TSNE_MAX`` queries (perplexity 30, or a third of the queries when fewer), PCA above it or
    for fewer than five queries."""
    from sklearn.decomposition import PCA
    from sklearn.manifold import TSNE

    x = _unit(np.asarray(vectors, dtype=np.float64))
    out = np.zeros((len(x), 2))
    if len(x) < 2 or x.ndim != 2:
        return out, "PCA"
    if 5 <= len(x) <= MAP_TSNE_MAX:
        tsne = TSNE(n_components=2, perplexity=min(30.0, (len(x) - 1) / 3), init="pca", max_iter=500,
                    random_state=seed)
        return tsne.fit_transform(x), "t-SNE"
    n = min(2, x.shape[0], x.shape[1])
    out[:, :n] = PCA(n_components=n, random_state=seed).fit_transform(x)
    return out, "PCA"


def text_vectors(texts: Sequence[str], seed: int = 0, dims: int = 100) -> np.ndarray:
    """Vectors of query texts from their words (TF-IDF, reduced to at most ``dims`` dimensions by
    truncated SVD), for a run that stored no query vectors; unit length."""
    from sklearn.decomposition import TruncatedSVD
    from sklearn.feature_extraction.text import TfidfVectorizer

    if not texts:
        return np.zeros((0, 1))
    try:
        tfidf = TfidfVectorizer(stop_words="english", sublinear_tf=True).fit_transform(texts)
    except ValueError:  # no word at all (every query a stop word or a number)
        return np.zeros((len(texts), 1))
    n = min(dims, tfidf.shape[1] - 1, len(texts) - 1)
    x = TruncatedSVD(n_components=n, random_state=seed).fit_transform(tfidf) if n >= 2 else tfidf.toarray()
    return _unit(x)
