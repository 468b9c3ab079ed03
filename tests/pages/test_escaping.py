"""Names and ids from a collection or a user are text on every page: never a link nor an image."""

from __future__ import annotations

from searchgrade.core.records import Document, Query
from tests.pages.conftest import open_page
from tests.pages.synthetic import tiny_spec, write_run

LINK = "[click](http://evil.example/)"
IMAGE = "![x](http://evil.example/x.png)"


def _markdown_values(at) -> list[str]:
    """Every string the page hands to Streamlit's Markdown renderer."""
    values = [e.value for kind in ("markdown", "caption", "info", "success", "warning", "error")
              for e in at.get(kind)]
    values += [e.label for e in at.expander] + [t.label for t in at.tabs]
    values += [m.label for m in at.metric] + [m.value for m in at.metric]
    return [str(v) for v in values]


def _assert_inert(at) -> None:
    live = [v for v in _markdown_values(at) if "](http" in v]
    assert live == [], f"Markdown link or image syntax left live: {live}"


def test_hostile_collection_names_and_ids_are_escaped_on_results_and_drilldown(store):
    spec = tiny_spec(collection_name=f"col {LINK} {IMAGE}", name=f"run {LINK}")
    hostile = f"d1{LINK}"
    spec.documents = [Document(hostile if d.doc_id == "d1" else d.doc_id, d.title, d.text)
                      for d in spec.documents]
    spec.queries = [Query(f"q1{IMAGE}", "what is alpha", "natural", hostile), spec.queries[1]]
    spec.qrels = {(f"q1{IMAGE}" if q == "q1" else q): {(hostile if d == "d1" else d): g for d, g in j.items()}
                  for q, j in spec.qrels.items()}
    spec.rankings = {s: {(f"q1{IMAGE}" if q == "q1" else q): [hostile if d == "d1" else d for d in docs]
                         for q, docs in by_q.items()} for s, by_q in spec.rankings.items()}
    run_id = write_run(store, spec)

    results = open_page("views/results.py", state={"app_open_run": run_id})
    _assert_inert(results)
    assert any("col \\[click\\]\\(http" in c.value for c in results.caption)

    drill = open_page("views/drilldown.py", state={"app_open_run": run_id})
    drill.selectbox(key="drilldown_query").set_value(f"q1{IMAGE}").run()
    assert not drill.exception, [e.message for e in drill.exception]
    _assert_inert(drill)
    assert any(c.value.replace("\\", "").startswith("Type: natural") and "evil" in c.value for c in drill.caption)
    assert any("evil" in e.label for e in drill.expander)  # the source document, named as text
