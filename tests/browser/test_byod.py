"""Bring your own data in a real browser: upload a CSV (doc_id, headline, body) or a 100k-document
Parquet file, map its columns, add a queries CSV and TREC qrels, evaluate in qrels mode and see the
results; bad uploads get one line that names the picker to change and no server path.

The app is started as users start it, `searchgrade app --max-upload-mb 64`, on loopback; Debian's
Chromium is driven through Playwright.
"""

from __future__ import annotations

import csv
import json
import time
import zipfile
from pathlib import Path

import pytest

from searchgrade.engine.store import Store
from tests.browser.server import ROOT, environment, serve_app
from tests.conftest import CRANFIELD

pytestmark = [pytest.mark.browser, pytest.mark.slow]

UPLOAD_MB = 64
#: Queries (and their judgments) taken from Cranfield.
N_QUERIES = 12
BIG = 100_000


def _cranfield():
    docs = [json.loads(line) for line in (CRANFIELD / "corpus.jsonl").read_text().splitlines()]
    queries = [json.loads(line) for line in (CRANFIELD / "queries.jsonl").read_text().splitlines()][:N_QUERIES]
    wanted = {q["_id"] for q in queries}
    qrels = [line.split("\t") for line in (CRANFIELD / "qrels.tsv").read_text().splitlines()[1:]]
    return docs, queries, [r for r in qrels if r[0] in wanted]


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> Path:
    return make_user_files(tmp_path_factory.mktemp("user-files"))


def make_user_files(out: Path) -> Path:
    """The user's files: as real exports are, with their own column names; and bad ones."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    docs, queries, qrels = _cranfield()
    with open(out / "export.csv", "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["doc_id", "headline", "body", "keywords"])
        for d in docs[:400]:
            writer.writerow([d["_id"], d["title"], d["text"], " ".join(d["title"].split()[:3])])
    with open(out / "queries.csv", "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["qid", "query"])
        writer.writerows([q["_id"], q["text"]] for q in queries)
    (out / "judgments.qrels").write_text("".join(f"{q} 0 {d} {g}\n" for q, d, g in qrels))
    # 100,000 documents: Cranfield's 1,400, then filler drawn from its vocabulary.
    vocabulary = np.array(sorted({w for d in docs for w in d["text"].split() if w.isalpha()}))
    rng = np.random.default_rng(0)
    words = vocabulary[rng.integers(0, len(vocabulary), size=(BIG - len(docs), 10))]
    filler = [" ".join(row) for row in words]
    pq.write_table(pa.table({
        "id": [d["_id"] for d in docs] + [f"f{i}" for i in range(len(filler))],
        "name": [d["title"] for d in docs] + [" ".join(row[:3]) for row in words],
        "abstract": [d["text"] for d in docs] + filler,
    }), out / "big.parquet")
    # Bad files.
    (out / "records.jsonl").write_text('{"_id": "a", "text": "fine"}\n{"key": "b", "text": "no id"}\n')
    with zipfile.ZipFile(out / "escape.zip", "w") as zf:
        zf.writestr("beir/corpus.jsonl", '{"_id": "a", "text": "x"}\n')
        zf.writestr("../../evil.txt", "x")
    with zipfile.ZipFile(out / "bomb.zip", "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("beir/corpus.jsonl", b"\0" * (700 * 1024**2 // 100))
    bomb = (out / "bomb.zip").read_bytes()
    real = (700 * 1024**2 // 100).to_bytes(4, "little")
    # The directory claims 700 MB (the data is 7 MB of zeros): refused before unpacking.
    (out / "bomb.zip").write_bytes(bomb.replace(real, (700 * 1024**2).to_bytes(4, "little")))
    return out


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    """`searchgrade app --max-upload-mb 64` on loopback."""
    tmp = tmp_path_factory.mktemp("app")
    home = tmp / "home"
    with serve_app(tmp, "--max-upload-mb", str(UPLOAD_MB), env=environment(home)) as url:
        yield url, home


def _open(browser, url):
    page = browser.new_page(viewport={"width": 1400, "height": 2600})
    page.set_default_timeout(120_000)
    page.goto(url)
    page.get_by_role("button", name="Evaluate search quality").wait_for()
    page.get_by_text("Upload a file").click()
    return page


def _upload(page, uploader: str, path: Path) -> None:
    box = page.locator('[data-testid="stFileUploader"]').filter(has_text=uploader)
    box.locator('input[type="file"]').set_input_files(str(path))


def _multiselect(page, label: str):
    return page.locator('[data-testid="stMultiSelect"]').filter(has_text=label)


def _only_fulltext(page) -> None:
    # Offline the reranked strategies are not preselected (no reranker model loads here).
    for name in ("ANN (dense)", "Hybrid (RRF)"):
        page.get_by_role("button", name=f"Remove {name}").click()
    page.get_by_role("button", name="Remove Full-text (BM25)").wait_for()
    assert page.get_by_role("button", name="Remove ANN (dense)").count() == 0


def _no_server_path(page, *paths: Path) -> None:
    text = page.locator("body").inner_text()
    for path in paths:
        assert str(path) not in text, f"server path {path} on {page.url}"


def _evaluate_and_see_results(page, home: Path):
    page.get_by_role("button", name="Evaluate search quality").click()
    # Not just "View results": the form offers that button for the previous run too, so it can be
    # there before this run has even started.
    page.get_by_text("Run complete").wait_for(timeout=600_000)
    page.get_by_role("button", name="View results").click()
    # One strategy (full-text): its tile names the metric, not a "best" of one.
    page.get_by_text("Queries evaluated").wait_for()
    store = Store(home)
    run = store.list_runs()[0]
    assert run.status == "complete", run.error
    [dcg] = [r["value"] for r in store.metric_summary(run.run_id, 10) if r["metric"] == "dcg"]
    headline = page.locator('[data-testid="stMetric"]').first.inner_text()
    assert f"{dcg:.3f}" in headline, headline
    return store, run


def test_csv_upload_mapped_with_queries_and_trec_qrels_evaluates_in_qrels_mode(app, browser, files):
    url, home = app
    page = _open(browser, url)
    _upload(page, "A .jsonl, .csv", files / "export.csv")
    page.get_by_text("Loading gives 400 documents").wait_for()
    # The guess, pre-filled: doc_id / headline / body; the user adds a second text column.
    assert page.get_by_role("combobox", name="Document id column").input_value() == "doc_id"
    assert page.get_by_role("combobox", name="Title column").input_value() == "headline"
    _multiselect(page, "Text columns").locator("input").click()
    page.get_by_role("option", name="keywords").click()
    page.keyboard.press("Escape")
    page.get_by_role("button", name="Remove keywords").wait_for()
    _upload(page, "Queries file", files / "queries.csv")
    page.get_by_text("Query id column").wait_for()
    _upload(page, "Judgments file (qrels)", files / "judgments.qrels")
    page.get_by_text(f"{N_QUERIES} queries with human judgments").wait_for()
    page.get_by_text("Human judgments (qrels)").first.wait_for()
    _only_fulltext(page)
    store, run = _evaluate_and_see_results(page, home)
    assert run.collection_name == "export" and run.mode == "qrels"
    fields = run.config["collection_fields"]
    assert (fields["id_field"], fields["title_field"], fields["text_field"]) == ("doc_id", "headline", ["body", "keywords"])
    assert (fields["query_id_field"], fields["query_text_field"]) == ("qid", "query")
    assert fields["labels"] == {"corpus": "export.csv", "queries": "queries.csv", "qrels": "judgments.qrels"}
    assert store.metric_summary(run.run_id, 10)
    assert run.stats["queries"] == N_QUERIES
    _no_server_path(page, home, ROOT, files)

    # The same file again, in a new session: the stored mapping is offered, not the guess.
    again = _open(browser, url)
    _upload(again, "A .jsonl, .csv", files / "export.csv")
    again.get_by_text("Loading gives 400 documents").wait_for()
    again.get_by_role("button", name="Remove keywords").wait_for()
    assert "body" in _multiselect(again, "Text columns").inner_text()
    again.close()
    page.close()


def test_a_parquet_upload_of_100k_documents_evaluates_in_qrels_mode(app, browser, files):
    url, home = app
    before = {r.run_id for r in Store(home).list_runs()}
    page = _open(browser, url)
    _upload(page, "A .jsonl, .csv", files / "big.parquet")
    page.get_by_text("Loading gives 99,998 documents; 2 empty ones skipped").wait_for()
    assert "abstract" in _multiselect(page, "Text columns").inner_text()
    _upload(page, "Queries file", files / "queries.csv")
    page.get_by_text("Query id column").wait_for()
    _upload(page, "Judgments file (qrels)", files / "judgments.qrels")
    page.get_by_text("99,998 documents, 12 queries with human judgments").wait_for()
    _only_fulltext(page)
    sample = page.get_by_role("spinbutton", name="Queries to evaluate (0 = all)")
    sample.fill("4")
    sample.press("Enter")
    page.wait_for_timeout(1000)
    store, run = _evaluate_and_see_results(page, home)
    assert run.run_id not in before and run.collection_name == "big"
    assert run.stats["documents"] == 99_998 and run.stats["queries"] == 4
    assert run.config["collection_fields"]["text_field"] == ["abstract"]
    _no_server_path(page, home, ROOT, files)
    page.close()


def test_bad_uploads_get_one_line_for_the_page_and_no_page_shows_a_server_path(app, browser, files):
    url, home = app
    page = _open(browser, url)
    _upload(page, "A .jsonl, .csv", files / "records.jsonl")
    error = page.locator('[data-testid="stAlertContentError"]').first
    error.wait_for()
    assert error.inner_text().strip() == ("records.jsonl:2: no '_id' field (fields: 'key', 'text'); pick the "
                                          "column that holds the document id as 'Document id column'")
    _no_server_path(page, home, ROOT, files)

    previous = "records.jsonl"
    for name, expected in (
        ("escape.zip", "escape.zip: member '../../evil.txt' points outside the archive's folder; re-create "
                       "the zip from the BEIR folder"),
        ("bomb.zip", "bomb.zip: unpacks to 700 MB, more than the limit of 640 MB; for bigger files use "
                     "'A path on this machine' or the command line"),
    ):
        page.get_by_role("button", name=f"Remove {previous}").click()
        page.locator('[data-testid="stFileChip"]').first.wait_for(state="detached")
        page.locator('[data-testid="stAlertContentError"]').first.wait_for(state="detached")
        _upload(page, "A .jsonl, .csv", files / name)
        previous = name
        page.locator('[data-testid="stAlertContentError"]').filter(has_text=name).wait_for()
        shown = page.locator('[data-testid="stAlertContentError"]').filter(has_text=name).inner_text()
        assert shown.strip() == expected
        _no_server_path(page, home, ROOT, files)
    assert not list((home / "uploads").glob(".*")), "no temporary file or partial unpack left"
    assert not (home.parent / "evil.txt").exists()

    for link in ("Results", "Query drill-down", "Trends", "Compare"):
        page.get_by_role("link", name=link).click()
        page.wait_for_load_state("networkidle")
        time.sleep(2)
        _no_server_path(page, home, ROOT, files)
    page.close()
