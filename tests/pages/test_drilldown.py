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
    assert ann["Grade"].tolist()[0] == 2 and ann["Grade"].isna().tolist() == [False, True, False]
    assert ann["Judge's reason"].tolist()[1] == "unjudged (counts as 0)"
    relevant = next(df.value for df in at.dataframe if "ANN + reranker" in df.value.columns)
    # d5 is relevant to q2 but no strategy retrieved it.
    assert relevant["Doc id"].tolist() == ["d2", "d4", "d5"]
    assert relevant.loc[2, ["ANN (dense)", "Full-text (BM25)", "ANN + reranker"]].isna().all()


def test_corpus_text_is_shown_as_text_never_as_markdown_or_html(store):
    spec = tiny_spec()
    spec.documents = [Document(d.doc_id, HOSTILE if d.doc_id == "d1" else d.title, HOSTILE) for d in spec.documents]
    write_run(store, spec)
    at = open_page("views/drilldown.py")
    assert HOSTILE in [t.value for t in at.text]
    rendered_as_markdown = [m.value for m in at.markdown if "<script>" in m.value or "**not markdown**" in m.value]
    assert rendered_as_markdown == []
    assert not [m for m in at.markdown if getattr(m.proto, "allow_html", False)]
