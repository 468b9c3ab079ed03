"""The login gate: before a visitor may see anything, app.py calls :func:`require_login`.

On loopback with no login configured, everyone on this machine is the operator: no gate. With
$SEARCHGRADE_APP_PASSWORD set, a password form (rate-limited); else with st.login configured in
secrets.toml, the OIDC button. An exposed app with neither shows one line for its operator and
nothing else, unless started with --no-auth. What a visitor sees before logging in is this page
and nothing more: the app's navigation is replaced by this page alone, hidden.

A login is this session's, bound to the browser it was made in, and kept in the process's logins
(server/access/sessions.py), which the access gate in front of the server also reads
(server/access/gate.py): it ends with "Log out" (the session's state goes with it), after the idle
time or the session length, and a session id replayed from another browser is not logged in.
"""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from searchgrade.engine import SearchGradeError
from searchgrade.server import auth
from searchgrade.server.access.gate import CLIENT_COOKIE
from searchgrade.server.access.sessions import EXPIRED, IN, SESSIONS
from searchgrade.views._common import app_exposed, plain


def _oidc() -> auth.OIDCStatus:
    """What the app's secrets (every source Streamlit reads) say about st.login."""
    try:
        table = st.secrets.get("auth") if st.secrets.load_if_toml_exists() else None
    except Exception as exc:  # noqa: BLE001 - a broken secrets file: say so, never show its content
        return auth.OIDCStatus(True, f"the secrets cannot be read ({type(exc).__name__})")
    return auth.oidc_table_status(table)


def _session() -> tuple[str | None, str | None]:
    """This session's id, and the browser it runs in (the access gate's cookie; None without it)."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    client = st.context.cookies.get(CLIENT_COOKIE)
    return (ctx.session_id if ctx is not None else None), client if isinstance(client, str) else None


def _sign_out_button(on_click: Callable[[], None]) -> None:
    with st.sidebar:
        st.button("Log out", key="auth_logout", on_click=on_click)


def _log_out() -> None:
    """The login ends here, and the session's state with it (the rerun draws the login)."""
    session, _ = _session()
    SESSIONS.logout(session or "")
    st.session_state.clear()


def _only(draw: Callable[[], None]) -> None:
    """Draw ``draw`` as the app's only page, and stop: the navigation of the app's pages (listed
    in the sidebar by an earlier run) is replaced by this one, hidden."""
    st.navigation([st.Page(draw, title="searchgrade", default=True)], position="hidden").run()
    st.stop()


def _password_gate(expected: str) -> None:
    session, client = _session()
    state = SESSIONS.state(session, client)
    if state == IN:
        _sign_out_button(_log_out)
        return
    expired = state == EXPIRED or SESSIONS.expired_for(client)
    if expired:
        st.session_state.clear()  # an ended login's session keeps nothing

    def draw() -> None:
        st.title("searchgrade")
        if expired:
            st.info("Your session has expired: log in again.")
        # The TCP peer (None on loopback); a proxy in front makes every visitor one client, and the
        # overall limit then is what holds (server/auth.py).
        address = st.context.ip_address
        who = address if isinstance(address, str) and address else "local"
        with st.form("auth_form", clear_on_submit=True):
            given = st.text_input("Password", type="password", key="auth_password")
            submitted = st.form_submit_button("Log in", type="primary")
        if submitted:
            wait = auth.LIMITER.wait_s(who)
            if wait > 0:
                st.error(f"Too many failed logins: try again in {wait:.0f} s.")
            elif auth.password_matches(given, expected) and session is not None:
                SESSIONS.login(session, client)
                st.rerun()
            else:
                auth.LIMITER.failed(who)
                st.error("Wrong password.")

    _only(draw)


def _oidc_gate() -> None:
    session, client = _session()
    state = SESSIONS.state(session, client)
    if st.user.get("is_logged_in"):
        if state == EXPIRED or SESSIONS.expired_for(client):
            st.session_state.clear()
            st.logout()  # the provider's login lasts; this app's ended with the idle time
            st.stop()
        if state != IN and session is not None:
            SESSIONS.login(session, client)

        def log_out() -> None:
            _log_out()
            st.logout()

        _sign_out_button(log_out)
        return

    def draw() -> None:
        st.title("searchgrade")
        st.button("Log in", type="primary", key="auth_oidc_login", on_click=st.login)

    _only(draw)


def require_login() -> None:
    """Return when the visitor may use the app; otherwise draw the login (or the refusal) and stop."""
    try:
        expected = auth.password()
        if expected is not None:
            auth.check_password_strength(expected)
            _password_gate(expected)
            return
        oidc = _oidc()
        if oidc.present:
            if not oidc.ready:
                raise SearchGradeError(f"st.login is configured but cannot work: {oidc.problem}")
            _oidc_gate()
            return
        if app_exposed() and not auth.no_auth():
            raise SearchGradeError(auth.exposed_without_login_message(st.get_option("server.address") or "all addresses"))
    except SearchGradeError as exc:
        st.title("searchgrade")
        st.error(plain(f"This app cannot start: {exc}. Its operator must fix this on the server."))
        st.stop()
