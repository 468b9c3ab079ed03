"""Why queries fail, on real runs: the demo with an IVF index searching one list (lost_by_index
found where exact search finds what IVF misses, checked against numpy's brute force), Cranfield's
graded labels (both kinds of a failed top 1), and a small collection where two topics fail (the
groups recover them)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from searchgrade.cli import main
from searchgrade.engine.collections import load_collection
from searchgrade.engine.failures.diagnosis import diagnose_run
from searchgrade.engine.run.config import RunConfig
from searchgrade.engine.run.pipeline import run_evaluation
from searchgrade.engine.store import Store
from searchgrade.indexes.build import document_vectors
from searchgrade.indexes.settings import IndexSettings
from searchgrade.viewmodels.failures import failure_groups
from tests.conftest import CRANFIELD, DEMO, write_beir

pytestmark = pytest.mark.slow


def test_on_the_demo_with_one_ivf_probe_lost_by_index_is_what_exact_search_finds_and_ivf_misses(tmp_path):
    settings = IndexSettings(ann_index="ivf", ivf_nprobe=1)
    store = Store(tmp_path)
    collection = load_collection(DEMO)
    config = RunConfig(strategies=("ann",), n_bootstrap=200, index=settings, max_queries=120)
    outcome = run_evaluation(collection, config, store, tmp_path)
    run = store.get_run(outcome.run_id)
    exact = run.stats["exact_search"]
    assert exact["index"] == "ivf" and exact["strategies"] == ["ann"] and exact["queries"] > 0
    d = diagnose_run(store, run)
    lost = d.rows[d.rows["cause"] == "lost_by_index"]
    assert len(lost) >= 10, d.table()
    # Each one, checked by brute force over the same vectors: the lost document is relevant, it is
    # at that rank of the exact top 10, and ann's stored top 10 does not hold it.
    docs = document_vectors(collection, settings, tmp_path)
    doc_ids = [doc.doc_id for doc in collection.documents]
    ids, queries = store.query_vectors(run.run_id)
    vector = dict(zip(ids, queries, strict=True))
    stored = store.top_lists(run.run_id, run.depth)["ann"]
    for row in lost.to_dict("records"):
        qid = row["query_id"]
        assert collection.qrels[qid].get(row["lost_doc"], 0) >= run.threshold
        exact_top = [doc_ids[i] for i in np.argsort(-(docs @ vector[qid]), kind="stable")[:run.depth]]
        assert exact_top.index(row["lost_doc"]) + 1 == row["lost_rank"]
        assert row["lost_doc"] not in stored[qid]
    # The same demo on its exact index loses nothing: no query is lost by it.
    flat = run_evaluation(collection, RunConfig(strategies=("ann",), n_bootstrap=200, max_queries=120), store,
                          tmp_path)
    flat_run = store.get_run(flat.run_id)
    assert flat_run.stats["exact_search"]["exact"] is True
    assert not (diagnose_run(store, flat_run).rows["cause"] == "lost_by_index").any()


def test_on_cranfields_graded_labels_both_kinds_of_failed_top_1_occur(tmp_path, capsys):
    data = tmp_path / "d"
    assert main(["evaluate", str(CRANFIELD), "--qrels", "--strategies", "fulltext", "--data-dir", str(data)]) == 0
    run_id = capsys.readouterr().out.strip().splitlines()[-1]
    assert main(["show", run_id, "--format", "json", "--data-dir", str(data)]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert {"run", "metrics", "comparisons", "holes", "failures", "strategy_failures"} <= set(shown)
    counts = {(r["kind"], r["category"]): r["count"] for r in shown["failures"] if r["strategy"] == "fulltext"}
    assert counts[("top1", "judged_not_relevant")] > 0 and counts[("top1", "unjudged")] > 0, counts
    failed = counts[("top1", "judged_not_relevant")] + counts[("top1", "unjudged")]
    assert sum(n for (kind, _), n in counts.items() if kind == "cause") == failed
    assert shown["strategy_failures"] == []
    # The text shows the same counts.
    assert main(["show", run_id, "--data-dir", str(data)]) == 0
    text = capsys.readouterr().out
    line = next(x for x in text.splitlines() if x.startswith("  judged_not_relevant"))
    assert int(line.split()[-1]) == counts[("top1", "judged_not_relevant")]


#: Three topics, five documents each; the qrels of the dosage and solar queries name a document of
#: another topic, so every strategy's top 1 for them (a document on their topic, graded 0) fails.
TOPICS = {
    "dosage": ["Recommended dosage of ibuprofen for adults is 200 to 400 mg every four hours.",
               "Paracetamol dosage for children depends on body weight in kilograms.",
               "Overdose risk rises when the daily dosage of acetaminophen exceeds four grams.",
               "Antibiotic dosage schedules: amoxicillin 500 mg three times a day.",
               "Insulin dosage is adjusted to blood glucose readings before meals."],
    "solar": ["Solar panels convert sunlight into electricity with photovoltaic cells.",
              "The efficiency of silicon solar panels is about twenty percent.",
              "Solar inverters turn the panels' direct current into alternating current.",
              "Rooftop solar installations need a south facing roof in the northern hemisphere.",
              "Solar farms store energy in batteries for the night."],
    "football": ["The football World Cup is held every four years.",
                 "A football team has eleven players on the pitch.",
                 "Offside is the most debated rule in football.",
                 "The goalkeeper may handle the ball inside the penalty area.",
                 "Football clubs sign players during the transfer window."],
}
QUERIES = {
    "dosage": ["how much ibuprofen can an adult take", "paracetamol dose for a child",
               "maximum daily acetaminophen dose", "amoxicillin dosage per day", "insulin dose before meals",
               "safe dosage of painkillers"],
    "solar": ["how do solar panels make electricity", "solar panel efficiency", "what does a solar inverter do",
              "best roof direction for solar panels", "storing solar energy at night", "photovoltaic cells"],
    "football": ["how often is the world cup", "how many players in a football team", "offside rule",
                 "can the goalkeeper use hands", "football transfer window"],
}


def test_when_two_topics_fail_the_failure_groups_recover_them(tmp_path):
    docs, queries, qrels = {}, {}, []
    for topic, texts in TOPICS.items():
        for i, text in enumerate(texts):
            docs[f"{topic}-{i}"] = (f"{topic} {i}", text)
    for topic, texts in QUERIES.items():
        for i, text in enumerate(texts):
            qid = f"{topic}-q{i}"
            queries[qid] = text
            # Football queries are answered by their own topic; the others' "relevant" document is a
            # football one, so their top 1 (on their topic) is judged not relevant.
            qrels.append((qid, f"football-{i % 5}" if topic != "football" else f"football-{i}", 1))
    folder = write_beir(tmp_path / "topics", docs=docs, queries=queries, qrels=qrels)
    store = Store(tmp_path)
    outcome = run_evaluation(load_collection(folder), RunConfig(strategies=("ann",), n_bootstrap=200),
                             store, tmp_path)
    d = diagnose_run(store, store.get_run(outcome.run_id))
    failed = set(d.of("ann")["query_id"])
    assert {q for q in queries if not q.startswith("football")} <= failed
    groups = failure_groups(store, outcome.run_id, "ann")
    assert groups.vectors == "embedding"  # the run's own query vectors
    by_topic = [{q.split("-")[0] for q in g["query_ids"]} for g in groups.groups]
    assert all(len(topics) == 1 for topics in by_topic), by_topic  # no group mixes the topics
    assert {t for topics in by_topic for t in topics} >= {"dosage", "solar"}
    dosage = next(g for g in groups.groups if g["query_ids"][0].startswith("dosage"))
    solar = next(g for g in groups.groups if g["query_ids"][0].startswith("solar"))
    assert {"dosage", "dose"} & set(dosage["terms"]) and "solar" in solar["terms"]
