"""One way to compare two runs: the same pair of runs gives identical intervals and verdicts, for the
same strategies checked, through Compare's view model, the gate, a suite's regression and MCP's
compare_runs; and the checks refuse what cannot be compared, in one line."""

from __future__ import annotations

import random

import pytest

from searchgrade.core.records import Query, SearchGradeError
from searchgrade.engine.gate import run_gate
from searchgrade.engine.statistics.pairing import RESAMPLES, SEED, compare_runs, pairing_key
from searchgrade.engine.store import Store
from searchgrade.engine.suites.regression import compare_runs as suite_compare
from searchgrade.server.mcp.reads import compare_runs as mcp_compare
from searchgrade.viewmodels.compare import compare_runs as page_compare
from tests.pages.synthetic import random_spec, tiny_spec, write_run

STRATEGIES = ("ann", "fulltext", "hybrid")


def _pair(store: Store, mode: str) -> tuple[str, str]:
    """Two runs of the same 40 queries: in B, ANN moves a little (two queries reordered), full-text
    is better (its judged documents moved up) and hybrid worse (its results reversed) on most
    queries. For generated queries (paired by text) B's ids are shuffled, so a pairing by id, or in
    B's order, would give other intervals."""
    a = random_spec(40, n_docs=300, seed=11, strategies=STRATEGIES, name="A")
    b = random_spec(40, n_docs=300, seed=11, strategies=STRATEGIES, name="B")
    for i, (qid, docs) in enumerate(b.rankings["ann"].items()):
        if i < 2:
            docs.reverse()
    for i, (qid, docs) in enumerate(b.rankings["fulltext"].items()):
        if i % 4:
            docs.sort(key=lambda d, qid=qid: -b.qrels[qid].get(d, -1))
    for i, docs in enumerate(b.rankings["hybrid"].values()):
        if i % 3:
            docs.reverse()
    if mode == "llm":
        ids = [q.query_id for q in b.queries]
        random.Random(0).shuffle(ids)
        rename = dict(zip([q.query_id for q in b.queries], ids, strict=True))
        b.queries = [Query(rename[q.query_id], q.text, q.query_type, q.source_doc_id) for q in b.queries]
        b.qrels = {rename[qid]: judged for qid, judged in b.qrels.items()}
        b.rankings = {s: {rename[qid]: docs for qid, docs in r.items()} for s, r in b.rankings.items()}
    for spec in (a, b):
        spec.mode = mode
        if mode == "llm":
            # The judge grades every retrieved pair (what it found not relevant is a 0, not a hole),
            # so no comparison rests on holes (engine/statistics/holes.py); the values are the same.
            for qid, docs in ((q, d) for ranking in spec.rankings.values() for q, d in ranking.items()):
                spec.qrels[qid] = {**dict.fromkeys(docs, 0), **spec.qrels[qid]}
    return write_run(store, a, n_bootstrap=100), write_run(store, b, n_bootstrap=100)


@pytest.mark.parametrize("mode", ["qrels", "llm"])
def test_one_pair_of_runs_gives_the_same_intervals_and_verdicts_on_every_surface(tmp_path, mode):
    store = Store(tmp_path)
    a, b = _pair(store, mode)
    assert pairing_key(store.get_run(a), store.get_run(b)) == ("query_id" if mode == "qrels" else "text")
    one = compare_runs(store, a, b, "ndcg@10")
    assert one.comparisons == 3 and {c.strategy for c in one.changes} == set(STRATEGIES)
    assert any(c.significant for c in one.changes) and not all(c.significant for c in one.changes)
    expected = {c.strategy: (c.before, c.after, *c.difference[:6]) for c in one.changes}

    page = page_compare(store, a, b, "ndcg", 10)
    gate = run_gate(store, a, b, metric="ndcg@10", margin=0.0)
    suite = suite_compare(store, a, b, "ndcg@10", 0.0)
    mcp = mcp_compare(store, a, b, "ndcg@10")
    seen = {
        "Compare": {r["strategy"]: (r["Run A"], r["Run B"], r["Change"], r["CI low"], r["CI high"], r["p-value"],
                                    r["Queries"], r["Comparisons"]) for r in page.deltas.to_dict("records")},
        "gate": {g.strategy: (g.baseline, g.candidate, g.change, g.ci_low, g.ci_high, g.p_value, g.n, g.comparisons)
                 for g in gate.lines},
        "suite": {c.strategy: (c.before, c.after, c.change, c.ci_low, c.ci_high, c.p_value, c.n, c.m) for c in suite},
        "MCP": {d["strategy"]: (d["run_a"], d["run_b"], d["change"], d["ci_low"], d["ci_high"], d["p_value_adjusted"],
                                d["queries"], d["comparisons"]) for d in mcp["deltas"]},
    }
    for surface, figures in seen.items():
        assert figures == expected, surface  # exactly: the same values, order, resamples and seed
    # The verdicts: significant on Compare and MCP exactly where a margin-0 gate fails or passes a
    # gain, and a suite says drop or gain.
    for c in one.changes:
        said = {"Compare": page.deltas.set_index("strategy").loc[c.strategy, "Verdict"],
                "MCP": next(d["verdict"] for d in mcp["deltas"] if d["strategy"] == c.strategy)}
        assert set(said.values()) == {"significant" if c.significant else "not distinguishable"}
        assert next(g.failed for g in gate.lines if g.strategy == c.strategy) == c.drop
        assert next(s.verdict for s in suite if s.strategy == c.strategy) == c.verdict
    assert (RESAMPLES, SEED) == (10_000, 0)


def test_the_strategies_checked_are_the_family(tmp_path):
    store = Store(tmp_path)
    a, b = _pair(store, "qrels")
    two = compare_runs(store, a, b, "ndcg@10", strategies=["ann", "hybrid"])
    gate = run_gate(store, a, b, metric="ndcg@10", strategies=["ann", "hybrid"], margin=0.0)
    assert two.comparisons == 2 and [line.comparisons for line in gate.lines] == [2, 2]
    assert [(line.ci_low, line.ci_high) for line in gate.lines] == \
        [(c.difference.ci_low, c.difference.ci_high) for c in two.changes]


@pytest.mark.parametrize(("metric", "says"), [
    ("judged@3", "is a diagnostic of the grades, not search quality"),
    ("rbp_residual", "is a diagnostic"),
    ("infap", "its qrels record no sampling"),
    ("ndcg@9", "k of 9 is above run"),
    ("P(rel=3)@3", "asks for rel=3"),
])
def test_what_cannot_be_compared_is_refused_in_one_line(tmp_path, metric, says):
    store = Store(tmp_path)
    a, b = write_run(store, tiny_spec(name="a")), write_run(store, tiny_spec(name="b"))
    with pytest.raises(SearchGradeError) as error:
        compare_runs(store, a, b, metric)
    assert says in str(error.value) and "\n" not in str(error.value)


def test_a_metric_the_labels_do_not_support_or_a_different_threshold_is_refused(tmp_path):
    store = Store(tmp_path)
    binary = tiny_spec(name="binary")
    binary.qrels = {qid: {d: min(g, 1) for d, g in judged.items()} for qid, judged in binary.qrels.items()}
    binary.threshold = 1
    a, b = write_run(store, binary), write_run(store, tiny_spec(name="graded"))
    with pytest.raises(SearchGradeError, match="Share highly relevant does not apply to run .*binary labels"):
        compare_runs(store, a, a, "pct_highly_relevant@3")
    with pytest.raises(SearchGradeError, match="count a result relevant at different grades"):
        compare_runs(store, a, b, "precision@3")
    compare_runs(store, a, b, "dcg@3")  # grades as gains: no threshold read
