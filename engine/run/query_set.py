"""A run on a query set sampled from a query log: its queries, and what its plan should say.

``--query-set NAME``: the run evaluates the set's queries (engine/traffic/query_sets.py), graded by
the LLM judge (mode llm: no query is generated) or by clicks (mode clicks: engine/run/clicks.py).
People's ratings apply as in every run (they match by query text).
"""

from __future__ import annotations

from typing import Any

from searchgrade.core.records import Query, SearchGradeError
from searchgrade.engine.traffic.query_sets import run_queries


def query_set_plan(store: Any, set_name: str, collection_name: str, *, clicks: bool) -> tuple[list[Query], list[str]]:
    """The set's queries and the notes the run should carry; for a clicks run, its log must have clicks.

    Args:
        store: The run store (searchgrade.engine.store.Store).
    """
    record = store.query_set(set_name)
    notes = []
    if record["collection_name"] and record["collection_name"] != collection_name:
        notes.append(f"query set {record['set_name']!r} comes from a log of collection "
                     f"{record['collection_name']!r}, not {collection_name!r}")
    if record["method"] == "uniform" and record["size"] < record["log_queries"]:
        notes.append(f"query set {record['set_name']!r} is a uniform sample: its traffic-weighted figures "
                     "rarely hold the head queries that carry most searches (stratified or frequency sets do)")
    if clicks and store.click_log(record["log_name"]) is None:
        raise SearchGradeError(f"log {record['log_name']!r} of query set {record['set_name']!r} has no clicks; import "
                               f"them with `searchgrade clicks import EVENTS --log {record['log_name']}`")
    return run_queries(store, set_name), notes
