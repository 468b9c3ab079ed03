"""Query drill-down: one query, its source document and every strategy's ranked results.

Corpus text is shown as text (st.text, dataframes), never as Markdown or HTML.
"""

from __future__ import annotations

import re

import pandas as pd
import streamlit as st

from searchgrade.engine.run.strategies import label
from searchgrade.viewmodels.drilldown import marked
from searchgrade.viewmodels.rating import query_ratings
from searchgrade.views._common import (
    get_store,
    home,
    pick_run,
    plain,
    query_choices,
    query_detail,
    run_choices,
)
from searchgrade.views._rating import rate_query_results

#: What Markdown would turn into a link by itself (a bare URL, www., an e-mail address).
_AUTOLINK = re.compile(r"(?i)(https?|ftp|mailto|www)(?=[:.])|(@)")


def _inert(text: str) -> str:
    """Corpus text for Markdown: every special character escaped, and a word joiner (invisible) where
    the renderer would make a bare URL or an e-mail address a link."""
    return plain(_AUTOLINK.sub(lambda m: m.group(0) + "\u2060", text))


st.title("Query drill-down")
choices = run_choices(complete_only=True)
if not choices:
    st.info("No complete run yet. Start one on the Evaluate page.")
    st.stop()
run_id = pick_run(choices, "drilldown_run")
queries = query_choices(home(), run_id)
if queries.empty:
    st.info("This run has no queries.")
    st.stop()
texts = dict(zip(queries["query_id"], queries["text"], strict=True))
ids = queries["query_id"].tolist()
if st.session_state.get("drilldown_query") not in ids:
    st.session_state["drilldown_query"] = ids[0]
types = dict(zip(queries["query_id"], queries["query_type"], strict=True))
query_id = st.selectbox("Query (type to search)", ids, key="drilldown_query",
                        format_func=lambda q: f"{q} · {types[q]} · {texts[q][:100]}")
detail = query_detail(home(), run_id, query_id)

st.subheader("Query")
st.text(detail.text)
st.caption(plain(f"Type: {detail.query_type} · id {detail.query_id}"))
if detail.source is not None:
    with st.expander(plain(f"Source document {detail.source['doc_id']} (the query was written from it)"),
                     expanded=True):
        st.text(detail.source["title"])
        st.text(detail.source["text"])
    found = [f"{label(s)}: rank {rank}" if rank else
             f"{label(s)}: not retrieved" for s, rank in detail.source_ranks.items()]
    if found:
        st.caption(plain("Source document found by " + " · ".join(found)))
for failure in detail.failures:
    st.warning(plain(f"Fails on {failure['Strategy']}: {failure['Kind'].lower()}. Cause: {failure['Cause'].lower()}: "
                     f"{failure['Evidence']}."), icon=":material/report:")
if not detail.relevant.empty:
    missed = int((detail.relevant["Retrieved by"] == "none").sum())
    st.markdown("**Known relevant documents** and the rank at which each strategy found them"
                + (f" ({missed} not retrieved by any strategy)" if missed else ""))
    st.dataframe(detail.relevant, hide_index=True, key="drilldown_relevant")

st.subheader("Results per strategy")
if not detail.results:
    st.info("No strategy returned results for this query.")
else:
    # Read afresh on every rerun (not cached with the run's results): a rating shows at once.
    rated = query_ratings(get_store(), run_id, query_id)
    tabs = st.tabs([plain(label(s)) for s in detail.results])
    for tab, (strategy, frame) in zip(tabs, detail.results.items(), strict=True):
        with tab:
            st.caption(plain(detail.dcg_words[strategy]))
            # No grade is a dash, not "None": "Grade from" says why (unjudged, judge failed).
            shown = frame.assign(**{"Rated by people": [rated.get(d, "") for d in frame["Doc id"]],
                                    "Grade": ["–" if pd.isna(g) else str(int(g)) for g in frame["Grade"]]})
            if not (shown["Judge's reason"] != "").any():
                shown = shown.drop(columns=["Judge's reason"])
            st.dataframe(shown, hide_index=True, key=f"drilldown_results_{strategy}",
                         column_config={"Score": st.column_config.NumberColumn(format="%.4f"),
                                        "Grade": st.column_config.TextColumn(
                                            help="The grade this run was scored with; 'Grade from' says whose"),
                                        "Judge's reason": st.column_config.TextColumn(width="large")})
            chunked = strategy in detail.passages
            title = ("The chunk each result was matched by, the query's terms marked" if chunked
                     else "Each result's text, the query's terms marked")
            with st.expander(title, expanded=True):
                for rank, doc_id in zip(frame["Rank"], frame["Doc id"], strict=True):
                    doc = detail.documents.get(doc_id, {"title": "", "text": ""})
                    chunk = detail.matched_chunk(strategy, doc_id)
                    text = chunk[1] if chunk else doc["text"]
                    # Every segment escaped (plain): corpus text stays text, only our marks are Markdown.
                    body = "".join(f":orange-background[{_inert(part)}]" if hit else _inert(part)
                                   for part, hit in marked(text, detail.text, width=max(320, len(text))
                                                           if chunk else 320))
                    where = f" ({plain(chunk[0])})" if chunk else ""
                    st.markdown(f"**{int(rank)}.** {plain(doc['title'] or doc_id)}{where} · {body}")

st.subheader("Rate these results")
rate_query_results(get_store().get_run(run_id), query_id)

st.subheader("Read a document")
# The source document first, then the relevant ones, then results in rank order.
order = ([detail.source["doc_id"]] if detail.source else []) + list(detail.relevant.get("Doc id", []))
order += [d for frame in detail.results.values() for d in frame["Doc id"]]
doc_ids = [d for d in dict.fromkeys(order) if d in detail.documents]
if doc_ids:
    doc_id = st.selectbox("Document", doc_ids, key="drilldown_doc",
                          format_func=lambda d: f"{d} · {detail.documents[d]['title'][:100]}")
    st.text(detail.documents[doc_id]["title"])
    st.text(detail.documents[doc_id]["text"])
