from __future__ import annotations

from searchgrade.core.records import Document
from tests.pages.conftest import open_page
from tests.pages.synthetic import tiny_spec, write_run

HOSTILE = "<b>bold?</b> <script>alert('x')</script> **not markdown** [link](http://example.com)"


def test_drilldown_shows_query_source_and_each_strategys_results(tiny_run):
    at = open_page("views/drilldown.py")
    at.selectbox(key="drilldown_query").set_value("q2").run()
    texts = [t.value for t in at.text]
    assert "beta" in texts
    assert "Doc 2 title" in texts  # the source document of q2
    assert any("keyword" in c.value for c in at.caption)
    # Tab labels are Markdown: the page escapes them, Streamlit shows them as typed.
    tabs = [t.label.replace("\\", "") for t in at.tabs]
    assert tabs == ["ANN (dense)", "Full-text (BM25)", "ANN + reranker"]
    ann = next(df.value for df in at.dataframe if "Rank" in df.value.columns)
    assert ann["Doc id"].tolist() == ["d4", "d6", "d2"]
    # No grade is a dash, not "None" (Grade from says why).
    assert ann["Grade"].tolist() == ["2", "–", "3"]
    # Each strategy's DCG read against the query's ideal (q2: grades 3, 2, 2 known; ann [2, -, 3]).
    assert any("DCG@3 3.500 of the query's ideal" in c.value.replace("\\", "") for c in at.caption), \
        [c.value for c in at.caption]
    # One grade column and where it came from; no empty reason column on a run with no judge.
    assert ann["Grade from"].tolist() == ["human label", "unjudged (counts as 0)", "human label"]
    assert "Judge's reason" not in ann.columns and "Judgment" not in ann.columns
    relevant = next(df.value for df in at.dataframe if "ANN + reranker" in df.value.columns)
    # d5 is relevant to q2 but no strategy retrieved it: said so, in words.
    assert relevant["Doc id"].tolist() == ["d2", "d4", "d5"]
    assert relevant.loc[2, ["ANN (dense)", "Full-text (BM25)", "ANN + reranker"]].tolist() == ["not retrieved"] * 3
    assert relevant.loc[2, "Retrieved by"] == "none" and relevant.loc[0, "ANN (dense)"] == "rank 3"
    assert any("1 not retrieved by any strategy" in m.value for m in at.markdown)


def test_the_query_terms_are_marked_in_each_results_text_which_stays_text(store):
    spec = tiny_spec()
    spec.documents = [Document(d.doc_id, d.title, f"About beta and <b>[x](http://e.x)</b> www.e.x me@e.x {d.doc_id}")
                      for d in spec.documents]
    write_run(store, spec)
    at = open_page("views/drilldown.py")
    at.selectbox(key="drilldown_query").set_value("q2").run()
    lines = [m.value for m in at.markdown if m.value.startswith("**1.**")]
    assert lines and all(":orange-background[beta]" in line for line in lines)
    assert all("<b>" not in line and "](http" not in line for line in lines)
    # Not even a bare URL or address is left for the renderer to link.
    bare = [line.replace("\\", "") for line in lines]
    assert all("http://" not in b and "www." not in b and "me@e" not in b for b in bare), bare


def test_a_rating_shows_at_once_on_the_runs_scale(store):
    spec = tiny_spec()
    spec.qrels = {"q1": {"d1": 1, "d3": 0}, "q2": {"d2": 1, "d4": 1}}
    write_run(store, spec)
    at = open_page("views/drilldown.py", state={"app_rater": "Ada"})
    at.selectbox(key="drilldown_query").set_value("q2").run()
    # Binary labels: the buttons are 0 and 1.
    assert [b.label for b in at.button if b.key and b.key.startswith("drilldown_rate_grade_")] == [
        "0 · not relevant", "1 · relevant"]
    at.button(key="drilldown_rate_grade_1").click().run()
    ann = next(df.value for df in at.dataframe if "Rated by people" in df.value.columns)
    assert ann.set_index("Doc id").loc["d4", "Rated by people"] == "Ada 1"
    assert any("it shows in the results above at once" in s.value for s in at.success)


def test_corpus_text_is_shown_as_text_never_as_markdown_or_html(store):
    spec = tiny_spec()
    spec.documents = [Document(d.doc_id, HOSTILE if d.doc_id == "d1" else d.title, HOSTILE) for d in spec.documents]
    write_run(store, spec)
    at = open_page("views/drilldown.py")
    assert HOSTILE in [t.value for t in at.text]
    rendered_as_markdown = [m.value for m in at.markdown if "<script>" in m.value or "**not markdown**" in m.value]
    assert rendered_as_markdown == []
    assert not [m for m in at.markdown if getattr(m.proto, "allow_html", False)]
