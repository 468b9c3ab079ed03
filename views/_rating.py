"""Rating results 0-3 in the app, shared by the drill-down, the failed queries and the review queue.

The rater's name is asked once per browser session. One result is shown at a time; the keys 0-3
grade it and move on, Left and Right step back and forth (Streamlit ignores the shortcuts while a
text box has the focus, so a note can hold digits). Document text is shown as text, never as
Markdown or HTML.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import streamlit as st

from searchgrade.engine import SearchGradeError
from searchgrade.engine.labels.rescore import rescore_run
from searchgrade.engine.store import RunRecord
from searchgrade.viewmodels.rating import (
    GRADE_WORDS,
    LabelStatus,
    RateItem,
    failed_items,
    label_status,
    query_items,
    rating_blocked,
    rating_scale,
    save_rating,
    shown_rating,
)
from searchgrade.viewmodels.results import keep_first_view
from searchgrade.views._common import get_store, plain

#: The rater's name for this browser session.
RATER_KEY = "app_rater"
#: Longest document text shown in the rating box (the drill-down's reader shows all of it).
SHOWN_CHARS = 4000


def ask_rater(key: str) -> str | None:
    """The rater's name, asked once per browser session (None until given)."""
    name = st.session_state.get(RATER_KEY)
    if name:
        return name
    typed = st.text_input("Your name, to rate results (asked once; stored with each of your ratings)",
                          key=f"{key}_rater_input", max_chars=80, placeholder="e.g. Ada Lovelace")
    if typed and typed.strip():
        st.session_state[RATER_KEY] = typed.strip()
        st.rerun()
    return None


def _move(cursor_key: str, step: int, n: int) -> None:
    st.session_state[cursor_key] = max(0, min(n - 1, st.session_state.get(cursor_key, 0) + step))


def rate_buttons(key: str, on_grade: Callable[[int], None], *, extra: Sequence[tuple[str, str, Callable[[], None], bool]] = (),
                 scale: dict[int, tuple[int, str]] | None = None) -> None:
    """A button per grade of ``scale`` (shown value -> (rating stored, words); default 0-3), each with
    its digit as shortcut, and extra (label, shortcut, callback, disabled) buttons, in one row."""
    scale = scale or {grade: (grade, words) for grade, words in GRADE_WORDS.items()}
    columns = st.columns(len(scale) + len(extra))
    for column, (shown, (stored, words)) in zip(columns, scale.items(), strict=False):
        column.button(f"{shown} · {words}", key=f"{key}_grade_{shown}", shortcut=str(shown),
                      on_click=on_grade, args=(stored,), width="stretch")
    for column, (text, shortcut, callback, disabled) in zip(columns[len(scale):], extra, strict=True):
        column.button(text, key=f"{key}_{shortcut}", shortcut=shortcut, on_click=callback, disabled=disabled,
                      width="stretch")


def show_document(title: str, text: str) -> None:
    with st.container(border=True):
        if title:
            st.text(title)
        st.text(text[:SHOWN_CHARS] + (" …" if len(text) > SHOWN_CHARS else ""))


def rate_items(items: list[RateItem], *, key: str, run_id: str, show_query: bool = False) -> None:
    """One result at a time with its context (strategy, rank, the run's grade, people's grades)."""
    if not items:
        st.caption("Nothing to rate here.")
        return
    name = ask_rater(key)
    if name is None:
        return
    cursor_key = f"{key}_cursor"
    i = min(st.session_state.get(cursor_key, 0), len(items) - 1)
    item = items[i]
    run = get_store().get_run(run_id)
    scale = rating_scale(run)
    shown = {stored: (value, words) for value, (stored, words) in scale.items()}
    keys = "/".join(str(v) for v in scale) if len(scale) == 2 else f"0-{max(scale)}"
    message = st.session_state.pop(f"{key}_message", None)
    if message:
        (st.error if message.startswith("!") else st.success)(plain(message.lstrip("!")))

    def grade(value: int) -> None:
        note = st.session_state.get(f"{key}_note_{item.query_id}_{item.doc_id}")
        try:
            save_rating(get_store(), run_id, item.query_id, item.doc_id, value, name, note)
        except SearchGradeError as exc:
            st.session_state[f"{key}_message"] = f"!{exc}"
            return
        st.session_state[f"{key}_message"] = (f"Rated {item.doc_id} {shown[value][0]} ({shown[value][1]}): "
                                              "it shows in the results above at once.")
        _move(cursor_key, 1, len(items))

    st.caption(plain(f"Result {i + 1} of {len(items)} · rating as {name} · keys: {keys} grade and move on, "
                     "← previous, → next"))
    if show_query:
        st.text(f"Query: {item.query_text}")
    if item.run_source is None:
        judged = "unjudged"
    elif item.run_grade is None:
        judged = "judge failed"
    else:
        judged = f"{'human label' if item.run_source == 'human' else 'judge'}: {item.run_grade}"
    people = ", ".join(f"{who} {shown_rating(run, g)}" for who, g in sorted(item.people.items())) or "nobody yet"
    st.caption(plain(f"{item.doc_id} · {item.found} · {judged} · rated by {people}"))
    show_document(item.title, item.text)
    st.text_input("Note (optional, saved with your grade)", key=f"{key}_note_{item.query_id}_{item.doc_id}",
                  max_chars=2000)
    rate_buttons(key, grade, scale=scale,
                 extra=[("← Previous", "Left", lambda: _move(cursor_key, -1, len(items)), i == 0),
                        ("Next →", "Right", lambda: _move(cursor_key, 1, len(items)), i == len(items) - 1)])


def rescore_controls(run: RunRecord, key: str) -> LabelStatus:
    """What people's ratings would change in this run, and "Re-score with the latest labels"; for a
    re-scored run, a way to Compare it with the run it came from."""
    if run.parent_run_id and st.button("Compare with the run it was re-scored from", key=f"{key}_compare_parent",
                                       help="Compare, with that run as A (before) and this one as B (after)"):
        st.session_state["compare_a"] = run.parent_run_id
        st.session_state["compare_b"] = run.run_id
        st.switch_page("views/compare.py")
    status = label_status(get_store(), run)
    if not status.can_rate or not status.rated_pairs:
        return status
    if not status.pending:
        st.caption(f"All {status.rated_pairs} rated pairs are already in this run's figures.")
        return status
    st.info(plain(f"{status.pending} of the {status.rated_pairs} pairs people rated "
                  f"({', '.join(status.raters)}) differ from what this run was scored with. Its stored "
                  "figures stay as they are; re-scoring makes a new run from the same search results."))
    if st.button("Re-score with the latest labels", key=f"{key}_rescore", type="primary"):
        try:
            new_id = rescore_run(get_store(), run.run_id, on_complete=keep_first_view)
        except SearchGradeError as exc:
            st.error(plain(str(exc)))
            return status
        st.cache_data.clear()
        st.session_state["app_open_run"] = new_id
        st.switch_page("views/results.py")
    return status


def rate_section(run: RunRecord, items: Callable[[], list[RateItem]], *, key: str, show_query: bool) -> None:
    """A page's rating section: why not, or the items one at a time, then the re-score button."""
    why_not = rating_blocked(run)
    if why_not:
        st.caption(plain(f"Rating is not available: {why_not}."))
        return
    rate_items(items(), key=key, run_id=run.run_id, show_query=show_query)
    rescore_controls(run, key)


def rate_query_results(run: RunRecord, query_id: str) -> None:
    """The drill-down's results of one query, to rate (the cursor restarts for another query)."""
    key = "drilldown_rate"
    if st.session_state.get(f"{key}_for") != (run.run_id, query_id):
        st.session_state[f"{key}_for"] = (run.run_id, query_id)
        st.session_state[f"{key}_cursor"] = 0
    rate_section(run, lambda: query_items(get_store(), run.run_id, query_id), key=key, show_query=False)


def rate_failed_results(run: RunRecord, strategy: str) -> None:
    """The failed-queries table's top-1 results, to rate."""
    key = "results_failed_rate"
    if st.session_state.get(f"{key}_for") != (run.run_id, strategy):
        st.session_state[f"{key}_for"] = (run.run_id, strategy)
        st.session_state[f"{key}_cursor"] = 0
    rate_section(run, lambda: failed_items(get_store(), run.run_id, strategy), key=key, show_query=True)
