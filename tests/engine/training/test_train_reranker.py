"""Training a real reranker (the packaged all-MiniLM-L6-v2 body) on small synthetic runs.

Claims: grades with a learnable signal give a significant held-out gain; random grades give none;
and no query is ever scored by a model that trained on it or on a query leaking into it.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import NamedTuple

import pyarrow.parquet as pq
import pytest

from searchgrade.cli.show import print_table
from searchgrade.core.records import SearchGradeError
from searchgrade.engine.collections import load_collection
from searchgrade.engine.run.config import RunConfig
from searchgrade.engine.run.pipeline import run_evaluation
from searchgrade.engine.store import Store
from searchgrade.engine.training.pairs import NegativeSampling
from searchgrade.engine.training.reranker import RerankerTrainingConfig, train_reranker
from searchgrade.engine.training.trainer import TrainingSettings
from searchgrade.indexes.rerank.trained import CrossFittedScorer, TrainedReranker, digest, leakage_keys
from searchgrade.indexes.settings import IndexSettings
from tests.conftest import write_beir
from tests.engine.training import synthetic


class Pair(NamedTuple):
    query_id: str
    query: str
    doc_id: str
    content: str

pytestmark = pytest.mark.slow

#: Small and quick: the synthetic documents are a dozen words; 4 folds of 36 training queries.
SETTINGS = TrainingSettings(epochs=2, max_length=40, batch_size=16, learning_rate=2e-4, seed=0)
SAMPLING = NegativeSampling(negatives=4, first=7, last=20)


def _train(tmp: Path, learnable: bool, name: str):
    data_dir = tmp / "data"
    store = Store(data_dir)
    collection = synthetic.write_collection(tmp / "synthetic")
    run_id = synthetic.store_run(store, collection, learnable)
    config = RerankerTrainingConfig(name=name, folds=4, sampling=SAMPLING, training=SETTINGS, depth=10,
                                    threads=1)
    return store, run_id, data_dir, train_reranker(store, run_id, data_dir, config)


@pytest.fixture(scope="module")
def learnable(tmp_path_factory):
    return _train(tmp_path_factory.mktemp("learnable"), True, "synthetic-learnable")


@pytest.fixture(scope="module")
def random_labels(tmp_path_factory):
    return _train(tmp_path_factory.mktemp("random"), False, "synthetic-random")


def _figures(reranker: TrainedReranker, metric: str = "ndcg") -> list[dict]:
    return [f for f in reranker.card["heldout"]["figures"] if f["metric"] == metric]


def test_a_learnable_signal_gives_a_significant_held_out_gain(learnable):
    *_, reranker = learnable
    figures = _figures(reranker)
    assert {f["strategy"] for f in figures} == {"ann", "fulltext", "hybrid"}
    for f in figures:
        assert f["n"] == 48
        assert f["reranked"] > f["base"] + 0.1, f
        assert f["significant"], f


def test_random_labels_give_no_significant_gain(random_labels):
    *_, reranker = random_labels
    for f in _figures(reranker) + _figures(reranker, "dcg"):
        assert not (f["significant"] and f["diff"] > 0), f


def test_no_query_was_scored_by_a_model_that_saw_it_or_a_query_leaking_into_it(learnable):
    *_, reranker = learnable
    card = reranker.card
    queries = {q["query_id"]: q for q in card["queries"]}
    keys = {qid: set(leakage_keys(q["text"], q["source_doc_id"])) for qid, q in queries.items()}
    by_digest = {digest(q["text"]): qid for qid, q in queries.items()}
    scored_by = {}
    for model, query_digest in zip(*pq.read_table(reranker.folder / "scores.parquet",
                                                  columns=["model", "query_digest"]).to_pydict().values(),
                                   strict=True):
        scored_by.setdefault(by_digest[query_digest], set()).add(model)
    assert set(scored_by) == set(queries)  # every query held out once ...
    for qid, models in scored_by.items():
        assert len(models) == 1  # ... by one model
        trained_on = set(card["models"][next(iter(models))]["train_query_ids"])
        leaking = {other for other in queries if keys[other] & keys[qid]}
        assert qid in leaking and len(leaking) == 2  # itself and its twin from the same source document
        assert not trained_on & leaking
        # ... and its blend weight was chosen on other queries than these
        validated_on = set(card["models"][next(iter(scored_by[qid]))]["validation_query_ids"])
        assert not validated_on & leaking


def test_the_scorer_sends_each_training_query_to_its_fold_and_new_ones_to_a_plain_model(learnable):
    _, _, data_dir, reranker = learnable
    loaded = TrainedReranker.load(data_dir, reranker.name)
    sources = {q.query_id: q.source_doc_id for q in synthetic.queries()}
    scorer = CrossFittedScorer(loaded, sources)
    fold_of = {q["query_id"]: q["fold"] for q in loaded.card["queries"]}
    query = synthetic.queries()[0]
    docs = synthetic.documents()
    doc_ids = [f"t0-{i}" for i in range(6)]
    pairs = [Pair(query.query_id, query.text, d, f"{docs[d][0]} {docs[d][1]}") for d in doc_ids]
    raw = scorer.score_pairs(pairs)
    assert scorer.used[query.query_id] == (f"fold-{fold_of[query.query_id]}", True)
    assert scorer.cache_hits == 6 and scorer.scored == 0  # the held-out scores are reused
    final = scorer.finalize(query.query_id, raw)
    assert final[0] > final[1]  # blue above green
    # the same text under another id is the same query; a new question of that source too
    assert scorer.assign("other-id", query.text).model == f"fold-{fold_of[query.query_id]}"
    scorer.source_docs["new"] = query.source_doc_id
    assert scorer.assign("new", "a brand new question").held_out
    assert scorer.assign("unseen", "a question nobody asked") == ("fold-1", False)
    fresh = scorer.score_pairs([Pair("unseen", "a question nobody asked", d, "text") for d in ("a", "b")])
    assert len(fresh) == 2 and scorer.scored == 2
    assert scorer.summary()["mode"] == "mixed"


def test_the_model_card_says_what_it_learnt_from(learnable):
    _, run_id, _, reranker = learnable
    card = json.loads((reranker.folder / "card.json").read_text())
    assert card["source_run"]["run_id"] == run_id
    assert card["labels"]["by_source"] == {"llm": 48 * 6}
    assert card["folds"] == 4 and set(card["models"]) == {"fold-1", "fold-2", "fold-3", "fold-4"}
    assert card["training"]["seed"] == 0 and card["timings"]["train_s"] > 0
    readme = (reranker.folder / "README.md").read_text()
    assert "measured on queries the reranker never saw" in readme


def test_a_taken_name_is_refused_without_replace(learnable):
    store, run_id, data_dir, reranker = learnable
    config = RerankerTrainingConfig(name=reranker.name, folds=4, training=SETTINGS)
    with pytest.raises(SearchGradeError, match="--replace"):
        train_reranker(store, run_id, data_dir, config)


def test_a_separate_training_split_trains_one_model_and_holds_out_every_run_query(tmp_path):
    data_dir = tmp_path / "data"
    store = Store(data_dir)
    collection = synthetic.write_collection(tmp_path / "synthetic")
    run_id = synthetic.store_run(store, collection, True, topics=range(16, 24))
    # the split: topics 0-16, one of which (16) is also a run query: it must be left out
    queries_path, qrels_path = synthetic.write_split(tmp_path, range(0, 17))
    config = RerankerTrainingConfig(name="split", sampling=SAMPLING, training=SETTINGS, depth=10,
                                    threads=1, train_qrels=str(qrels_path), train_queries=str(queries_path))
    card = train_reranker(store, run_id, data_dir, config).card
    assert card["mode"] == "training-split" and card["folds"] == 0 and set(card["models"]) == {"full"}
    trained = set(card["models"]["full"]["train_query_ids"]) | set(card["models"]["full"]["validation_query_ids"])
    assert trained == {f"train-{q.query_id}" for q in synthetic.queries(range(0, 16))}
    assert any("left out 2 training-split queries" in n for n in card["notes"])
    assert card["heldout"]["queries"] == 16
    ndcg = [f for f in card["heldout"]["figures"] if f["metric"] == "ndcg"]
    assert all(f["reranked"] > f["base"] for f in ndcg), ndcg


def test_evaluate_with_the_trained_reranker_scores_each_query_by_its_fold_model(learnable, tmp_path):
    """`--reranker-model trained:NAME` on the training run's queries: none of the three reranked
    strategies is skipped, each query is reranked by the model of its fold (which trained on
    neither it nor its twin), and the run's figures are the card's held-out figures: the run's
    --rerank-depth (the default 50) is capped at the depth the card measured (10)."""
    store, _, data_dir, reranker = learnable
    card = reranker.card
    assert card["heldout"]["depth"] == 10
    folder = write_beir(tmp_path / "synthetic-qrels", synthetic.documents(),
                        {q.query_id: q.text for q in synthetic.queries()},
                        [(g.query_id, g.doc_id, g.grade) for g in synthetic.grades(True)])
    config = RunConfig(name="trained reranker", k=10, depth=10, n_bootstrap=200,
                       index=IndexSettings(reranker_model=f"trained:{reranker.name}", rerank_depth=50))
    outcome = run_evaluation(load_collection(folder), config, store, data_dir)
    assert outcome.status == "complete" and outcome.skipped == {}
    record = store.get_run(outcome.run_id).stats["reranker"]
    assert (record["trained"], record["mode"], record["held_out"], record["plain"]) == \
        (reranker.name, "cross-fitted", 48, 0)
    fold_of = {q["query_id"]: q["fold"] for q in card["queries"]}
    assert record["models"] == {qid: f"fold-{fold}" for qid, fold in fold_of.items()}
    for qid, model in record["models"].items():
        twin = qid[:-2] + ("k0" if qid.endswith("n0") else "n0")
        assert not {qid, twin} & set(card["models"][model]["train_query_ids"])
    assert record["scored"] == 0 and record["cache_hits"] > 0  # the held-out scores, reused
    assert record["max_depth"] == 10
    table = io.StringIO()
    print_table(store, outcome.run_id, None, table)  # `searchgrade show` says which reranker, how
    assert (f"reranked strategies: trained reranker {reranker.name} (cross-fitted: 48 queries each by "
            "the fold model that never saw it, trained on run ") in table.getvalue()
    assert "; top 10 of each strategy rescored)" in table.getvalue()
    means = {r["strategy"]: r["value"] for r in store.metric_summary(outcome.run_id, k=10)
             if r["metric"] == "ndcg"}
    for f in _figures(reranker):
        assert means[f["strategy"]] == pytest.approx(f["base"], abs=1e-9)
        assert means[f"{f['strategy']}_rerank"] == pytest.approx(f["reranked"], abs=1e-9)


def test_a_deeper_run_rescores_no_deeper_than_the_card_and_keeps_the_base_order_below(learnable, tmp_path):
    """--depth 20 with a reranker measured at depth 10: the top 10 are the depth-10 run's (the
    blend is standardised over the same 10 candidates, every score reused) and ranks 11-20 are the
    base strategy's, in its order."""
    store, _, data_dir, reranker = learnable
    folder = write_beir(tmp_path / "synthetic-qrels", synthetic.documents(),
                        {q.query_id: q.text for q in synthetic.queries()},
                        [(g.query_id, g.doc_id, g.grade) for g in synthetic.grades(True)])
    hits = {}
    for depth in (10, 20):
        config = RunConfig(name=f"depth {depth}", k=10, depth=depth, n_bootstrap=50,
                           strategies=("fulltext", "fulltext_rerank"),
                           index=IndexSettings(reranker_model=f"trained:{reranker.name}", rerank_depth=50))
        outcome = run_evaluation(load_collection(folder), config, store, data_dir)
        assert outcome.status == "complete" and outcome.skipped == {}
        assert store.get_run(outcome.run_id).stats["reranker"]["scored"] == 0
        hits[depth] = {key: [d.doc_id for d in h.docs] for key, h in store.stored_hits(outcome.run_id).items()}
    for (strategy, qid), ids in hits[20].items():
        if strategy == "fulltext_rerank":
            assert ids[:10] == hits[10][(strategy, qid)]
            assert ids[10:] == hits[20][("fulltext", qid)][10:]


def test_evaluate_with_a_trained_reranker_that_is_not_there_stops_before_the_run(learnable, tmp_path):
    store, _, data_dir, _ = learnable
    before = len(store.list_runs())
    config = RunConfig(index=IndexSettings(reranker_model="trained:no-such-reranker"))
    with pytest.raises(SearchGradeError, match="no trained reranker 'no-such-reranker'.*train-reranker"):
        run_evaluation(load_collection(write_beir(tmp_path / "tiny")), config, store, data_dir)
    assert len(store.list_runs()) == before


def test_resume_of_a_run_whose_trained_reranker_is_gone_stops_before_any_work(learnable, tmp_path, capsys):
    """One line naming the reranker and the fix, exit != 0, and the run left as it was."""
    from searchgrade.cli import main

    store, _, data_dir, reranker = learnable
    folder = write_beir(tmp_path / "synthetic-qrels", synthetic.documents(),
                        {q.query_id: q.text for q in synthetic.queries()},
                        [(g.query_id, g.doc_id, g.grade) for g in synthetic.grades(True)])
    config = RunConfig(name="to resume", k=10, depth=10, n_bootstrap=50,
                       strategies=("fulltext", "fulltext_rerank"),
                       index=IndexSettings(reranker_model=f"trained:{reranker.name}", rerank_depth=10))
    run_id = run_evaluation(load_collection(folder), config, store, data_dir).run_id
    store.finish_run(run_id, "interrupted", "stopped for the test")
    moved = reranker.folder.with_name("moved-away")
    reranker.folder.rename(moved)
    try:
        capsys.readouterr()
        code = main(["resume", run_id, "--data-dir", str(data_dir)])
        err = capsys.readouterr().err.strip()
    finally:
        moved.rename(reranker.folder)
    assert code != 0
    assert len(err.splitlines()) == 1, err
    assert f"no trained reranker {reranker.name!r}" in err and "train-reranker" in err
    run = store.get_run(run_id)
    assert run.status == "interrupted" and run.error == "stopped for the test"
