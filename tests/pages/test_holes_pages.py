"""Holes on the screens: Review's "fill the holes" queue (rated, then re-scored), and the Results and
Compare widgets of views/_holes.py (run here on their own until the pages call them)."""

from __future__ import annotations

import re

from searchgrade.engine.labels.rescore import rescore_run
from searchgrade.viewmodels import review as review_model
from tests.engine.holes_fixtures import K, holey_spec
from tests.pages.conftest import APPTEST_TIMEOUT_S, open_page
from tests.pages.synthetic import write_run


def _unescaped(elements) -> list[str]:
    return [re.sub(r"\\(.)", r"\1", e.value) for e in elements]


def test_filling_the_holes_on_review_rates_the_decisive_pairs_then_rescoring_uses_them(store):
    spec, truth = holey_spec(n_queries=8)
    run_id = write_run(store, spec, n_bootstrap=50)
    at = open_page("views/review.py", state={"app_rater": "Ada"})
    assert at.radio(key="review_new_mode").options == [review_model.MODE_LABELS["holes"]]
    captions = " ".join(_unescaped(at.caption))
    assert "Full-text (BM25) leads ANN (dense) on DCG@10" in captions and "could reverse it" in captions
    settle = at.number_input(key="review_new_size_holes").value
    assert f"Rating the first {settle} of these" in captions
    at.button(key="review_new_start").click().run()
    assert f"0 of {settle} rated by Ada" in at.get("progress")[0].proto.text
    [queue] = store.review_queues(run_id)
    first = store.review_items(queue["queue_id"])[0]
    assert first["doc_id"] not in spec.qrels[first["query_id"]]  # a hole
    at.button(key=f"review_grade_{min(truth[first['query_id']].get(first['doc_id'], 0), 3)}").click().run()
    assert f"1 of {settle} rated by Ada" in at.get("progress")[0].proto.text
    child = store.get_run(rescore_run(store, run_id))
    rated = {(g["query_id"], g["doc_id"]): g for g in store.grades(child.run_id)}[
        (first["query_id"], first["doc_id"])]
    assert rated["source"] == "human" and rated["reason"].startswith("rated by Ada")


def _results_widget(run_id: str, k: int) -> None:
    from searchgrade.views._holes import results_holes

    results_holes(run_id, "ndcg", k)


def _compare_widget(run_a: str, run_b: str, k: int) -> None:
    from searchgrade.views._holes import compare_flips

    compare_flips(run_a, run_b, k)


def test_results_widget_warns_and_shows_judged_beside_the_metric(store):
    from streamlit.testing.v1 import AppTest

    spec, _ = holey_spec(n_queries=8)
    run_id = write_run(store, spec, n_bootstrap=50)
    at = AppTest.from_function(_results_widget, args=(run_id, K), default_timeout=APPTEST_TIMEOUT_S).run()
    assert not at.exception
    [warning] = _unescaped(at.warning)
    assert "favours the better-judged Full-text (BM25)" in warning and "NDCG, judged only@10" in warning
    table = at.dataframe[0].value
    assert list(table.columns) == ["Strategy", "NDCG@10", "Judged@10", "NDCG, judged only@10", "bpref@10",
                                   "RBP@10", "RBP residual"]
    assert dict(zip(table["Strategy"], table["Judged@10"], strict=True)) == {"ANN (dense)": 0.3,
                                                                             "Full-text (BM25)": 1.0}


def test_compare_widget_flags_a_change_whose_sign_flips_on_the_judged_results(store):
    from streamlit.testing.v1 import AppTest

    spec, truth = holey_spec(n_queries=8)
    before = write_run(store, spec, n_bootstrap=50)
    spec.qrels = {q: {d: truth[q].get(d, 0) for ranking in spec.rankings.values() for d in ranking[q]}
                  for q in spec.qrels}
    after = write_run(store, spec, n_bootstrap=50)
    at = AppTest.from_function(_compare_widget, args=(before, after, K), default_timeout=APPTEST_TIMEOUT_S).run()
    assert not at.exception
    [warning] = _unescaped(at.warning)
    assert warning.startswith("ANN (dense): NDCG@10 changes by +") and "judged@10 0.30 -> 1.00" in warning


def test_the_pages_offer_and_show_the_metrics_for_holes_and_no_infap_without_sampled_qrels(store):
    from tests.pages.synthetic import tiny_spec

    write_run(store, tiny_spec())
    write_run(store, tiny_spec())
    at = open_page("views/results.py")
    options = at.selectbox(key="results_metric").options
    assert {"bpref", "NDCG, judged only", "ERR", "RBP", "R-precision"} <= set(options)
    # infAP needs sampled qrels; the RBP residual and judged@k are diagnostics, shown beside the metrics.
    assert not {"infAP", "RBP residual", "Judged share"} & set(options)
    for metric in ("bpref", "ndcg_judged", "err"):
        at.selectbox(key="results_metric").set_value(metric).run()
        assert not at.exception, metric
    for page, key in (("views/compare.py", "compare_metric"), ("views/trends.py", "trends_metric")):
        at = open_page(page)
        at.selectbox(key=key).set_value("bpref").run()
        assert not at.exception, page
