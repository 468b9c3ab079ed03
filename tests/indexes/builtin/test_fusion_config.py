"""`fusion = ...` on the command line (--fusion) and in strategies files (kind = "hybrid")."""

from __future__ import annotations

import pytest

from searchgrade.cli import main
from searchgrade.core.records import SearchGradeError
from searchgrade.engine.run.config import RunConfig
from searchgrade.engine.store import Store
from searchgrade.indexes.declared.spec import parse_spec
from searchgrade.indexes.settings import IndexSettings


def test_a_declared_hybrid_and_the_built_in_with_the_same_fusion_return_the_same_lists(tmp_path, tiny_beir, capsys):
    strategies = tmp_path / "s.toml"
    strategies.write_text('[strategy.fused]\nkind = "hybrid"\ninputs = ["ann", "fulltext"]\n'
                          'fusion = "combmnz(norm=zscore)"\ndepth = 5\n', encoding="utf-8")
    data = tmp_path / "d"
    assert main(["evaluate", str(tiny_beir), "--qrels", "--data-dir", str(data), "--strategies",
                 "hybrid,fused", "--strategies-file", str(strategies), "--fusion", "combmnz(norm=zscore)",
                 "--fusion-depth", "5"]) == 0
    store = Store(data)
    run = store.list_runs()[0]
    assert RunConfig.from_json(run.config).index.fusion == "combmnz(norm=zscore)"
    rows = store.results_with_grades(run.run_id)
    lists = {(s, q): [r["doc_id"] for r in rows if (r["strategy"], r["query_id"]) == (s, q)]
             for s in ("hybrid", "fused") for q in {r["query_id"] for r in rows}}
    assert all(lists[("hybrid", q)] == lists[("fused", q)] for s, q in lists)
    # CombMNZ over z-scores is not RRF: the scores say so.
    assert {round(r["score"], 6) for r in rows if r["strategy"] == "hybrid"} != set()
    assert not any(abs(r["score"] - 1 / 61) < 1e-9 for r in rows if r["strategy"] == "hybrid" and r["rank"] == 1)


def test_a_wrong_fusion_on_the_command_line_is_one_line_before_any_work(tmp_path, tiny_beir, capsys):
    code = main(["evaluate", str(tiny_beir), "--qrels", "--data-dir", str(tmp_path / "d"), "--fusion", "borda"])
    err = capsys.readouterr().err.strip()
    assert code != 0 and len(err.splitlines()) == 1 and "unknown method 'borda'" in err
    assert not (tmp_path / "d" / "searchgrade.duckdb").exists() or not Store(tmp_path / "d").list_runs()


@pytest.mark.parametrize(("table", "words"), [
    ({"kind": "hybrid", "inputs": ["ann"]}, "two or more different strategies"),
    ({"kind": "hybrid", "fusion": "convex(w=2)"}, "must be in \\[0, 1\\]"),
    ({"kind": "hybrid", "fusion": "rrf(norm=zscore)"}, "fuses ranks, not scores"),
])
def test_a_wrong_declared_hybrid_is_one_line_naming_the_strategy(table, words):
    with pytest.raises(SearchGradeError, match=r"s.toml: \[strategy.mix\]: .*" + words):
        parse_spec("mix", table, "s.toml")


def test_the_default_fusion_leaves_the_settings_fingerprint_as_it_was():
    assert "fusion" not in IndexSettings().to_dict() or IndexSettings().fingerprint("all") == IndexSettings(
        fusion="rrf").fingerprint("all")
    assert IndexSettings(fusion="convex(w=0.3)").fingerprint("all") != IndexSettings().fingerprint("all")
