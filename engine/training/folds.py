"""Query-disjoint folds for cross-fitting: queries that could leak into each other share a fold.

Two queries are one group when they come from the same source document (generated queries) or
read the same once lower-cased and stripped of punctuation: a model that trained on one of them
has, in effect, seen the other. Groups, not queries, are dealt to folds, largest first, each to
the fold that holds the fewest queries so far (ties: the lower fold), after a seeded shuffle, so
the folds are balanced and the same inputs and seed give the same folds.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import NamedTuple

from searchgrade.core.records import SearchGradeError
from searchgrade.indexes.rerank.trained import leakage_keys


class FoldQuery(NamedTuple):
    """What a fold assignment needs to know of a query."""

    query_id: str
    text: str
    source_doc_id: str | None = None


def query_groups(queries: Sequence[FoldQuery]) -> dict[str, str]:
    """query id -> group id ("g1", "g2", ...; numbered in order of first appearance).

    Raises:
        SearchGradeError: a query id appears twice.
    """
    parent: dict[str, str] = {}

    def find(key: str) -> str:
        root = key
        while parent[root] != root:
            root = parent[root]
        while parent[key] != root:  # path compression
            parent[key], key = root, parent[key]
        return root

    seen: set[str] = set()
    for query in queries:
        if query.query_id in seen:
            raise SearchGradeError(f"query id {query.query_id!r} appears twice: ids must be unique")
        seen.add(query.query_id)
        keys = leakage_keys(query.text, query.source_doc_id)
        for key in keys:
            parent.setdefault(key, key)
        for key in keys[1:]:
            a, b = find(keys[0]), find(key)
            if a != b:
                parent[b] = a
    names: dict[str, str] = {}
    groups: dict[str, str] = {}
    for query in queries:
        root = find(leakage_keys(query.text, query.source_doc_id)[0])
        groups[query.query_id] = names.setdefault(root, f"g{len(names) + 1}")
    return groups


def assign_folds(queries: Sequence[FoldQuery], n_folds: int, seed: int = 0) -> dict[str, int]:
    """query id -> fold (1..n_folds), grouped by :func:`query_groups` and balanced by query count.

    Raises:
        SearchGradeError: fewer than 2 folds, or fewer groups than folds (a fold would be empty).
    """
    if not isinstance(n_folds, int) or isinstance(n_folds, bool) or n_folds < 2:
        raise SearchGradeError(f"--folds of {n_folds!r} must be at least 2 (each query is reranked by "
                               "a model trained on the other folds)")
    groups = query_groups(queries)
    members: dict[str, list[str]] = {}
    for query_id, group in groups.items():
        members.setdefault(group, []).append(query_id)
    if len(members) < n_folds:
        raise SearchGradeError(
            f"{len(queries)} queries form only {len(members)} independent groups (queries from the "
            f"same source document or with the same text stay together): use --folds {max(2, len(members))} "
            "or fewer, or grade more queries"
        )
    order = sorted(members)
    random.Random(seed).shuffle(order)
    order.sort(key=lambda g: -len(members[g]))  # stable: the shuffle breaks ties between sizes
    sizes = [0] * n_folds
    folds: dict[str, int] = {}
    for group in order:
        fold = min(range(n_folds), key=lambda i: (sizes[i], i))
        sizes[fold] += len(members[group])
        for query_id in members[group]:
            folds[query_id] = fold + 1
    return folds
