"""Query logs, query sets and clicks end to end through the command line, on the tiny collection:
a UBI log and its events in, a set sampled, a run graded by clicks, the traffic figures shown; bad
logs stopped with one line and nothing stored."""

from __future__ import annotations

import json

import pytest

from searchgrade.cli import main
from searchgrade.engine.store import Store
from tests.conftest import TINY_QUERIES

#: The tiny collection's queries, searched 40, 20, 13, 10 and 8 times (Zipf), by up to four users.
COUNTS = {"q1": 40, "q2": 20, "q3": 13, "q4": 10, "q5": 8}
#: What the users see for each query (results 1-3) and how many of the searches click which result.
SHOWN = {"q1": ["d2", "d1", "d3"], "q2": ["d3", "d4", "d9"], "q3": ["d5", "d6", "d1"], "q4": ["d10", "d9", "d2"],
         "q5": ["d11", "d12", "d3"]}
RELEVANT = {"q1": "d1", "q2": "d3", "q3": "d6", "q4": "d10", "q5": "d11"}


def write_log(folder):
    lines, events, n = [], [], 0
    for qid, count in COUNTS.items():
        for i in range(count):
            n += 1
            sid = f"s{n}"
            # Mixed case and spacing: one query after normalisation.
            text = TINY_QUERIES[qid].upper() if i % 3 == 0 else "  " + TINY_QUERIES[qid]
            lines.append({"query_id": sid, "client_id": f"u{i % 4}", "user_query": text,
                          "timestamp": f"2024-05-{1 + i % 28:02d}T10:00:00Z", "application": "tiny"})
            for pos, doc in enumerate(SHOWN[qid], start=1):
                events.append(f"{sid},impression,{doc},{pos}")
                if doc == RELEVANT[qid] and i % 2 == 0:
                    events.append(f"{sid},click,{doc},{pos}")
    lines.append({"query_id": "s-rare", "client_id": "u9", "user_query": "a rare personal query",
                  "timestamp": "2024-05-02T10:00:00Z"})
    log = folder / "ubi_queries.jsonl"
    log.write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8")
    clicks = folder / "events.csv"
    clicks.write_text("query_id,action,doc_id,position\n" + "\n".join(events) + "\n", encoding="utf-8")
    return log, clicks


@pytest.fixture(scope="module")
def traffic_run(tmp_path_factory):
    from tests.conftest import write_beir

    folder = tmp_path_factory.mktemp("traffic")
    collection = write_beir(folder / "tiny")
    log, clicks = write_log(folder)
    home = folder / "home"
    common = ["--data-dir", str(home)]
    assert main(["queries", "import", str(log), "--collection", "tiny", "--min-count", "2", *common]) == 0
    assert main(["queries", "sample", "ubi_queries", "--method", "top", "--size", "5", "--name", "top5", *common]) == 0
    assert main(["clicks", "import", str(clicks), *common]) == 0
    assert main(["evaluate", str(collection), "--clicks", "--query-set", "top5", "--strategies", "fulltext",
                 "--min-impressions", "5", *common]) == 0
    store = Store(home)
    return store, store.list_runs()[0], folder, home


def test_a_log_is_kept_as_its_normalised_queries_and_the_floor_drops_the_rare_one(traffic_run):
    store, _, _, _ = traffic_run
    log = store.query_log("ubi_queries")
    assert log["layout"] == "ubi" and log["collection_name"] == "tiny"
    assert log["queries"] == 6 and log["kept_queries"] == 5 and log["kept_searches"] == 91
    rows = store.log_rank_range("ubi_queries", 1, 10)
    assert [r["searches"] for r in rows] == [40, 20, 13, 10, 8]
    assert rows[0]["text"] == TINY_QUERIES["q1"].lower() and rows[0]["users"] == 4
    assert all("rare" not in r["text"] for r in rows)
    assert store._dicts("SELECT count(*) AS n FROM query_log_ids WHERE rank IS NULL", [])[0]["n"] == 1


def test_a_run_graded_by_clicks_judges_what_was_clicked_enough(traffic_run):
    store, run, _, _ = traffic_run
    assert run.status == "complete" and run.mode == "clicks" and run.label_source == "clicks"
    grades = store.grades(run.run_id)
    by_pair = {(g["query_id"], g["doc_id"]): g for g in grades}
    ids = {q["text"]: q["query_id"] for q in store.queries(run.run_id)}
    for qid, doc in RELEVANT.items():
        top = by_pair[(ids[TINY_QUERIES[qid].lower()], doc)]
        assert top["source"] == "clicks" and top["model"] == "clicks:pbm" and top["grade"] >= 2
    never_clicked = [g for g in grades if g["doc_id"] not in RELEVANT.values()]
    assert never_clicked and all(g["grade"] == 0 for g in never_clicked), [(g["doc_id"], g["grade"], g["reason"]) for g in never_clicked]
    # One ranker, no result ever shown at two positions: the position bias is the stated default 1/p,
    # so a result at position 3 is examined a third of the times it is shown. q1's and q2's (40 and
    # 20 searches) reach the 5 examinations and are judged 0 (never clicked); q3's, q4's and q5's (13,
    # 10 and 8 searches) stay unjudged, not graded by the prior. Too few pairs for cut-points of
    # their own: the default ones, said so.
    clicks = run.stats["clicks"]
    assert clicks["position_bias"]["source"] == "default" and clicks["position_bias"]["theta"] == pytest.approx(
        [1, 1 / 2, 1 / 3])
    assert clicks["thresholds"]["source"] == "default" and "fewer than the 20" in clicks["thresholds"]["reason"]
    assert clicks["judged_pairs"] == 11 and clicks["unjudged_pairs"] == 4
    third = {(ids[TINY_QUERIES[q].lower()], SHOWN[q][2]): q for q in SHOWN}
    assert sorted(third[(g["query_id"], g["doc_id"])] for g in grades if (g["query_id"], g["doc_id"]) in third) == [
        "q1", "q2"]
    assert all(g["grade"] == 0 for g in grades if (g["query_id"], g["doc_id"]) in third)


def test_show_prints_the_traffic_weighted_mean_beside_the_per_query_mean(traffic_run, capsys):
    _, run, _, home = traffic_run
    assert main(["show", run.run_id, "--data-dir", str(home)]) == 0
    out = capsys.readouterr().out
    assert "query set top5 (top, log ubi_queries: 100.0% of its searches)" in out
    assert "traffic-weighted" in out and "head" in out
    assert main(["show", run.run_id, "--format", "json", "--data-dir", str(home)]) == 0
    traffic = json.loads(capsys.readouterr().out)["run"]["traffic"]
    row = traffic["strategies"][0]
    assert row["strategy"] == "fulltext" and row["TW CI low"] == row["Traffic-weighted"] == row["TW CI high"]


def _one_error_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("searchgrade: error: ")
    return err[0]


@pytest.mark.parametrize(("content", "name", "expected"), [
    ("timestamp,user\n2024-05-01,u1\n", "noquery.csv", "no query column"),
    ("query,timestamp\napple pie,2024-05-01\nmars,last tuesday\n", "badtime.csv", "not a time"),
    ("query,count\napple pie,3\nmars,many\n", "badcount.csv", "not a whole number"),
])
def test_a_bad_log_is_one_line_and_nothing_is_stored(traffic_run, tmp_path, capsys, content, name, expected):
    store, _, _, home = traffic_run
    before = store.query_logs()
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    assert main(["queries", "import", str(path), "--data-dir", str(home)]) == 1
    assert expected in _one_error_line(capsys)
    assert store.query_logs() == before
    assert store._dicts("SELECT count(DISTINCT log_name) AS n FROM query_log_queries", [])[0]["n"] == len(before)


def test_events_whose_query_ids_are_not_in_the_log_are_one_line_and_keep_the_clicks(traffic_run, tmp_path, capsys):
    store, _, _, home = traffic_run
    before = store.click_log("ubi_queries")
    path = tmp_path / "other_events.csv"
    path.write_text("query_id,action,doc_id,position\ns1,impression,d1,1\nnot-ours,click,d2,1\n", encoding="utf-8")
    assert main(["clicks", "import", str(path), "--log", "ubi_queries", "--data-dir", str(home)]) == 1
    assert "query ids that are not in log 'ubi_queries' (e.g. 'not-ours')" in _one_error_line(capsys)
    assert store.click_log("ubi_queries") == before


def test_clicks_without_a_query_set_is_refused_before_any_run(traffic_run, capsys):
    store, _, folder, home = traffic_run
    runs = len(store.list_runs())
    assert main(["evaluate", str(folder / "tiny"), "--clicks", "--data-dir", str(home)]) == 1
    assert "add --query-set NAME" in _one_error_line(capsys)
    assert len(store.list_runs()) == runs


def test_the_judge_on_a_query_set_and_against_the_clicks(traffic_run):
    from searchgrade.engine.collections import load_collection
    from searchgrade.engine.llm.settings import LLMSettings
    from searchgrade.engine.run.config import RunConfig
    from searchgrade.engine.run.pipeline import run_evaluation
    from tests.engine.llm.fake_server import FakeOpenAIServer
    from tests.engine.llm_fakes import Recorder

    store, clicks_run, folder, home = traffic_run
    collection = load_collection(folder / "tiny")
    recorder = Recorder()
    with FakeOpenAIServer(recorder) as server:
        llm = LLMSettings(model="fake", base_url=server.base_url, concurrency=2, timeout_s=10)
        judged = run_evaluation(collection, RunConfig(mode="llm", query_set="top5", strategies=("fulltext",),
                                                      n_bootstrap=200, llm=llm), store, home).run_id
        assert recorder.posts["querygen"] == 0  # the set's queries, none generated
        both = run_evaluation(collection, RunConfig(mode="clicks", query_set="top5", click_model="pbm",
                                                    min_impressions=5, strategies=("fulltext",), n_bootstrap=200,
                                                    llm=llm), store, home).run_id
    assert {q["text"] for q in store.queries(judged)} == {q["text"] for q in store.queries(clicks_run.run_id)}
    assert store.get_run(judged).label_source == "llm"
    run = store.get_run(both)
    assert run.label_source == "clicks"
    agreement = run.stats["click_agreement"]
    retrieved_and_clicked = {(r["query_id"], r["doc_id"]) for r in store.results_with_grades(both)
                             if r["source"] == "clicks"}
    assert agreement["n"] == len(retrieved_and_clicked) > 0
    assert all(g["source"] == "clicks" for g in store.grades(both))  # click grades win over the judge's
    from searchgrade.viewmodels.traffic import traffic_view

    view = traffic_view(store, run, "dcg", 10)
    assert view.agreement is not None and view.agreement.n == agreement["n"]


def test_the_judge_and_a_panel_fill_the_holes_the_clicks_left(traffic_run):
    """`--clicks --llm --judge-unjudged`: the pairs the log left unjudged take the judge's grade (or
    a panel's, issue 35's judges), click grades win where both exist, and each figure says whose."""
    from searchgrade.engine.collections import load_collection
    from searchgrade.engine.llm.settings import LLMSettings
    from searchgrade.engine.run.config import RunConfig
    from searchgrade.engine.run.pipeline import run_evaluation
    from searchgrade.viewmodels.clicks import judge_share
    from tests.engine.llm.fake_server import FakeOpenAIServer
    from tests.engine.llm_fakes import Recorder

    store, clicks_run, folder, home = traffic_run
    collection = load_collection(folder / "tiny")
    with FakeOpenAIServer(Recorder()) as server:
        llm = LLMSettings(model="fake", base_url=server.base_url, concurrency=2, timeout_s=10)
        options = dict(mode="clicks", query_set="top5", click_model="pbm", min_impressions=5, strategies=("fulltext",),
                       n_bootstrap=200, llm=llm, judge_unjudged=True)
        one = run_evaluation(collection, RunConfig(**options), store, home).run_id
        panel = run_evaluation(collection, RunConfig(**options, judges=("fake", "other")), store, home).run_id
    clicks = {(g["query_id"], g["doc_id"]): g["grade"] for g in store.grades(clicks_run.run_id)}
    retrieved = {(r["query_id"], r["doc_id"]) for r in store.results_with_grades(clicks_run.run_id)}
    for run_id in (one, panel):
        run = store.get_run(run_id)
        assert run.label_source == "clicks+llm"
        grades = {(g["query_id"], g["doc_id"]): g for g in store.grades(run_id)}
        assert {p: g["grade"] for p, g in grades.items() if g["source"] == "clicks"} == clicks  # clicks win
        filled = {p for p, g in grades.items() if g["source"] == "llm"}
        assert filled == retrieved - set(clicks) and run.stats["clicks"]["filled_by_judge"] == len(filled) > 0
        shares = judge_share(store, run, 10)
        assert 0 < shares["fulltext"] < 1
    assert store.get_run(panel).stats["judges"]  # the panel's own report, as for any panel
