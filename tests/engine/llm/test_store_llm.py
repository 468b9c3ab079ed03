from __future__ import annotations

from searchgrade.engine.store import Store


def test_migration_2_adds_the_llm_tables(tmp_path):
    assert Store(tmp_path).schema_version() >= 2
    # Reopening applies nothing twice.
    assert Store(tmp_path).schema_version() >= 2


def test_cache_keeps_the_first_payload_of_a_key(tmp_path):
    store = Store(tmp_path)
    store.llm_cache_put("judge", [("k1", "m", "p", {"grade": 2}), ("k1", "m", "p", {"grade": 3})])
    store.llm_cache_put("judge", [("k1", "m", "p", {"grade": 0}), ("k2", "m", "p", {"grade": 1})])
    assert store.llm_cache_get("judge", ["k1", "k2", "k3"]) == {"k1": {"grade": 2}, "k2": {"grade": 1}}
    assert store.llm_cache_get("querygen", ["k1"]) == {}
    assert store.llm_cache_get("judge", []) == {}


def test_usage_adds_up_across_processes(tmp_path):
    Store(tmp_path).add_llm_usage("r1", "judge", {"requests": 3, "latency_s": 0.5})
    Store(tmp_path).add_llm_usage("r1", "judge", {"requests": 2, "ok": 2})
    usage = Store(tmp_path).llm_usage("r1")
    assert usage["judge"]["requests"] == 3 + 2
    assert usage["judge"]["ok"] == 2 and usage["judge"]["latency_s"] == 0.5
    assert Store(tmp_path).llm_usage("other") == {}
