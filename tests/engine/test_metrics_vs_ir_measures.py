"""Our metrics agree with ir_measures (pytrec_eval / trec_eval) on the same run and qrels.

ir_measures takes a run as scores; we give each result score n - rank + 1 (strictly decreasing)
so that its ranking is exactly ours, with no ties for it to break by doc id.

judged@k is checked against what ir_measures' Judged@k is defined as, "P@k with a rel lower than
any judgment": trec_eval's P@k over the qrels with every grade raised by one, at rel=1. (ir_measures
0.4's own Judged provider divides by the results returned when a list is shorter than k; judged@k
divides by k, as P@k and every other figure over the k places do. The two agree wherever the list
reaches k: also checked.)
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import ir_measures
import pytest

from searchgrade.engine.metrics import METRICS

K = 10

def _reference_measures(threshold: int) -> dict[str, object]:
    """Our metric name -> the ir_measures measure it must equal at this relevance threshold."""
    from ir_measures import AP, RR, P, R, Success, nDCG

    return {
        "ndcg": nDCG @ K,
        "precision": P(rel=threshold) @ K,
        "recall": R(rel=threshold) @ K,
        "recall_single_hit": Success(rel=threshold) @ K,
        "mrr": RR(rel=threshold) @ K,
        "map": AP(rel=threshold) @ K,
    }


def _scored(runs: dict[str, list[str]]) -> dict[str, dict[str, float]]:
    return {
        qid: {doc: float(len(docs) - i) for i, doc in enumerate(docs)} for qid, docs in runs.items()
    }


def _assert_agreement(
    runs: dict[str, list[str]], qrels: dict[str, dict[str, int]], threshold: int
) -> int:
    """Compares every query's values; returns how many (query, measure) pairs were compared."""
    from ir_measures import Judged, P

    references = _reference_measures(threshold)
    scored = _scored(runs)
    expected = {
        (row.query_id, str(row.measure)): row.value
        for row in ir_measures.iter_calc(list(references.values()), qrels, scored)
    }
    # Judged@k as ir_measures defines it: P@k at a rel below every judgment (every grade + 1, rel=1).
    raised = {qid: {doc: grade + 1 for doc, grade in judged.items()} for qid, judged in qrels.items()}
    references["judged"] = "judged"  # its own key: P(rel=1)@k over the raised grades
    expected.update({(row.query_id, "judged"): row.value
                     for row in ir_measures.iter_calc([P(rel=1) @ K], raised, scored)})
    provider = {row.query_id: row.value for row in ir_measures.iter_calc([Judged @ K], qrels, scored)}
    compared = 0
    for qid, docs in runs.items():
        if not docs or qid not in qrels:
            continue  # trec_eval skips queries without results or without judgments
        grades = [qrels[qid].get(doc) for doc in docs[:K]]
        pool = list(qrels[qid].values())
        for name, measure in references.items():
            ours = METRICS[name](grades, pool, K, threshold)
            assert ours == pytest.approx(expected[(qid, str(measure))], abs=1e-6), (qid, name)
            compared += 1
        if len(docs) >= K:  # ir_measures' own Judged@k divides by k too when the list reaches it
            assert METRICS["judged"](grades, pool, K, threshold) == pytest.approx(provider[qid], abs=1e-9)
    return compared


def _synthetic_collection(seed: int, n_queries: int) -> tuple[dict, dict]:
    """Graded qrels 0..3 and runs with unjudged documents, short runs and no-relevant queries."""
    rng = random.Random(seed)
    runs: dict[str, list[str]] = {}
    qrels: dict[str, dict[str, int]] = {}
    for q in range(n_queries):
        qid = f"q{q}"
        judged_docs = [f"d{i}" for i in rng.sample(range(40), rng.randint(1, 15))]
        qrels[qid] = {doc: rng.choice([0, 0, 1, 1, 2, 3]) for doc in judged_docs}
        candidates = judged_docs + [f"u{i}" for i in range(rng.randint(0, 10))]
        runs[qid] = rng.sample(candidates, min(len(candidates), rng.randint(1, 15)))
    return runs, qrels


def test_hand_built_graded_run_agrees_with_ir_measures():
    qrels = {
        "q1": {"a": 3, "b": 1, "c": 2, "d": 2, "e": 0},
        "q2": {"a": 1, "b": 0},  # nothing relevant at threshold 2
        "q3": {"x": 3},
    }
    runs = {
        "q1": ["b", "a", "unjudged", "c", "e"],  # fewer than k results
        "q2": ["a", "b", "c"],
        "q3": [f"n{i}" for i in range(12)] + ["x"],  # the relevant one below k
    }
    assert _assert_agreement(runs, qrels, threshold=2) == 3 * 7


@pytest.mark.parametrize("threshold", [1, 2, 3])
def test_random_graded_runs_agree_with_ir_measures(threshold):
    runs, qrels = _synthetic_collection(seed=threshold, n_queries=200)
    assert _assert_agreement(runs, qrels, threshold) == 200 * 7


def test_ndcg_gain_is_the_grade_whatever_the_threshold_as_in_ir_measures():
    # ir_measures' nDCG has no rel parameter: grades are the gains, zeros included as 0.
    runs, qrels = _synthetic_collection(seed=9, n_queries=100)
    rows = ir_measures.iter_calc([ir_measures.nDCG @ K], qrels, _scored(runs))
    expected = {row.query_id: row.value for row in rows}
    for qid, docs in runs.items():
        grades, pool = [qrels[qid].get(doc) for doc in docs], list(qrels[qid].values())
        for threshold in (1, 2, 3):
            ours = METRICS["ndcg"](grades, pool, K, threshold)
            assert ours == pytest.approx(expected[qid], abs=1e-6)


# A real collection: Cranfield, graded 0..4, relevant at >= 2, retrieved by BM25.


CRANFIELD = Path(__file__).resolve().parents[1] / "data" / "cranfield"


def _tokens(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def _read_jsonl(path: Path) -> list[dict]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def _bm25_runs(directory: Path, depth: int) -> dict[str, list[str]]:
    import numpy as np
    from rank_bm25 import BM25Okapi

    corpus = _read_jsonl(directory / "corpus.jsonl")
    doc_ids = [doc["_id"] for doc in corpus]
    bm25 = BM25Okapi([_tokens(f"{doc.get('title', '')} {doc.get('text', '')}") for doc in corpus])
    runs = {}
    for query in _read_jsonl(directory / "queries.jsonl"):
        scores = bm25.get_scores(_tokens(query["text"]))
        # Equal scores keep corpus order; the ranks, not these scores, then go to both sides.
        order = np.argsort(-scores, kind="stable")[:depth]
        runs[query["_id"]] = [doc_ids[i] for i in order]
    return runs


def _read_qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    for line in path.read_text(encoding="utf-8").splitlines()[1:]:
        if line.strip():
            qid, doc_id, grade = line.split("\t")
            qrels.setdefault(qid, {})[doc_id] = int(grade)
    return qrels


def test_bm25_run_on_cranfield_agrees_with_ir_measures():
    directory = CRANFIELD
    qrels = _read_qrels(directory / "qrels.tsv")
    runs = _bm25_runs(directory, depth=K)
    compared = _assert_agreement(runs, qrels, threshold=2)
    assert compared >= 200 * 7  # nearly all 225 queries have judgments
    # A sanity check that the run is a real one: BM25 finds something on most queries.
    found = sum(
        METRICS["recall_single_hit"]([qrels[q].get(d) for d in docs], [], K, 2)
        for q, docs in runs.items()
        if q in qrels
    )
    assert found > 0.5 * len(qrels)
