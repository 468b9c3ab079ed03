"""A suite over a declared HTTP strategy served by the real local search server, alerting to a real
webhook listener and a real SMTP server (aiosmtpd) on loopback requiring STARTTLS (its certificate
signed by a CA the test makes, trusted through SEARCHGRADE_SMTP_CA_FILE) and a login:

- the server unchanged: no alert;
- its ranking degraded (made-up documents put first): exactly one regression alert on each channel,
  with the suite, strategy, metric, before -> after with the CI, the adjusted p, the queries that
  dropped most and the link to Compare;
- the server down: stopped (connections refused), then up but failing every search: one "could not
  evaluate" alert for the outage (not one per run), and one when it evaluates again; the recovered
  ranking is a significant gain, recorded, no alert; the SMTP password wrong meanwhile: the email is
  recorded refused (not retried) and the run does not fail;
- a failing channel is retried, recorded failed, and the test alert says so with exit 1.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from searchgrade.cli import main
from searchgrade.engine.store import Store
from searchgrade.engine.suites.regression import StrategyChange
from tests.conftest import TINY_QRELS, TINY_QUERIES, write_beir
from tests.engine.suites.smtp import PASSWORD, USER, Mailbox
from tests.indexes.declared.conftest import SearchServer

#: The tiny collection with four more queries: nine, so one strategy's paired test can reach a verdict.
QUERIES = {**TINY_QUERIES, "q6": "rovers on the red planet", "q7": "racket sport on clay courts",
           "q8": "steeping green tea leaves", "q9": "volcanic islands and lava"}
QRELS = [*TINY_QRELS, ("q6", "d4", 2), ("q7", "d8", 2), ("q8", "d12", 2), ("q9", "d9", 2)]


class Listener:
    """A webhook listener: collects every POSTed JSON body; answers ``status``."""

    def __init__(self) -> None:
        self.bodies: list[dict] = []
        self.status = 200
        listener = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if listener.status == 200:
                    listener.bodies.append(json.loads(body))
                self.send_response(listener.status)
                self.send_header("Content-Length", "0")
                self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks/T0/SECRET-TOKEN"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def texts(self) -> list[str]:
        return [b["text"] for b in self.bodies]


@pytest.fixture(scope="module")
def world(tmp_path_factory, certificates):
    folder = write_beir(tmp_path_factory.mktemp("beir") / "tiny9", queries=QUERIES, qrels=QRELS)
    server = SearchServer(folder, tmp_path_factory.mktemp("server-data"))
    listener, mailbox = Listener(), Mailbox(certificates[1:])  # STARTTLS and a login required
    yield folder, server, listener, mailbox
    server.stop()
    listener.server.shutdown()
    mailbox.stop()


def _run(capsys, *argv) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_one_regression_alert_per_drop_one_outage_alert_per_outage(world, certificates, tmp_path, capsys,
                                                                   monkeypatch):
    folder, server, listener, mailbox = world
    monkeypatch.setenv("SEARCHGRADE_SMTP_HOST", "127.0.0.1")
    monkeypatch.setenv("SEARCHGRADE_SMTP_PORT", str(mailbox.port))
    monkeypatch.setenv("SEARCHGRADE_SMTP_USER", USER)
    monkeypatch.setenv("SEARCHGRADE_SMTP_PASSWORD", PASSWORD)
    monkeypatch.setenv("SEARCHGRADE_SMTP_CA_FILE", str(certificates[0]))
    monkeypatch.setenv("SEARCHGRADE_APP_URL", "http://searchgrade.example:8501")
    data = str(tmp_path / "d")
    strategies = tmp_path / "strategies.toml"
    strategies.write_text(f'[strategy.es]\nkind = "elasticsearch"\nhost = "{server.url}"\nindex = "tiny"\n'
                          "query = '{\"match\": {\"text\": {{query}}}}'\nretries = 0\nbackoff_s = 0.01\n",
                          encoding="utf-8")
    server.control()
    code, out, _ = _run(capsys, "evaluate", str(folder), "--qrels", "--strategies-file", str(strategies),
                        "--strategies", "es", "--data-dir", data)
    assert code == 0
    source = out.strip().splitlines()[-1]
    assert _run(capsys, "suite", "create", "prod", "--from", source, "--data-dir", data)[0] == 0
    # The SMTP server's CA not trusted yet: one line naming the fix, nothing stored.
    monkeypatch.delenv("SEARCHGRADE_SMTP_CA_FILE")
    code, _, err = _run(capsys, "suite", "alert", "prod", "--email", "team@example.com", "--data-dir", data)
    assert code == 1 and len(err.strip().splitlines()) == 1 and "certificate is not trusted" in err
    assert "set SEARCHGRADE_SMTP_CA_FILE to the PEM file of the CA that signed it" in err
    assert Store(data).get_suite("prod").email is None and mailbox.logins == []
    monkeypatch.setenv("SEARCHGRADE_SMTP_CA_FILE", str(certificates[0]))
    assert _run(capsys, "suite", "alert", "prod", "--webhook", listener.url, "--email", "team@example.com",
                "--data-dir", data)[0] == 0
    store = Store(data)
    shown = _run(capsys, "suite", "show", "prod", "--data-dir", data)[1]
    assert "SECRET-TOKEN" not in shown and "team@example.com" not in shown  # never shown back in full

    # Unchanged: no alert.
    code, unchanged, _ = _run(capsys, "suite", "run", "prod", "--data-dir", data)
    assert code == 0 and listener.bodies == [] and mailbox.messages == []

    # Degraded: three made-up documents before every real one.
    server.control(extra=["junk1", "junk2", "junk3"])
    code, out, err = _run(capsys, "suite", "run", "prod", "--note", "new ranking model", "--data-dir", data)
    degraded = out.strip().splitlines()[-1]
    assert code == 0 and "significant drop" in err
    assert len(listener.bodies) == 1 and len(mailbox.messages) == 1
    text = listener.texts()[0]
    change = StrategyChange.from_json(store.suite_entries("prod")[-1]["verdict"][0])
    assert change.verdict == "drop" and change.after < change.before and change.n == 9
    for words in ("suite 'prod'", "es DCG@10:", f"{change.before:.3f} -> {change.after:.3f}", "95% CI",
                  "adjusted p", "dropped most:", "Note on the run: new ranking model",
                  f"http://searchgrade.example:8501/compare (baseline run {unchanged.strip()}, candidate run "
                  f"{degraded})"):
        assert words in text, words
    assert "significant drop" in mailbox.messages[0] and "es DCG@10:" in mailbox.messages[0]

    # Down: the search server stopped (connections refused), then started again but answering 500 to
    # every search: one outage, one "could not evaluate" alert.
    server.stop()
    code, _, err = _run(capsys, "suite", "run", "prod", "--data-dir", data)
    assert code == 1 and "could not evaluate" in err
    assert len(listener.bodies) == 2 and len(mailbox.messages) == 2
    outage = listener.texts()[1]
    # The suite's one strategy failed on every query (after three refused connections the others were
    # not asked): nothing was measured.
    assert "could not evaluate" in outage and "every strategy failed on every query (es: cannot connect to " \
        f"{server.url}/tiny/_search (connection refused)" in outage
    assert "?." not in outage
    assert "no quality alert" in outage
    assert "could not evaluate" in mailbox.messages[1]
    server.start_again()
    server.control(fail_every=1)
    code, _, err = _run(capsys, "suite", "run", "prod", "--data-dir", data)
    assert code == 1 and "could not evaluate" in err
    assert len(listener.bodies) == 2 and len(mailbox.messages) == 2
    print(store.suite_entries("prod")[-1]["error"])
    assert "every strategy failed on every query (es: HTTP 500" in store.suite_entries("prod")[-1]["error"]

    # Back, with the original ranking: one "evaluating again" alert; the gain is recorded, not alerted.
    # The SMTP password is wrong meanwhile: the email is refused and recorded, the run is not failed.
    server.control()
    monkeypatch.setenv("SEARCHGRADE_SMTP_PASSWORD", "wrong")
    code, _, err = _run(capsys, "suite", "run", "prod", "--data-dir", data)
    monkeypatch.setenv("SEARCHGRADE_SMTP_PASSWORD", PASSWORD)
    assert code == 0 and "significant gain" in err
    assert len(listener.bodies) == 3 and "evaluates again" in listener.texts()[2] and len(mailbox.messages) == 2
    last = store.suite_entries("prod")[-1]
    assert last["baseline_run_id"] == degraded  # the previous complete, evaluated run
    assert StrategyChange.from_json(last["verdict"][0]).verdict == "gain"
    alerts = store.suite_alerts("prod")
    assert [a["kind"] for a in alerts] == ["regression", "regression", "could not evaluate", "could not evaluate",
                                           "recovered", "recovered"]
    refused = next(a for a in alerts[-2:] if a["channel"] == "email")
    assert (refused["status"], refused["attempts"]) == ("failed", 1)  # a refused login is not retried
    assert "refused the login" in refused["error"] and "SEARCHGRADE_SMTP_PASSWORD" in refused["error"]
    assert "wrong" not in refused["error"]

    # A failing channel: retried, recorded, said in one line per channel, exit 1.
    listener.status = 500
    code, _, err = _run(capsys, "suite", "alert", "prod", "--test", "--data-dir", data)
    listener.status = 200
    assert code == 1 and "webhook" in err and "HTTP 500" in err
    failed = store.suite_alerts("prod")[-2]
    assert (failed["channel"], failed["status"], failed["attempts"]) == ("webhook", "failed", 3)
    assert "SECRET-TOKEN" not in failed["target"]
    assert store.suite_alerts("prod")[-1]["status"] == "sent"  # the email went

    # The declaration changed (another query template for the same server): `suite update` takes it,
    # and the next run names what changed.
    strategies.write_text(strategies.read_text(encoding="utf-8").replace(
        "{\"text\": {{query}}}", "{\"text\": {\"query\": {{query}}}}"), encoding="utf-8")
    assert _run(capsys, "suite", "update", "prod", "--strategies-file", str(strategies), "--data-dir", data)[0] == 0
    code, _, err = _run(capsys, "suite", "run", "prod", "--data-dir", data)
    assert code == 0 and "changed since the previous run: Strategy es: " in err
    changed = store.suite_entries("prod")[-1]["changes"]
    assert any(line.startswith("Strategy es: ") and "{{query}}" in line for line in changed), changed


def test_a_webhook_typed_in_an_exposed_app_is_sent_only_under_the_outbound_guard(world):
    from searchgrade.core.outbound import OutboundRefused
    from searchgrade.engine.alerts.channels import send_webhook

    _, _, listener, _ = world
    before = len(listener.bodies)
    with pytest.raises(OutboundRefused):
        send_webhook(listener.url, "hello", declared_in="exposed app")  # loopback: not for an exposed app's typing
    send_webhook(listener.url, "hello", declared_in="app")  # typed on a loopback app: the operator's
    assert len(listener.bodies) == before + 1 and listener.texts()[-1] == "hello"
