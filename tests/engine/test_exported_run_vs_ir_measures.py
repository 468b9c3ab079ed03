"""A real run, exported, scores the same in ir_measures (trec_eval) and ranx as in our store: ranked by
the exported score column alone, every file gives every figure the app shows (to 1e-9), ties and all."""

from __future__ import annotations

import ir_measures
import pytest

from searchgrade.engine.collections import load_collection
from searchgrade.engine.export import export_run
from searchgrade.engine.run.config import RunConfig
from searchgrade.engine.run.pipeline import run_evaluation
from searchgrade.engine.store import Store
from tests.conftest import CRANFIELD, DEMO


def test_stored_metrics_match_ir_measures_on_the_exported_cranfield_run(tmp_path):
    from ir_measures import AP, RR, P, Qrel, R, nDCG

    collection = load_collection(CRANFIELD)
    store = Store(tmp_path / "d")
    config = RunConfig(strategies=("fulltext",), n_bootstrap=200)
    run_id = run_evaluation(collection, config, store, tmp_path / "d").run_id
    (trec,) = export_run(store, run_id, "trec", tmp_path / "out")
    run = store.get_run(run_id)
    assert run.threshold == 2  # graded 0..4: relevant at >= 2

    qrels = [Qrel(q, d, g) for q, judged in collection.qrels.items() for d, g in judged.items()]
    exported = list(ir_measures.read_trec_run(str(trec)))
    t = run.threshold
    pairs = {
        "ndcg": nDCG @ 10, "precision": P(rel=t) @ 10, "recall": R(rel=t) @ 10,
        "mrr": RR(rel=t) @ 10, "map": AP(rel=t) @ 10,
    }
    ours = {(r["metric"], r["query_id"]): r["value"] for r in store.metric_values(run_id, k=10)
            if r["strategy"] == "fulltext"}
    compared = 0
    for metric, measure in pairs.items():
        for result in ir_measures.iter_calc([measure], qrels, exported):
            assert ours[(metric, result.query_id)] == pytest.approx(result.value, abs=1e-6), (
                metric, result.query_id)
            compared += 1
    assert compared >= 5 * 200


def _reference(threshold: int) -> dict[str, object]:
    from ir_measures import AP, RR, P, R, Success, nDCG

    return {"ndcg": nDCG @ 10, "precision": P(rel=threshold) @ 10, "recall": R(rel=threshold) @ 10,
            "recall_single_hit": Success(rel=threshold) @ 10, "mrr": RR(rel=threshold) @ 10,
            "map": AP(rel=threshold) @ 10}


def _scored(frame) -> dict[str, dict[str, float]]:
    """A run as ir_measures and ranx take it: query -> doc -> score (the rank column unread)."""
    run: dict[str, dict[str, float]] = {}
    for qid, doc, score in zip(frame["query_id"].astype(str), frame["doc_id"].astype(str), frame["score"],
                               strict=True):
        run.setdefault(qid, {})[doc] = float(score)
    return run


@pytest.mark.slow
def test_every_exported_file_of_the_demos_hybrid_gives_the_apps_figures(demo_hybrid, tmp_path):
    import pandas as pd
    import ranx
    from ir_measures import P, Qrel

    from searchgrade.engine.export import ranked_results
    from searchgrade.server.mcp.reads import query_results

    home, run_id = demo_hybrid
    store = Store(home)
    run = store.get_run(run_id)
    judgments = load_collection(DEMO).qrels
    qrels = [Qrel(q, d, g) for q, judged in judgments.items() for d, g in judged.items()]
    # The stored hybrid has tied scores in the top 10 (RRF: a document found only by ANN at rank r and
    # one found only by BM25 at rank r both score 1/(60 + r)), which a checker breaks its own way.
    stored = pd.DataFrame(store.results_with_grades(run_id, "hybrid"))
    top = stored[stored["rank"] <= 10]
    tied = top.groupby("query_id")["score"].agg(lambda s: s.round(12).duplicated().any())
    assert tied.sum() >= 40
    as_stored = {(m.query_id, str(m.measure)): m.value
                 for m in ir_measures.iter_calc([_reference(1)["ndcg"]], qrels, _scored(top))}
    ours = {(r["strategy"], r["metric"], r["query_id"]): r["value"] for r in store.metric_values(run_id, k=10)}
    assert any(abs(v - ours[("hybrid", "ndcg", q)]) > 1e-6 for (q, _), v in as_stored.items()), \
        "the stored scores alone should rank some tied query differently"

    trec = {p.stem: p for p in export_run(store, run_id, "trec", tmp_path / "trec")}
    frames = {"trec": {s: pd.DataFrame([{"query_id": r.query_id, "doc_id": r.doc_id, "score": r.score}
                                        for r in ir_measures.read_trec_run(str(p))]) for s, p in trec.items()}}
    for fmt in ("csv", "parquet"):
        _, results = export_run(store, run_id, fmt, tmp_path / fmt)
        frame = pd.read_csv(results, dtype={"query_id": str, "doc_id": str}) if fmt == "csv" \
            else pd.read_parquet(results)
        frames[fmt] = {s: part.drop(columns="rank") for s, part in frame.groupby("strategy")}
    measures = _reference(run.threshold)
    raised = [Qrel(q.query_id, q.doc_id, q.relevance + 1) for q in qrels]  # judged@k: P@k below any grade
    compared = 0
    for fmt, by_strategy in frames.items():
        assert set(by_strategy) == {"ann", "fulltext", "hybrid"}, fmt
        for strategy, frame in by_strategy.items():
            # The top 10 by the score column (each query's ten highest scores), as a checker's @10 reads it.
            cut = _scored(frame.sort_values(["query_id", "score"], ascending=[True, False]).groupby("query_id").head(10))
            for m in ir_measures.iter_calc(list(measures.values()), qrels, cut):
                metric = next(name for name, measure in measures.items() if str(measure) == str(m.measure))
                assert ours[(strategy, metric, m.query_id)] == pytest.approx(m.value, abs=1e-9), (fmt, strategy, metric)
                compared += 1
            for m in ir_measures.iter_calc([P(rel=1) @ 10], raised, cut):
                assert ours[(strategy, "judged", m.query_id)] == pytest.approx(m.value, abs=1e-9), (fmt, strategy)
            # ranx, from the same file's scores: its mean nDCG@10 is the app's.
            qrels_ranx = ranx.Qrels({q: dict(judged) for q, judged in judgments.items()})
            mean = ranx.evaluate(qrels_ranx, ranx.Run(_scored(frame)), "ndcg@10")
            app = store.metric_summary(run_id, 10)
            assert mean == pytest.approx(next(r["value"] for r in app if r["strategy"] == strategy
                                              and r["metric"] == "ndcg"), abs=1e-9), (fmt, strategy)
    assert compared == 3 * 3 * 300 * len(measures)
    # MCP's query_results says the same scores, strictly decreasing down the stored ranks.
    for qid in tied[tied].index[:5]:
        said = query_results(store, run_id, qid, "hybrid", limit=10)["strategies"]["hybrid"]["results"]
        exported = ranked_results(store, run_id, "hybrid", qid)[:10]
        assert [r["score"] for r in said] == [r["score"] for r in exported]
        assert all(a > b for a, b in zip([r["score"] for r in said], [r["score"] for r in said][1:]))
