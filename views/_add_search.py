"""Evaluate: "Add your search": declare a search system from the browser (a form per kind with the
strategies file's keys), Test it, save it in the run store, edit, delete, export as a snippet.

Called from views/evaluate.py with one line, after the Strategies picker. What is typed is checked
as a strategies file's declaration and then as typed in the app (viewmodels/add_search.py): on
an exposed app its hosts may not reach loopback, link-local or private networks unless the operator
allows them, on every app its secrets are ``env:`` names bound to their host and its paths lie in
the collections root. The strategies file's own declarations are listed read-only.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from searchgrade.engine import SearchGradeError
from searchgrade.server import auth
from searchgrade.server.outbound import ENV_ALLOWED_HOSTS, ENV_SECRETS
from searchgrade.viewmodels import add_search as model
from searchgrade.viewmodels.collection_form import Choice
from searchgrade.viewmodels.declared import Declared, test_strategy
from searchgrade.views._common import app_exposed, get_store, home, plain, public

_PREFIX = "evaluate_add"


def _key(kind: str, field: str) -> str:
    return f"{_PREFIX}_{kind}_{field}"


def _clear_form(kind: str) -> None:
    # Assigned, not deleted: a deleted key would leave the browser showing what was typed.
    for field in model.form_fields(kind):
        st.session_state[_key(kind, field.key)] = bool(field.default) if field.kind == "flag" else ""
    st.session_state[f"{_PREFIX}_name"] = ""
    st.session_state[f"{_PREFIX}_editing"] = None


def _edit(saved: model.Saved) -> None:
    """Fill the form with a saved strategy (an on_click callback: before the widgets are drawn)."""
    st.session_state[f"{_PREFIX}_kind"] = saved.kind
    st.session_state[f"{_PREFIX}_name"] = saved.name
    for key, value in model.form_values(saved.table).items():
        st.session_state[_key(saved.kind, key)] = value
    st.session_state[f"{_PREFIX}_editing"] = saved.name
    st.session_state[f"{_PREFIX}_result"] = None


def _delete(name: str) -> None:
    model.delete(get_store(), name)
    if st.session_state.get(f"{_PREFIX}_editing") == name:
        st.session_state[f"{_PREFIX}_editing"] = None
    st.session_state[f"{_PREFIX}_result"] = ("info", f"Deleted {name}. Runs that used it keep their copy.")


def _typed(kind: str) -> tuple[str, dict]:
    name = st.session_state.get(f"{_PREFIX}_name", "").strip()
    values = {field.key: st.session_state.get(_key(kind, field.key)) for field in model.form_fields(kind)}
    return name, model.table_from_form(kind, values)


def _save(kind: str, taken: dict[str, str], collection: str | None) -> None:
    """Check and keep the form's strategy, added for ``collection`` (an on_click callback, so the
    form can be cleared and the new strategy picked in Strategies before the widgets are drawn)."""
    editing = st.session_state.get(f"{_PREFIX}_editing")
    try:
        name, table = _typed(kind)
        spec = model.check_declaration(name, table, exposed=app_exposed(), taken=taken)
        model.save(get_store(), table, spec, replace=editing == spec.name, collection=collection)
    except SearchGradeError as exc:
        st.session_state[f"{_PREFIX}_result"] = ("error", exc.page_message)
        return
    chosen = st.session_state.get("evaluate_strategies")
    if isinstance(chosen, list) and spec.name not in chosen:
        st.session_state["evaluate_strategies"] = [*chosen, spec.name]
    _clear_form(kind)
    where = f", offered for {collection} only (it searches that collection's ids)" if collection else ""
    st.session_state[f"{_PREFIX}_result"] = (
        "success", f"Saved {spec.name}: it is in Strategies above{where}, and `searchgrade evaluate --strategies "
        f"{spec.name}` runs it from the command line.")


def add_your_search(offered: Declared, choice: Choice | None, collection: str | None = None) -> None:
    """The "Add your search" section of the Evaluate page; what is saved is added for ``collection``
    (the collection picked above)."""
    st.session_state.setdefault(f"{_PREFIX}_editing", None)
    st.session_state.setdefault(f"{_PREFIX}_result", None)
    saved = model.saved(get_store())
    editing = st.session_state[f"{_PREFIX}_editing"]
    with st.expander("Add your search", expanded=bool(editing or st.session_state[f"{_PREFIX}_result"])):
        st.caption("Grade the search system you run beside the built-ins: Elasticsearch, OpenSearch, any "
                   "HTTP API, Milvus, Postgres or LanceDB, with the keys of the strategies file. Secrets "
                   "only as env:NAME, read from the app server's environment and never stored.")
        _listing(saved, offered)
        if app_exposed() and auth.no_auth():
            st.info("This app is reachable from other machines without a login (--no-auth): adding a "
                    "search is off. Declare it in the strategies file, or restart the app with a login.")
            return
        if app_exposed():
            st.caption(plain(f"Hosts in loopback, link-local and private networks are refused unless the "
                             f"operator allows them ({ENV_ALLOWED_HOSTS}); a secret goes only to the host "
                             f"the operator bound it to ({ENV_SECRETS})."))
        _form(offered, choice, editing, collection)
        _result()


def _listing(saved: list[model.Saved], offered: Declared) -> None:
    file_name = Path(offered.path).name if offered.path else ""
    for name, kind in offered.kinds.items():
        st.markdown(plain(f"{name} ({kind})") + (f" · from {plain(file_name)}, read-only" if file_name else
                                                 " · installed, read-only"))
    for item in saved:
        left, edit, drop = st.columns([6, 1, 1])
        hidden = " · hidden: the strategies file declares this name" if item.name in offered.kinds else ""
        where = f" for {item.collection}" if item.collection else ""
        left.markdown(f"**{plain(item.name)}** ({plain(item.kind)}) · added in the app{plain(where + hidden)}")
        if item.error:
            left.caption(public(f"No longer valid: {item.error}"))
        edit.button("Edit", key=f"{_PREFIX}_edit_{item.name}", on_click=_edit, args=(item,))
        drop.button("Delete", key=f"{_PREFIX}_delete_{item.name}", on_click=_delete, args=(item.name,))
    if saved:
        snippet = model.toml_snippet({item.name: item.table for item in saved})
        with st.expander("As a strategies file"):
            st.code(snippet, language="toml")
            st.download_button("Download strategies.toml", snippet, file_name="strategies.toml",
                               mime="application/toml", key=f"{_PREFIX}_download")


def _form(offered: Declared, choice: Choice | None, editing: str | None, collection: str | None) -> None:
    kinds = model.form_kinds()
    if st.session_state.get(f"{_PREFIX}_kind") not in kinds:
        st.session_state[f"{_PREFIX}_kind"] = kinds[0]
    st.markdown(f"**{'Edit ' + plain(editing) if editing else 'A new search'}**")
    one, two = st.columns(2)
    kind = one.selectbox("Kind", kinds, key=f"{_PREFIX}_kind", format_func=lambda k: model.KIND_LABELS.get(k, k),
                         disabled=bool(editing))
    two.text_input("Name", key=f"{_PREFIX}_name", placeholder="e.g. prod-es", disabled=bool(editing),
                   help="Lower-case letters, digits, '_' and '-': the name runs and the command line use")
    fields = model.form_fields(kind)
    for field in [f for f in fields if f.primary]:
        _widget(kind, field)
    others = [f for f in fields if not f.primary]
    if others:
        with st.expander("More keys"):
            for field in others:
                _widget(kind, field)
    taken = {name: Path(offered.path).name for name in offered.kinds} if offered.path else {}
    left, middle, right = st.columns([1, 1, 4])
    tested = left.button("Test", key=f"{_PREFIX}_test",
                         help="One sample query (the collection's first) through it, before saving")
    middle.button("Save changes" if editing else "Save", type="primary", key=f"{_PREFIX}_save",
                  on_click=_save, args=(kind, taken, collection))
    if editing:
        right.button("Cancel", key=f"{_PREFIX}_cancel", on_click=_clear_form, args=(kind,))
    if tested:
        _test(kind, taken, choice)


def _widget(kind: str, field: model.Field) -> None:
    key = _key(kind, field.key)
    label = field.key + (" (required)" if field.required else "")
    default = "" if field.default is None else f" (default: {field.default})"
    help_text = f"e.g. {field.example}{default}"
    if field.kind == "flag":
        st.session_state.setdefault(key, bool(field.default))
        st.checkbox(field.key, key=key, help=help_text)
    elif field.kind == "long":
        st.text_area(label, key=key, placeholder=model.placeholder(field), help=help_text, height=100)
    else:
        st.text_input(label, key=key, placeholder=model.placeholder(field), help=help_text)


def _test(kind: str, taken: dict[str, str], choice: Choice | None) -> None:
    if choice is None:
        st.session_state[f"{_PREFIX}_result"] = ("error", "Pick a collection above first: Test runs its first query.")
        return
    from searchgrade.engine.collections import load_collection

    try:
        name, table = _typed(kind)
        spec = model.check_declaration(name or "unsaved", table, exposed=app_exposed(), taken=taken)
        with st.spinner(f"One query through {spec.name}…"):
            collection = load_collection(choice.path, **choice.options)
            result = test_strategy(spec.name, {spec.name: spec.to_json()}, collection, Path(home()))
    except SearchGradeError as exc:
        st.session_state[f"{_PREFIX}_result"] = ("error", exc.page_message)
        return
    if result.error:
        st.session_state[f"{_PREFIX}_result"] = ("error", f"{spec.name}: {result.error}")
        return
    shown = len(result.results)
    message = (f"{spec.name} answered {result.query!r} in {1000 * result.seconds:.0f} ms: "
               f"{result.in_collection} of {shown} results are in the collection")
    st.session_state[f"{_PREFIX}_result"] = ("tested", message, result.results, result.in_collection == shown and shown)


def _result() -> None:
    result = st.session_state.get(f"{_PREFIX}_result")
    if not result:
        return
    if result[0] == "error":
        st.error(public(result[1]))
    elif result[0] == "tested":
        (st.success if result[3] else st.warning)(plain(result[1]))
        st.dataframe(result[2], hide_index=True, key=f"{_PREFIX}_test_table")
    elif result[0] == "success":
        st.success(plain(result[1]))
    else:
        st.info(plain(result[1]))
