"""Review: people rate a sample of an LLM-judged run's results, blind (no judge grade, rank or
strategy shown), one at a time, with progress, skip, and resume across sessions."""

from __future__ import annotations

import streamlit as st

from searchgrade.engine import SearchGradeError
from searchgrade.viewmodels import review as review_model
from searchgrade.viewmodels.common import is_llm_run
from searchgrade.viewmodels.rating import rating_scale, save_rating
from searchgrade.views._common import get_store, pick_run, plain, run_choices
from searchgrade.views._holes import fill_holes_summary
from searchgrade.views._judges import judges_section
from searchgrade.views._rating import ask_rater, rate_buttons, show_document

st.session_state.setdefault("review_include_skipped", False)

#: The page's title, said once the run is known: a run with no judge has none to review.
title = st.empty()
title.title("Review")
#: What the page is doing: said once the review (and so its mode) is known.
intro = st.empty()
intro.caption(review_model.PAGE_CAPTIONS["pairs"])
choices = [c for c in run_choices(complete_only=True)]
if not choices:
    st.info(review_model.NEEDS)
    st.page_link("views/evaluate.py", label="Evaluate: start a run", icon=":material/play_arrow:")
    st.stop()
run_id = pick_run(choices, "review_run")
store = get_store()
run = store.get_run(run_id)
title.title("Review the judge" if is_llm_run(run) else "Review: rate the results")
if is_llm_run(run):
    with st.expander("Can I trust the judge? Its decisions, stability and agreement with people's ratings"):
        judges_section(run, "dcg", min(run.k, run.depth), "review")
modes, why_not = review_model.available_modes(run)
if why_not:
    st.info(plain(f"This run cannot be reviewed: {why_not}. {review_model.NEEDS}"))
    st.page_link("views/evaluate.py", label="Evaluate: start a run with the LLM judge",
                 icon=":material/play_arrow:")
    st.stop()
rater = ask_rater("review")
if rater is None:
    st.stop()

queues = review_model.queue_choices(store, run.run_id)
ids = [q.queue_id for q in queues]
with st.expander("Start a new review", expanded=not queues):
    if st.session_state.get("review_new_mode") not in modes:
        st.session_state.pop("review_new_mode", None)
    mode = st.radio("What to rate", list(modes), format_func=modes.get,
                    key="review_new_mode", horizontal=True,
                    help="Pairs: a sample spread over strategies, ranks and the judge's grades (measures the "
                    "judge). Whole queries: a random sample of queries, every result in their top k (what the "
                    "judge-corrected metrics need). Fill the holes: the results nobody judged that could "
                    "change which strategy leads, most decisive first.")
    one, two, three = st.columns(3)
    k = two.number_input("Top k", 1, run.depth, min(run.k, run.depth), key="review_new_k")
    pairs_mode = mode != "queries"
    default = fill_holes_summary(run.run_id, int(k)) if mode == "holes" else (100 if pairs_mode else 10)
    size = one.number_input("Pairs" if pairs_mode else "Queries", 1, 5000, max(1, min(default, 5000)),
                            key=f"review_new_size_{mode}")
    seed = three.number_input("Seed", 0, 2**31 - 1, 0, key="review_new_seed")
    if st.button("Start this review", type="primary", key="review_new_start"):
        try:
            queue_id = review_model.create_queue(store, run.run_id, mode=mode, size=int(size), k=int(k),
                                                 seed=int(seed), created_by=rater)
        except SearchGradeError as exc:
            st.error(plain(str(exc)))
        else:
            st.session_state["review_queue"] = queue_id
            st.rerun()
if not queues:
    intro.caption(review_model.PAGE_CAPTIONS[mode])
    st.stop()
if st.session_state.get("review_queue") not in ids:
    st.session_state["review_queue"] = ids[0]
labels = {q.queue_id: q.label for q in queues}
queue_id = st.selectbox("Review", ids, format_func=labels.get, key="review_queue")
intro.caption(review_model.PAGE_CAPTIONS[next(q.mode for q in queues if q.queue_id == queue_id)])

include_skipped = st.session_state["review_include_skipped"]
progress = review_model.progress(store, queue_id, rater, include_skipped=include_skipped)
st.progress(progress.rated / progress.total if progress.total else 0.0,
            text=plain(f"{progress.rated} of {progress.total} rated by {rater}"
                       + (f" · {progress.skipped} skipped" if progress.skipped else "")))
message = st.session_state.pop("review_message", None)
if message:
    (st.error if message.startswith("!") else st.success)(plain(message.lstrip("!")))

item = progress.next
back = st.session_state.get("review_back")
if back is not None:
    item = review_model.item_at(store, queue_id, back)
if item is None:
    if progress.skipped:
        st.success(f"Done, but for {progress.skipped} skipped item(s).")
        if st.button("Rate the skipped ones", key="review_skipped"):
            st.session_state["review_include_skipped"] = True
            st.rerun()
    else:
        st.success(f"All {progress.total} rated. See how far to trust the judge on Results.")
        st.page_link("views/results.py", label="Results", icon=":material/leaderboard:")
    st.stop()


scale = rating_scale(run)


def grade(value: int) -> None:
    note = st.session_state.get(f"review_note_{item.position}")
    try:
        save_rating(store, run.run_id, item.query_id, item.doc_id, value, rater, note, origin="review")
    except SearchGradeError as exc:
        st.session_state["review_message"] = f"!{exc}"
        return
    shown = {stored: (value, words) for value, (stored, words) in scale.items()}[value]
    st.session_state["review_message"] = f"Saved: {shown[0]} ({shown[1]})."
    st.session_state.pop("review_back", None)


def skip() -> None:
    store.skip_review_item(queue_id, item.position, rater)
    st.session_state.pop("review_back", None)


def previous() -> None:
    earlier = [p for p in progress.rated_positions if p < item.position]
    if earlier:
        st.session_state["review_back"] = earlier[-1]


st.markdown("**Query**")
st.text(item.query_text)
st.markdown("**Document**")
show_document(item.title, item.text)
st.text_input("Note (optional, saved with your grade)", key=f"review_note_{item.position}", max_chars=2000)
rate_buttons("review", grade, scale=scale, extra=[
    ("Skip (S)", "S", skip, False),
    ("← Previous", "Left", previous, not any(p < item.position for p in progress.rated_positions)),
])
st.caption(f"Keys: {'/'.join(str(v) for v in scale)} grade and move on, S skip, ← back to your previous grade. "
           + " · ".join(f"{v} = {w}" for v, (_, w) in scale.items()))
