"""judged@k divides by k (as P@k): a short list is not "fully judged", and stored runs are
recomputed once by migration 16, with a note, to the bits a new run stores."""

from __future__ import annotations

import pytest

from searchgrade.engine.store import Store
from searchgrade.engine.store.judged_recompute import NOTE
from tests.pages.synthetic import tiny_spec, write_run


def _short_spec():
    """The tiny run at k = 3, full-text returning one result for q1 and two for q2."""
    spec = tiny_spec(name="short lists")
    spec.rankings = {**spec.rankings, "fulltext": {"q1": ["d1"], "q2": ["d6", "d2"]}}
    return spec


def _rows(store: Store, table: str, run_id: str) -> list[tuple]:
    columns = {"metric_values": "strategy, query_id, k, value",
               "metric_summary": "strategy, k, value, ci_low, ci_high, n",
               "run_summary": "strategy, k, value, ci_low, ci_high, n"}[table]
    with store.connect() as con:
        return con.execute(f"SELECT {columns} FROM {table} WHERE run_id = ? AND metric = 'judged' "  # noqa: S608 - the test's own table names
                           "ORDER BY ALL", [run_id]).fetchall()


def test_a_short_list_is_judged_over_the_k_places(tmp_path):
    store = Store(tmp_path)
    run_id = write_run(store, _short_spec())
    values = {(r["strategy"], r["query_id"]): r["value"] for r in store.metric_values(run_id, "judged", 3)}
    # q1 [d1 judged, -, -]: 1/3, not 1/1; q2 [d6 unjudged, d2 judged, -]: 1/3, not 1/2.
    assert values[("fulltext", "q1")] == pytest.approx(1 / 3)
    assert values[("fulltext", "q2")] == pytest.approx(1 / 3)
    assert values[("ann", "q1")] == pytest.approx(2 / 3)  # [d3 judged, d1 judged, d5 unjudged]


def test_migration_16_recomputes_stored_runs_once_with_a_note(tmp_path):
    store = Store(tmp_path)
    short = write_run(store, _short_spec(), n_bootstrap=1000)
    full = write_run(store, tiny_spec(name="full lists"), n_bootstrap=1000)
    for run_id in (short, full):  # what the pipeline records; write_run's config leaves them out
        store.update_run(run_id, config={**store.get_run(run_id).config, "n_bootstrap": 1000, "seed": 0})
    expected = {(run_id, table): _rows(store, table, run_id)
                for run_id in (short, full) for table in ("metric_values", "metric_summary", "run_summary")}
    # The store as an older version left it: judged divided by the results returned in the top k.
    with store.connect() as con:
        con.execute("""UPDATE metric_values SET value = value * k / least(k, n.n)
                       FROM (SELECT strategy AS s, query_id AS q, count(*) AS n FROM results WHERE run_id = ?
                             GROUP BY ALL) n
                       WHERE run_id = ? AND metric = 'judged' AND strategy = n.s AND query_id = n.q""",
                    [short, short])
        con.execute("UPDATE metric_summary SET value = 9 WHERE run_id = ? AND metric = 'judged'", [short])
        con.execute("UPDATE run_summary SET value = 9 WHERE run_id = ? AND metric = 'judged'", [short])
        con.execute("INSERT OR REPLACE INTO paired_tests VALUES (?, 'dcg', 3, '[]')", [full])
        con.execute("DELETE FROM schema_version WHERE version = 16")
    assert _rows(store, "metric_values", short) != expected[(short, "metric_values")]

    reopened = Store(tmp_path)
    for run_id in (short, full):
        for table in ("metric_values", "metric_summary", "run_summary"):
            assert _rows(reopened, table, run_id) == expected[(run_id, table)], (run_id, table)
    assert reopened.get_run(short).notes.count(NOTE) == 1
    assert NOTE not in reopened.get_run(full).notes  # nothing changed there
    assert reopened.stored_paired_tests(full, "dcg", 3) is None
