"""The metrics for incomplete judgments equal their reference implementations, run here:

- ir_measures: trec_eval's ``Bpref``, ``nDCG(judged_only=True)@k``, ``infAP``, ``Rprec`` (through
  pytrec_eval), ``RBP(rel=T, p=0.8)`` (through cwl_eval) and ``ERR@k`` (through gdeval);
- gdeval itself at full precision (ir_measures prints its ERR with 5 decimals), and cwl_eval's own
  RBP residual.

On synthetic qrels with unjudged results and negative grades, and end to end (the command line,
the loader, the pipeline and the store) on the raw Cranfield qrels, where BM25's judged@10 is 0.29.
ir_measures takes a run as scores: each result gets n - rank + 1, so its ranking is exactly ours.
"""

from __future__ import annotations

import pkgutil
import random
import subprocess

import ir_measures
import pytest
from ir_measures import ERR, RBP, Bpref, Rprec, infAP, nDCG

from searchgrade.cli import main
from searchgrade.engine.metrics import METRICS
from searchgrade.engine.run.stored_metrics import per_query_values, recompute_values
from searchgrade.engine.store import Store
from tests.conftest import CRANFIELD

K = 10
#: gdeval prints ERR with 5 decimals: ir_measures' value is ours rounded there.
GDEVAL_PRINTED = 5e-6 + 1e-12


def _references(threshold: int, k: int = K) -> dict[str, object]:
    """Our metric -> the ir_measures measure it equals (whole-list ones over the list as given)."""
    return {"bpref": Bpref(rel=threshold), "ndcg_judged": nDCG(judged_only=True) @ k,
            "rbp": RBP(rel=threshold, p=0.8), "infap": infAP(rel=threshold), "r_precision": Rprec(rel=threshold)}


def _scored(runs: dict[str, list[str]]) -> dict[str, dict[str, float]]:
    return {q: {d: float(len(docs) - i) for i, d in enumerate(docs)} for q, docs in runs.items()}


def _holey_collection(seed: int, n_queries: int) -> tuple[dict, dict]:
    """Graded qrels -1..4 (ids numeric, as gdeval wants them) and runs where many results are unjudged."""
    rng = random.Random(seed)
    runs: dict[str, list[str]] = {}
    qrels: dict[str, dict[str, int]] = {}
    for q in range(n_queries):
        qid = str(q + 1)
        judged = [f"d{i}" for i in rng.sample(range(40), rng.randint(1, 15))]
        qrels[qid] = {d: rng.choice([-1, 0, 0, 1, 1, 2, 3, 4]) for d in judged}
        candidates = judged + [f"u{i}" for i in range(rng.randint(0, 25))]
        runs[qid] = rng.sample(candidates, min(len(candidates), rng.randint(1, 25)))
    return runs, qrels


def _ours(name: str, docs: list[str], judged: dict[str, int], k: int, threshold: int) -> float:
    scale = {"max_grade": 4} if name == "err" else {}
    return METRICS[name]([judged.get(d) for d in docs], list(judged.values()), k, threshold, **scale)


def _gdeval_full_precision(qrels, runs, k: int, tmp_path) -> dict[str, float]:
    """ERR@k per query from ir_measures' own gdeval.pl, its printf widened from 5 decimals to 12."""
    script = pkgutil.get_data("ir_measures", "bin/gdeval.pl").decode()
    assert "%.5f,%.5f" in script
    (tmp_path / "gdeval.pl").write_text(script.replace("%.5f,%.5f", "%.12f,%.12f"))
    (tmp_path / "qrels").write_text("".join(f"{q} 0 {d} {g}\n" for q, j in qrels.items() for d, g in j.items()))
    (tmp_path / "run").write_text("".join(f"{q} Q0 {d} {i + 1} {len(ds) - i} r\n"
                                          for q, ds in runs.items() for i, d in enumerate(ds)))
    out = subprocess.check_output(["perl", str(tmp_path / "gdeval.pl"), str(tmp_path / "qrels"),
                                   str(tmp_path / "run"), str(k)], text=True)
    return {line.split(",")[1]: float(line.split(",")[3]) for line in out.splitlines()[1:] if line}


@pytest.mark.parametrize("threshold", [1, 2, 3])
def test_metrics_for_holes_equal_ir_measures_on_runs_full_of_unjudged_results(threshold):
    runs, qrels = _holey_collection(seed=threshold, n_queries=200)
    references = _references(threshold)
    expected = {(r.query_id, str(r.measure)): r.value
                for r in ir_measures.iter_calc([*references.values(), ERR @ K], qrels, _scored(runs))}
    judged_share = sum(d in qrels[q] for q, docs in runs.items() for d in docs[:K]) / sum(
        len(docs[:K]) for docs in runs.values())
    assert judged_share < 0.5  # mostly holes
    for qid, docs in runs.items():
        for name, measure in references.items():
            k = K if name == "ndcg_judged" else len(docs)
            assert _ours(name, docs, qrels[qid], k, threshold) == pytest.approx(
                expected[(qid, str(measure))], abs=1e-6), (qid, name)
        if (qid, str(ERR @ K)) in expected:
            assert _ours("err", docs, qrels[qid], K, threshold) == pytest.approx(
                expected[(qid, str(ERR @ K))], abs=GDEVAL_PRINTED), qid


def test_err_equals_gdeval_at_full_precision(tmp_path):
    runs, qrels = _holey_collection(seed=9, n_queries=200)
    full = _gdeval_full_precision(qrels, runs, K, tmp_path)
    for qid, docs in runs.items():
        ours = _ours("err", docs, qrels[qid], K, 2)
        # gdeval reports only queries with a positive judgment; the others score 0 here.
        assert ours == pytest.approx(full.get(qid, 0.0), abs=1e-9), qid
    assert len(full) > 150


def test_rbp_residual_equals_cwl_evals_residual_on_lists_that_reach_k():
    from cwl.cwl_eval import RankingMaker
    from cwl.ruler.measures.cwl_rbp import RBPCWLMetric
    from ir_measures.providers.cwl_eval import IrmQrelHandler

    from searchgrade.engine.metrics.rbp import rbp_residual

    runs, qrels = _holey_collection(seed=4, n_queries=150)
    handler = IrmQrelHandler(2, None, None)
    for qid, judged in qrels.items():
        for doc, grade in judged.items():
            if grade >= 0:  # a negative grade is a hole (pooled, not judged): not a judgment for cwl
                handler.put_value(qid, doc, grade)
    compared = 0
    for qid, docs in runs.items():
        for k in (5, 10):
            if len(docs) < k:
                continue  # cwl_eval adds p^n below a short list too; we add no tail (rbp.py)
            maker = RankingMaker(qid, handler, max_n=1000)
            for doc in docs[:k]:
                maker.add(doc, "_")
            measure = RBPCWLMetric(0.8)
            measure.residuals = True
            measure.measure(maker.get_ranking())
            ours = rbp_residual([qrels[qid].get(d) for d in docs], list(qrels[qid].values()), k, 2)
            assert ours == pytest.approx(measure.residual_expected_utility, abs=1e-9), (qid, k)
            compared += 1
    assert compared > 150


# End to end on the raw Cranfield qrels: -1 codes (pooled, not judged, as trec_eval reads them) and
# the judgment of an empty document, through `evaluate --qrels-file`, BM25 keeping 20 per query.

RAW = CRANFIELD / "qrels_raw.tsv"
DEPTH = 20


def _raw_qrels() -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    for line in RAW.read_text(encoding="utf-8").splitlines()[1:]:
        qid, doc_id, grade = line.split("\t")
        qrels.setdefault(qid, {})[doc_id] = int(grade)
    return qrels


@pytest.fixture(scope="module")
def raw_run(tmp_path_factory):
    data = tmp_path_factory.mktemp("raw_holes") / "data"
    assert main(["evaluate", str(CRANFIELD), "--qrels", "--qrels-file", str(RAW), "--strategies", "fulltext",
                 "--k", str(K), "--depth", str(DEPTH), "--data-dir", str(data)]) == 0
    store = Store(data)
    [run] = store.list_runs()
    ranked: dict[str, list[str]] = {}
    for row in store.results_with_grades(run.run_id, "fulltext"):
        ranked.setdefault(row["query_id"], []).append(row["doc_id"])
    return store, run, ranked


def _expected(measures, qrels, ranked, k: int) -> dict[tuple[str, str], float]:
    cut = {q: docs[:k] for q, docs in ranked.items()}
    return {(r.query_id, str(r.measure)): r.value for r in ir_measures.iter_calc(measures, qrels, _scored(cut))}


def test_bm25_on_cranfield_is_a_strategy_with_holes(raw_run):
    store, run, _ = raw_run
    [judged] = [r["value"] for r in store.metric_summary(run.run_id, K)
                if r["metric"] == "judged" and r["strategy"] == "fulltext"]
    assert judged < 0.5
    assert store.records_sampling(run.run_id)  # the -1 codes: infAP applies
    assert sum(len(d) for d in store.pooled_unjudged(run.run_id).values()) == 225


@pytest.mark.parametrize("k", [K, DEPTH])
def test_stored_metrics_for_holes_equal_ir_measures_on_the_raw_cranfield_qrels(raw_run, k):
    store, run, ranked = raw_run
    qrels = _raw_qrels()
    t = run.threshold
    references = _references(t, k)
    expected = _expected([*references.values(), ERR @ k], qrels, ranked, DEPTH)
    # Whole-list metrics at k are the metric of the list cut at k.
    cut = _expected([m for n, m in references.items() if n != "ndcg_judged"], qrels, ranked, k)
    ours = {(r["metric"], r["query_id"]): r["value"] for r in store.metric_values(run.run_id, k=k)}
    compared = 0
    for (qid, measure), value in {**expected, **cut}.items():
        name = next((n for n, m in references.items() if str(m) == measure), None)
        if name is None:  # ERR@k
            assert ours[("err", qid)] == pytest.approx(value, abs=GDEVAL_PRINTED), qid
        elif name == "ndcg_judged" or (qid, measure) in cut:
            assert ours[(name, qid)] == pytest.approx(value, abs=1e-6), (name, qid)
        compared += 1
    assert compared >= 6 * 225


def test_a_cut_off_the_run_did_not_store_is_recomputed_as_ir_measures_computes_it(raw_run):
    store, run, ranked = raw_run
    assert 7 not in store.stored_cutoffs(run.run_id)
    qrels = _raw_qrels()
    references = _references(run.threshold, 7)
    condensed = _expected([references["ndcg_judged"], ERR @ 7], qrels, ranked, DEPTH)
    cut = _expected([m for n, m in references.items() if n != "ndcg_judged"], qrels, ranked, 7)
    values = recompute_values(store, run, [*references, "err"], 7).set_index("query_id")
    for name, measure in references.items():
        source = condensed if name == "ndcg_judged" else cut
        for qid in ranked:
            assert values.loc[qid, name] == pytest.approx(source[(qid, str(measure))], abs=1e-6), (name, qid)
    assert per_query_values(store, run, "bpref", 7)["value"].tolist() == values["bpref"].tolist()
    err = values["err"]
    for qid in ranked:
        assert err[qid] == pytest.approx(condensed.get((qid, str(ERR @ 7)), 0.0), abs=GDEVAL_PRINTED), qid


def test_recomputed_values_equal_the_stored_ones_to_the_last_bit(raw_run):
    store, run, _ = raw_run
    names = ["bpref", "ndcg_judged", "err", "rbp", "rbp_residual", "infap", "r_precision", "judged"]
    for k in (K, DEPTH):
        fast = recompute_values(store, run, names, k).set_index("query_id")
        stored = {(r["metric"], r["query_id"]): r["value"] for r in store.metric_values(run.run_id, k=k)}
        for name in names:
            for qid, value in fast[name].items():
                assert value == stored[(name, qid)], (name, k, qid)
