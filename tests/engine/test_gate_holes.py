"""The regression gate on the metrics for incomplete judgments, named as ir_measures names them."""

from __future__ import annotations

import pytest

from searchgrade.core.records import SearchGradeError
from searchgrade.engine.gate import run_gate
from searchgrade.engine.store import Store
from tests.engine.holes_fixtures import holey_spec
from tests.pages.synthetic import write_run


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    store = Store(tmp_path_factory.mktemp("gate_holes"))
    spec, _ = holey_spec(n_queries=12)
    return store, write_run(store, spec, n_bootstrap=50), write_run(store, spec, n_bootstrap=50)


def test_the_gate_reads_ir_measures_names_and_a_bare_whole_list_metric_means_the_depth(two_runs):
    store, a, b = two_runs
    result = run_gate(store, a, b, metric="Bpref(rel=2)")
    assert (result.metric, result.k) == ("bpref", 10) and not result.failed
    # A persistence the run did not store is computed from its stored results.
    result = run_gate(store, a, b, metric="RBP(rel=2,p=0.9)@5")
    assert (result.metric, result.k) == ("rbp(p=0.9)", 5)
    assert [line.change for line in result.lines] == [0.0, 0.0]  # the same run twice


@pytest.mark.parametrize(("metric", "says"), [("infAP", "infAP does not apply"),
                                              ("RBP(rel=3)", "use rel=2 or leave rel out")])
def test_the_gate_refuses_what_the_runs_cannot_give(two_runs, metric, says):
    store, a, b = two_runs
    with pytest.raises(SearchGradeError, match=says):
        run_gate(store, a, b, metric=metric)
