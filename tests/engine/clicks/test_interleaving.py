"""Team-draft interleaving: the merge, the comparison by hand, a simulation with known truth, and the
results file through the command line (stored with its log, the comparison printed and shown, bad
files one line with nothing stored)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from searchgrade.cli import main
from searchgrade.engine.clicks.interleaving import QueryOutcome, compare_interleaved, team_draft
from searchgrade.engine.clicks.simulation import simulate_interleaving, system_means
from searchgrade.engine.store import Store


def test_team_draft_takes_turns_and_never_shows_a_document_twice():
    rng = np.random.default_rng(0)
    a, b = ["d1", "d2", "d3", "d4"], ["d2", "d5", "d1", "d6"]
    for _ in range(50):
        shown, teams = team_draft(a, b, rng, k=4)
        assert len(shown) == len(set(shown)) == 4
        assert abs(teams.count(0) - teams.count(1)) <= 1  # turns: neither team ever two picks ahead
        for doc, team in zip(shown, teams, strict=True):
            ranking = a if team == 0 else b
            # Each pick is its team's best document not shown before it.
            before = set(shown[: shown.index(doc)])
            assert doc == next(d for d in ranking if d not in before)


def test_the_comparison_by_hand():
    outcomes = [QueryOutcome("q1", "x", "y", 3, 1, 0, 5), QueryOutcome("q2", "x", "y", 1, 1, 2, 4),
                QueryOutcome("q3", "y", "x", 0, 2, 0, 2)]  # logged the other way round: 2 wins of x
    (c,) = compare_interleaved(outcomes)
    assert (c.system_a, c.system_b, c.wins_a, c.wins_b, c.ties, c.searches, c.queries) == ("x", "y", 6, 2, 2, 11, 3)
    # Per query, x's share minus y's of its searches with a click: 2/4, 0/4, 2/2; their mean.
    assert c.difference.diff == pytest.approx((0.5 + 0.0 + 1.0) / 3)
    assert c.share_a == pytest.approx(6 / 8)
    assert not c.difference.estimable and "needs at least 6" in c.sentence()  # three queries: no verdict


@pytest.mark.slow
def test_interleaving_prefers_the_system_the_qrels_prefer():
    from searchgrade.engine.collections import load_collection
    from searchgrade.indexes.builtin.fulltext import FulltextSearcher, build_index
    from tests.conftest import CRANFIELD

    collection = load_collection(CRANFIELD)
    queries = [q for q in collection.queries if q.query_id in collection.qrels]
    docs = [d.doc_id for d in collection.documents]
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as tmp:
        index = build_index(Path(tmp), docs, [d.content for d in collection.documents])
        good = {q.query_id: [d.doc_id for d in FulltextSearcher(index, 1.5, 0.75).search_one(q.text, 10)]
                for q in queries}
    rng = np.random.default_rng(1)
    worse = {q: [d if rng.uniform() > 0.5 else docs[rng.integers(len(docs))] for d in ranked]
             for q, ranked in good.items()}
    truth = {q: dict(j) for q, j in collection.qrels.items()}
    means = system_means({"good": good, "worse": worse}, truth, list(good))
    assert means["good"] > means["worse"]
    outcomes = simulate_interleaving(good, worse, dict.fromkeys(good, 20), truth, names=("good", "worse"),
                                     max_grade=4, eta=0.8, seed=0)
    (c,) = compare_interleaved(outcomes)
    assert c.difference.significant and c.difference.diff > 0 and c.share_a > 0.5
    assert "people prefer good" in c.sentence()


@pytest.fixture(scope="module")
def log_home(tmp_path_factory):
    from tests.engine.traffic.test_traffic_cli import write_log

    folder = tmp_path_factory.mktemp("interleaving")
    log, _ = write_log(folder)
    home = folder / "home"
    assert main(["queries", "import", str(log), "--data-dir", str(home)]) == 0
    return folder, home


def test_an_interleaving_file_is_stored_with_its_log_and_its_comparison_shown(log_home, capsys):
    folder, home = log_home
    rows = ["query_id,system_a,system_b,clicks_a,clicks_b"]
    # s1..s40 are searches of the log's most searched query; s41.. of the next ones.
    for i in range(1, 80):
        rows.append(f"s{i},bm25,hybrid,{i % 3 == 0},{1 if i % 3 else 0}".replace("True", "1").replace("False", "0"))
    path = folder / "interleaving.csv"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    assert main(["clicks", "import-interleaving", str(path), "--data-dir", str(home)]) == 0
    err = capsys.readouterr().err
    # Four queries of the tiny log: the wins are counted, and too few queries for a verdict is said.
    assert "79 interleaved searches of 4 queries" in err and "bm25 wins 26 and hybrid 53" in err
    assert "a verdict needs at least 6" in err
    stored = Store(home).interleaving_results("ubi_queries")
    assert {(r["system_a"], r["system_b"]) for r in stored} == {("bm25", "hybrid")}
    assert sum(r["wins_b"] for r in stored) == 53 and sum(r["wins_a"] for r in stored) == 26
    assert main(["clicks", "show", "--format", "json", "--data-dir", str(home)]) == 0
    (pair,) = json.loads(capsys.readouterr().out)["interleaving"]
    assert (pair["a"], pair["b"], pair["wins_a"], pair["wins_b"]) == ("bm25", "hybrid", 26, 53)


@pytest.mark.parametrize("content, expected", [
    ("query_id,system_a,system_b,clicks_a,clicks_b\ns1,bm25,hybrid,one,0\n", "not whole numbers"),
    ("query_id,system_a,clicks_a,clicks_b\ns1,bm25,1,0\n", "no system b column"),
    ("query_id,system_a,system_b,clicks_a,clicks_b\ns1,bm25,bm25,1,0\n", "the same system twice"),
])
def test_a_bad_interleaving_file_is_one_line_and_keeps_what_was_stored(log_home, tmp_path, capsys, content,
                                                                       expected):
    _, home = log_home
    before = Store(home).interleaving_results("ubi_queries")
    path = tmp_path / "bad.csv"
    path.write_text(content, encoding="utf-8")
    assert main(["clicks", "import-interleaving", str(path), "--data-dir", str(home)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and expected in err[0]
    assert Store(home).interleaving_results("ubi_queries") == before
