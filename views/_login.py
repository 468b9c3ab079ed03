"""The login gate: before a visitor may see anything, app.py calls :func:`require_login`.

On loopback with no login configured, everyone on this machine is the operator: no gate. With
$SEARCHGRADE_APP_PASSWORD set, a password form (rate-limited, a session that expires); else with
st.login configured in secrets.toml, the OIDC button. An exposed app with neither shows one line
for its operator and nothing else, unless started with --no-auth. What a visitor sees before
logging in is this page and nothing more: the navigation and the pages are built after it.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import streamlit as st

from searchgrade.engine import SearchGradeError
from searchgrade.server import auth
from searchgrade.views._common import app_exposed, plain


def _oidc() -> auth.OIDCStatus:
    """What the app's secrets (every source Streamlit reads) say about st.login."""
    try:
        table = st.secrets.get("auth") if st.secrets.load_if_toml_exists() else None
    except Exception as exc:  # noqa: BLE001 - a broken secrets file: say so, never show its content
        return auth.OIDCStatus(True, f"the secrets cannot be read ({type(exc).__name__})")
    return auth.oidc_table_status(table)


def _sign_out_button(on_click: Callable[[], None]) -> None:
    with st.sidebar:
        st.button("Log out", key="auth_logout", on_click=on_click)


def _log_out() -> None:
    st.session_state["auth_until"] = None


def _password_gate(expected: str) -> None:
    until = st.session_state.get("auth_until")
    if until is not None and time.time() < until:
        _sign_out_button(_log_out)
        return
    st.title("searchgrade")
    if until is not None:
        st.info("Your session has expired: log in again.")
        st.session_state["auth_until"] = None
    # The TCP peer (None on loopback); a proxy in front makes every visitor one client, and the
    # overall limit then is what holds (server/auth.py).
    address = st.context.ip_address
    client = address if isinstance(address, str) and address else "local"
    with st.form("auth_form", clear_on_submit=True):
        given = st.text_input("Password", type="password", key="auth_password")
        submitted = st.form_submit_button("Log in", type="primary")
    if submitted:
        wait = auth.LIMITER.wait_s(client)
        if wait > 0:
            st.error(f"Too many failed logins: try again in {wait:.0f} s.")
        elif auth.password_matches(given, expected):
            st.session_state["auth_until"] = time.time() + auth.session_seconds()
            st.rerun()
        else:
            auth.LIMITER.failed(client)
            st.error("Wrong password.")
    st.stop()


def _oidc_gate() -> None:
    if st.user.get("is_logged_in"):
        _sign_out_button(st.logout)
        return
    st.title("searchgrade")
    st.button("Log in", type="primary", key="auth_oidc_login", on_click=st.login)
    st.stop()


def require_login() -> None:
    """Return when the visitor may use the app; otherwise draw the login (or the refusal) and stop."""
    st.session_state.setdefault("auth_until", None)
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
