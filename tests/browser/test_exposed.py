"""An exposed app with a password, tried as an attacker would, in Chromium and with a raw websocket
client: no field typed in the browser makes the server connect to a loopback listener, nothing but
the login answers before login, and a session ends when it ends.

One server for the module: `searchgrade app --host 0.0.0.0` with a password (exposed: bound beyond
loopback), reached at 127.0.0.1. The listener is a TCP server on 127.0.0.1 that counts every
connection, whatever the protocol (HTTP, Postgres, Milvus' gRPC, a webhook). Session ids are read
from the app's own websocket frames (Streamlit's ForwardMsg ``new_session``).
"""

from __future__ import annotations

import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from searchgrade.engine.llm.settings import LLMSettings
from searchgrade.engine.run.config import RunConfig
from searchgrade.engine.store import Store
from tests.browser.server import environment, serve_app
from tests.conftest import write_beir
from tests.pages.test_suites_page import _suite_with_a_drop

pytestmark = [pytest.mark.browser, pytest.mark.slow]

PASSWORD = "correct horse battery staple"
REFUSED = "a target typed in this app may not reach loopback, link-local or private networks"


class Listener:
    """A TCP listener on 127.0.0.1 that records every connection made to it."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            conn.close()

    def close(self) -> None:
        self.sock.close()


@pytest.fixture(scope="module")
def listener() -> Iterator[Listener]:
    found = Listener()
    yield found
    found.close()


@pytest.fixture(scope="module")
def exposed(tmp_path_factory, listener):
    tmp = tmp_path_factory.mktemp("exposed")
    home = tmp / "home"
    store = Store(home)
    _suite_with_a_drop(store)
    folder = write_beir(tmp / "tiny")
    # A run of the operator's whose endpoint moved, and one whose endpoint was typed in this app.
    for name, base_url, declared_in in (("moved endpoint", "http://10.9.9.9/v1", ""),
                                        ("typed endpoint", f"http://127.0.0.1:{listener.port}/v1", "exposed app")):
        llm = LLMSettings(model="fake", base_url=base_url, declared_in=declared_in)
        run_id = store.create_run(
            name=name, collection_name="tiny", collection_path=str(folder), mode="qrels", label_source="human+llm",
            grade_min=0, grade_max=3, threshold=1, k=3, depth=3,
            config=RunConfig(name=name, strategies=("fulltext",), llm=llm).to_json())
        store.finish_run(run_id, "failed", "ConnectionError: the endpoint went away")
    env = environment(home, SEARCHGRADE_APP_PASSWORD=PASSWORD, HOME=str(tmp))
    with serve_app(tmp, env=env, host="0.0.0.0") as url:
        yield url, home, tmp


# -- the browser ---------------------------------------------------------------------------------------

class Page:
    """A page of the app in its own browser context (its own cookies), with the session ids its
    websocket was given."""

    def __init__(self, browser, url: str) -> None:
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

        self.url = url
        self.context = browser.new_context(viewport={"width": 1500, "height": 1100})
        self.page = self.context.new_page()
        self.page.set_default_timeout(60_000)
        self.sessions: list[str] = []

        def read(payload) -> None:
            if isinstance(payload, bytes):
                message = ForwardMsg()
                message.ParseFromString(payload)
                if message.WhichOneof("type") == "new_session":
                    self.sessions.append(message.new_session.initialize.session_id)

        self.page.on("websocket", lambda ws: ws.on("framereceived", read))
        self.page.goto(url)
        self.page.get_by_label("Password", exact=True).wait_for()

    def log_in(self) -> Page:
        box = self.page.get_by_label("Password", exact=True)
        box.fill(PASSWORD)
        self.page.get_by_role("button", name="Log in").click()
        self.page.get_by_role("link", name="Results").wait_for()
        return self

    @property
    def cookie(self) -> str:
        return next(c["value"] for c in self.context.cookies() if c["name"] == "searchgrade_client")

    def fetch(self, path: str) -> tuple[int, str]:
        return tuple(self.page.evaluate("p => fetch(p).then(async r => [r.status, await r.text()])", path))

    def upload(self, session: str, size: int) -> int:
        """PUT ``size`` bytes into ``session``'s uploads as the page's own uploader does (the XSRF
        token of the page's cookie in the header)."""
        return self.page.evaluate("""async ([session, size]) => {
            const xsrf = document.cookie.split('; ').find(c => c.startsWith('_streamlit_xsrf=')).split('=')[1];
            const form = new FormData();
            form.append('file', new Blob([new Uint8Array(size)]), 'big.bin');
            const reply = await fetch(`/_stcore/upload_file/${session}/probe`,
                                      {method: 'PUT', headers: {'X-Xsrftoken': xsrf}, body: form});
            return reply.status;
        }""", [session, size])

    def close(self) -> None:
        self.context.close()


@contextmanager
def page_of(browser, url: str, *, logged_in: bool = True) -> Iterator[Page]:
    page = Page(browser, url)
    try:
        yield page.log_in() if logged_in else page
    finally:
        page.close()


def _fill(page, label: str, value: str, key: str = "Enter") -> None:
    box = page.get_by_label(label, exact=True)
    box.fill(value)
    box.press(key)
    page.wait_for_load_state("networkidle")


def _choose(page, box, option) -> None:
    """Pick ``option`` in the dropdown ``box`` (opened again if a rerun closed it)."""
    for _ in range(5):
        box.click()
        try:
            option.first.wait_for(timeout=5_000)
            break
        except Exception:  # noqa: BLE001 - the page reran as it opened: open it again
            page.keyboard.press("Escape")
    option.first.click()


def _error(page, *words: str, timeout: float | None = None) -> str:
    """The page's error that holds ``words`` (waited for), as text."""
    alert = page.locator('[data-testid="stAlertContentError"]').filter(has_text=words[0])
    for word in words[1:]:
        alert = alert.filter(has_text=word)
    alert.first.wait_for(timeout=timeout)
    return alert.first.inner_text()


# -- a raw websocket client: what an attacker without the browser sends -------------------------------------

def stream(url: str, *, resume: str | None = None, cookie: str | None = None,
           then: tuple[str, ...] = ()) -> tuple[str, str]:
    """Connect to the app's websocket (naming ``resume`` as the session to resume, presenting the
    ``cookie`` if given), run the page, then send the messages ``then`` (BackMsg types).

    Returns (the session id the server gave, the text of what it drew).
    """
    from streamlit.proto.BackMsg_pb2 import BackMsg
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
    from websockets.sync.client import connect

    protocols = ["streamlit", "no-xsrf", resume] if resume else ["streamlit"]
    headers = {"Cookie": f"searchgrade_client={cookie}"} if cookie else {}
    session, drawn = "", []
    with connect(url.replace("http://", "ws://") + "/_stcore/stream", subprotocols=protocols,
                 additional_headers=headers) as ws:
        rerun = BackMsg()
        rerun.rerun_script.query_string = ""
        ws.send(rerun.SerializeToString())
        deadline = time.time() + 30
        while time.time() < deadline:
            try:
                data = ws.recv(timeout=1)
            except TimeoutError:
                continue
            message = ForwardMsg()
            message.ParseFromString(data)
            drawn.append(data.decode("latin-1"))
            if message.WhichOneof("type") == "new_session":
                session = message.new_session.initialize.session_id
            if message.WhichOneof("type") == "script_finished" and session:
                break  # the end of this run (a resumed session may first flush the end of its last)
        for kind in then:
            message = BackMsg()
            setattr(message, kind, True)
            ws.send(message.SerializeToString())
        time.sleep(1)
    return session, " ".join(drawn)


def _only_the_login(drawn: str) -> bool:
    return "Password" in drawn and "Evaluate search quality" not in drawn


def _store_for_misses(page: Page) -> int:
    status, text = page.fetch("/_stcore/metrics")
    assert status == 200, status
    found = re.search(r'cache_lookups_total\{cache="searchgrade\.views\._common\.store_for",'
                      r'cache_type="st_cache_resource",result="miss"\} (\d+)', text)
    assert found, text[:2000]
    return int(found.group(1))


def _rerun_the_app(page: Page) -> None:
    page.page.get_by_role("link", name="Trends").click()
    page.page.get_by_role("heading", name="Trends").wait_for()
    page.page.get_by_role("link", name="Evaluate").click()
    page.page.get_by_role("button", name="Evaluate search quality").wait_for()


# -- before login ----------------------------------------------------------------------------------------

def test_before_login_metrics_uploads_and_clear_cache_are_refused(exposed, browser):
    url, _, _ = exposed
    with page_of(browser, url, logged_in=False) as visitor, page_of(browser, url) as user:
        assert visitor.fetch("/_stcore/metrics")[0] == 403
        assert visitor.fetch("/_stcore/agent/openapi.json")[0] == 404
        assert visitor.upload(visitor.sessions[-1], 5 * 1024 * 1024) == 403  # 5 MB refused before login
        assert user.fetch("/_stcore/metrics")[0] == 200  # metrics are behind the login, not gone

        # clear_cache from a session that has not logged in does nothing: the store resource stays,
        # so the next run of the app finds it (a hit, no new miss).
        misses = _store_for_misses(user)
        _, drawn = stream(url, then=("clear_cache",))
        assert _only_the_login(drawn)
        _rerun_the_app(user)
        assert _store_for_misses(user) == misses
        # The same message from a logged-in session (the user's own, from their browser) clears it:
        # the measure can tell.
        stream(url, resume=user.sessions[-1], cookie=user.cookie, then=("clear_cache",))
        user.page.reload()
        user.page.get_by_label("Password", exact=True).wait_for()
        user.log_in()
        assert _store_for_misses(user) == misses + 1

        visitor.log_in()
        assert visitor.upload(visitor.sessions[-1], 5 * 1024 * 1024) == 204  # the gate refused, not XSRF


# -- a session ends when it ends -------------------------------------------------------------------------

def test_after_logout_the_navigation_and_state_are_gone_and_a_replayed_session_id_gets_the_login_only(
        exposed, browser):
    url, _, _ = exposed
    with page_of(browser, url) as user:
        page = user.page
        _fill(page, "Run name (optional)", "kept until logout")
        session = user.sessions[-1]
        page.get_by_role("button", name="Log out").click()
        page.get_by_label("Password", exact=True).wait_for()
        time.sleep(1)
        assert page.get_by_role("link", name="Results").count() == 0  # no page listed any more
        assert page.get_by_text("Evaluate search quality").count() == 0
        for cookie in (None, user.cookie):  # another client, and even this browser's cookie
            replayed, drawn = stream(url, resume=session, cookie=cookie)
            assert replayed != session and _only_the_login(drawn), (cookie, replayed)
        user.log_in()
        assert page.get_by_label("Run name (optional)", exact=True).input_value() == ""  # the state went too


def test_after_the_browser_closes_a_replayed_session_id_gets_the_login_only(exposed, browser):
    url, _, _ = exposed
    user = Page(browser, url).log_in()
    session, cookie = user.sessions[-1], user.cookie
    user.close()  # the browser closes; Streamlit keeps the session for a while, for a reconnect
    replayed, drawn = stream(url, resume=session)
    assert replayed != session and _only_the_login(drawn)
    # The same browser (its cookie) would have it back: the login is bound to the browser, and
    # the test can tell a resumed session from a new one.
    resumed, drawn = stream(url, resume=session, cookie=cookie)
    assert resumed == session and "Evaluate search quality" in drawn and "Password" not in drawn


def test_a_login_ends_after_the_idle_time_and_lasts_while_the_person_acts(tmp_path_factory, browser):
    tmp = tmp_path_factory.mktemp("idle")
    env = environment(tmp / "home", SEARCHGRADE_APP_PASSWORD=PASSWORD, HOME=str(tmp),
                      SEARCHGRADE_APP_IDLE_MINUTES="0.15")  # 9 s
    with serve_app(tmp, env=env, host="0.0.0.0") as url, page_of(browser, url) as user:
        page = user.page
        for name in ("Trends", "Compare", "Results", "Trends", "Evaluate"):  # 15 s of clicks, 3 s apart
            time.sleep(3)
            page.get_by_role("link", name=name).click()
        page.get_by_role("button", name="Evaluate search quality").wait_for()
        time.sleep(11)
        page.get_by_role("link", name="Results").click()
        page.get_by_text("Your session has expired: log in again.").wait_for()
        assert page.get_by_label("Password", exact=True).count() == 1
        assert page.get_by_role("link", name="Trends").count() == 0


# -- every field that makes the server connect -------------------------------------------------------------

def _click_for_error(page, button, *words: str) -> str:
    """Click ``button`` until the error holding ``words`` shows (a click during a rerun may be lost)."""
    for _ in range(3):
        button.click()
        try:
            return _error(page, *words, timeout=20_000)
        except Exception:  # noqa: BLE001 - not yet: click again
            continue
    return _error(page, *words)


def _evaluate_endpoint(page, listener: Listener) -> None:
    """Evaluate: the LLM endpoint of a new run, in the spellings of loopback (each refusal names
    the address it found, and the name as typed when it differs)."""
    page.get_by_role("link", name="Evaluate").click()
    page.get_by_text("LLM endpoint (for the LLM judge)").click()
    _fill(page, "Model", "fake")
    port = listener.port
    spellings = [(f"http://127.0.0.1:{port}/v1", "127.0.0.1 is a loopback address: a target"),
                 ("http://169.254.169.254/latest/meta-data/", "169.254.169.254 is a link-local address"),
                 (f"http://[::1]:{port}/v1", "::1 is a loopback address"),
                 (f"http://[::ffff:127.0.0.1]:{port}/v1", "(::ffff:127.0.0.1 resolves to 127.0.0.1)")]
    spellings += [(f"http://{host}:{port}/v1", f"({host} resolves to 127.0.0.1)")
                  for host in ("localhost", "127.1", "2130706433", "0x7f000001", "0177.0.0.1")]
    for endpoint, refused in spellings:
        _fill(page, "Endpoint base URL", endpoint)
        if endpoint == spellings[0][0]:
            page.get_by_text("Human judgments + LLM agreement").click()
        text = _click_for_error(page, page.get_by_role("button", name="Evaluate search quality"),
                                "LLM endpoint base URL", refused)
        assert REFUSED in text


def _judge_endpoints(page, listener: Listener) -> None:
    """Evaluate: a panel's judge on its own endpoint (NAME@URL), the run's endpoint the hosted API
    (the operator's: it passes, and nothing is sent before the judges are checked)."""
    page.get_by_role("link", name="Evaluate").click()
    page.wait_for_load_state("networkidle")
    if not page.get_by_label("Model", exact=True).is_visible():  # the expander is closed on a fresh page
        page.get_by_text("LLM endpoint (for the LLM judge)").click()
    _fill(page, "Model", "fake")
    _fill(page, "Endpoint base URL", "https://api.openai.com/v1")
    page.get_by_text("Human judgments + LLM agreement").click()
    for judge, refused in ((f"near@http://127.0.0.1:{listener.port}/v1", "127.0.0.1 is a loopback address: a target"),
                           (f"near@http://[::1]:{listener.port}/v1", "::1 is a loopback address")):
        _fill(page, "Judges (optional): a panel, each grading every result", judge)
        text = _click_for_error(page, page.get_by_role("button", name="Evaluate search quality"), refused)
        assert REFUSED in text


def _resume_endpoint(page, listener: Listener) -> None:
    """Results: the Resume form's endpoint of a stopped run (the side door)."""
    for endpoint, refused in ((f"http://127.0.0.1:{listener.port}/v1", "127.0.0.1 is a loopback address: a target"),
                              (f"http://[::1]:{listener.port}/v1", "::1 is a loopback address")):
        page.get_by_role("link", name="Results").click()
        _choose(page, page.get_by_role("combobox").first, page.get_by_role("option", name=re.compile("^moved endpoint")))
        _fill(page, "LLM endpoint base URL (change it if the server moved)", endpoint)
        text = _click_for_error(page, page.get_by_role("button", name="Resume this run"), "LLM endpoint base URL",
                                refused)
        assert REFUSED in text
    # A run whose endpoint was typed in this app keeps that: resumed as it is, it is refused too.
    _choose(page, page.get_by_role("combobox").first, page.get_by_role("option", name=re.compile("^typed endpoint")))
    page.get_by_role("button", name="Resume this run").click()
    assert REFUSED in _error(page, "The run failed", REFUSED)


def _add_your_search(page, listener: Listener) -> None:
    """Evaluate, Add your search: each kind's target key (each refusal names what was refused)."""
    port = listener.port
    forms = [
        ("HTTP (any JSON API)", {"url (required)": f"http://127.0.0.1:{port}/s?q={{{{query}}}}",
                                 "hits (required)": "hits", "id (required)": "id"}, "url: 127.0.0.1 is a loopback"),
        ("Elasticsearch", {"host": f"http://localhost:{port}", "index": "docs",
                           "query": '{"match": {"text": {{query}}}}'}, "(localhost resolves to 127.0.0.1)"),
        ("Milvus", {"uri (required)": f"http://127.0.0.1:{port}", "collection (required)": "docs"},
         "uri: 127.0.0.1 is a loopback"),
        ("Postgres (pgvector, full-text, SQL)", {"dsn (required)": f"postgresql://search@[::1]:{port}/docs",
                                                 "table": "docs"}, "dsn host: ::1 is a loopback"),
    ]
    page.get_by_role("link", name="Evaluate").click()
    page.get_by_role("button", name="Start new evaluation").click()  # the resumed run's page before
    page.get_by_text("Add your search").click()
    for kind, values, refused in forms:
        _choose(page, page.get_by_role("combobox", name="Kind"), page.get_by_role("option", name=kind))
        _fill(page, "Name", "probe")
        for label, value in values.items():
            _fill(page, label, value, "Tab")
        for button in ("Test", "Save"):
            text = _click_for_error(page, page.get_by_role("button", name=button, exact=True), "[strategy.probe]",
                                    refused)
            assert REFUSED in text
    # A variable in the host is the variable's host (it crashed the Test with a KeyError).
    _choose(page, page.get_by_role("combobox", name="Kind"), page.get_by_role("option", name="HTTP (any JSON API)"))
    for label, value in (("url (required)", f"http://{{{{h}}}}:{port}/s?q={{{{query}}}}"),
                         ("hits (required)", "hits"), ("id (required)", "id")):
        _fill(page, label, value, "Tab")
    page.get_by_text("More keys").click()
    _fill(page, "variables", '{ h = "0x7f000001" }', "Tab")
    text = _click_for_error(page, page.get_by_role("button", name="Test", exact=True), "[strategy.probe]",
                            "(0x7f000001 resolves to 127.0.0.1)")
    assert REFUSED in text


def _webhook(page, listener: Listener, home: Path) -> None:
    """Suites: a suite's alert webhook, typed; then one stored as typed in this app."""
    page.get_by_role("link", name="Suites").click()
    page.get_by_text("Alerts", exact=True).click()
    _fill(page, "Webhook URL (POST JSON with a text field; empty keeps it)",
          f"http://127.0.0.1:{listener.port}/hook")
    assert REFUSED in _click_for_error(page, page.get_by_role("button", name="Save alert channels"), "webhook url",
                                       REFUSED)
    Store(home).update_suite("nightly", webhook=f"http://localhost:{listener.port}/hook",
                             alerts_declared_in="exposed app")
    page.get_by_role("button", name="Send test alert").click()
    assert "loopback address" in _error(page, "failed after")


#: Each field the enumeration finds (tests/test_connections.py TARGETS) -> how this test drives it.
DRIVEN: dict[tuple[str, str], Callable[..., None]] = {
    ("views/_evaluate_llm.py", "Endpoint base URL"): _evaluate_endpoint,
    ("views/_evaluate_llm.py", "Judges (optional): a panel, each grading every result"): _judge_endpoints,
    ("views/_common.py", "LLM endpoint base URL (change it if the server moved)"): _resume_endpoint,
    ("views/_add_search.py", "<label>"): _add_your_search,
    ("views/suites.py", "Webhook URL (POST JSON with a text field; empty keeps it)"): _webhook,
}


def test_no_field_typed_on_an_exposed_app_makes_the_server_reach_a_loopback_listener(exposed, browser, listener):
    url, home, _ = exposed
    with page_of(browser, url) as user:
        for drive in DRIVEN.values():
            if drive is _webhook:
                drive(user.page, listener, home)
            else:
                drive(user.page, listener)
            assert listener.connections == 0, drive.__name__
