"""The Suites page: a suite's runs as one series, the significant drop marked, what changed and the
note on the point; "Run now" only where suites may be changed; alert targets never shown in full."""

from __future__ import annotations

from dataclasses import replace

from searchgrade.engine.suites.definition import suite_from_run
from searchgrade.engine.suites.regression import compare_runs
from tests.pages.conftest import bound_to, chart, open_page
from tests.pages.synthetic import tiny_spec, write_run

WORSE_FULLTEXT = {"q1": ["d6", "d2", "d1"], "q2": ["d6", "d4", "d2"]}


def _suite_with_a_drop(store) -> tuple[str, str]:
    a = write_run(store, tiny_spec(name="run A"))
    spec = tiny_spec(name="run B")
    spec.rankings = {**spec.rankings, "fulltext": WORSE_FULLTEXT}
    b = write_run(store, spec)
    suite_from_run(store, "nightly", a, metric="dcg@3")
    entry = store.start_suite_entry("nightly", "schedule")
    changes = compare_runs(store, a, b, "dcg@3", 0.0)
    # Two queries can reach no verdict; the page shows what the store says: here, a drop of fulltext.
    verdict = [replace(c, verdict="drop") if c.strategy == "fulltext" else c for c in changes]
    store.update_suite_entry(entry, run_id=b, status="compared", baseline_run_id=a,
                             verdict=[c.to_json() for c in verdict], changes=["index.rerank_depth: 50 -> 100"],
                             note="synonyms v3 deployed")
    store.update_suite("nightly", webhook="https://hooks.example.com/services/T0/SECRET-TOKEN")
    return a, b


def test_the_suite_trend_marks_the_drop_and_names_what_changed(store):
    a, b = _suite_with_a_drop(store)
    at = open_page("views/suites.py")
    spec = chart(at, "suite_trend")
    lines = {t["name"]: t for t in spec["data"] if t.get("mode") == "lines+markers"}
    assert len(lines["Full-text (BM25)"]["y"]) == 2
    drop = next(t for t in spec["data"] if t["name"] == "Full-text (BM25): significant drop")
    assert drop["marker"]["symbol"] == "triangle-down" and len(drop["y"]) == 1
    assert drop["y"][0] == lines["Full-text (BM25)"]["y"][1]
    hover = lines["Full-text (BM25)"]["text"][1]
    # Chart text is escaped (no HTML from stored text): "->" reads "-&gt;".
    assert "changed: index.rerank_depth: 50 -&gt; 100" in hover and "note: synonyms v3 deployed" in hover
    assert [b.label for b in at.button if b.key == "suites_run_now"] == ["Run now"]
    page = (" ".join(str(e.value) for e in at.caption) + " ".join(str(e.value) for e in at.markdown)).replace("\\", "")
    assert "SECRET-TOKEN" not in page
    assert "https://hooks.example.com/…" in page


def test_an_exposed_app_without_login_shows_suites_but_cannot_change_them(store, monkeypatch):
    _suite_with_a_drop(store)
    monkeypatch.setenv("SEARCHGRADE_APP_NO_AUTH", "1")
    with bound_to("0.0.0.0"):
        at = open_page("views/suites.py")
    assert not [b for b in at.button if b.key in ("suites_run_now", "suites_alert_save", "suites_note_save")]
    assert chart(at, "suite_trend")


def test_run_now_runs_the_suite_in_the_background_worker(store, home, tiny_beir, clean_jobs):
    import contextlib
    import io

    from searchgrade.cli import main
    from searchgrade.server import jobs

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        assert main(["evaluate", str(tiny_beir), "--qrels", "--strategies", "fulltext", "--data-dir", str(home)]) == 0
    source = out.getvalue().strip().splitlines()[-1]
    suite_from_run(store, "nightly", source)
    at = open_page("views/suites.py")
    next(b for b in at.button if b.key == "suites_run_now").click().run()
    job = jobs.wait(at.session_state["evaluate_job_id"], timeout_s=120)
    assert job.state == "complete", job.error
    entries = store.suite_entries("nightly")
    assert [e["trigger"] for e in entries] == ["source", "app"] and entries[-1]["run_id"] == job.run_id
    assert entries[-1]["status"] == "compared" and entries[-1]["baseline_run_id"] == source


def test_alert_channels_typed_in_the_app_are_checked_and_shown_back_only_in_part(store):
    _suite_with_a_drop(store)
    store.update_suite("nightly", webhook=None)
    at = open_page("views/suites.py")
    at.text_input(key="suites_alert_webhook").set_value("ftp://hooks.example.com/x")
    next(b for b in at.button if b.key == "suites_alert_save").click().run()
    assert any("is not an http(s) URL" in e.value.replace("\\", "") for e in at.error)
    assert store.get_suite("nightly").webhook is None
    # Resolved and checked by the outbound guard (a loopback app: any address is the operator's).
    at.text_input(key="suites_alert_webhook").set_value("http://127.0.0.1:9/services/T1/OTHER-TOKEN")
    next(b for b in at.button if b.key == "suites_alert_save").click().run()
    suite = store.get_suite("nightly")
    assert suite.webhook.endswith("OTHER-TOKEN") and suite.alerts_declared_in == "app"
    shown = " ".join(str(e.value) for e in at.caption).replace("\\", "")
    assert "http://127.0.0.1:9/…" in shown and "OTHER-TOKEN" not in shown
