"""The Evaluate page in a real browser (issue 22 items 5 and 9, issue 24's Add your search): offline,
the reranked strategies are not preselected and the fix is the page's own field; an upload with only
numbers is refused with one line; judgments naming documents the corpus lacks are a warning with
counts; a search declared in the browser against a real local search server is offered and runs.

One app server (`searchgrade app` on loopback, no model hub: the reranker cannot load here, for real)
serves every test of the module; Debian's Chromium is driven through Playwright.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from searchgrade.engine.store import Store
from tests.browser.server import environment, pick, serve_app
from tests.indexes.declared.tiny_search import server, tiny_folder, tiny_search  # noqa: F401 - fixtures

pytestmark = [pytest.mark.browser, pytest.mark.slow]

RERANKED = ("ANN + reranker", "Full-text + reranker", "Hybrid + reranker")
RETRIEVAL = ("ANN (dense)", "Full-text (BM25)", "Hybrid (RRF)")


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    """One `searchgrade app` for the module: (url, data directory)."""
    tmp = tmp_path_factory.mktemp("app")
    home = tmp / "home"
    with serve_app(tmp, env=environment(home)) as url:
        yield url, home


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("files")
    (out / "prices.csv").write_text("id,price,stock\n" + "".join(f"p{i},{i}.99,{3 * i}\n" for i in range(8)))
    (out / "shop.csv").write_text("doc_id,headline,body\n" + "".join(
        f"d{i},Lamp {i},A reading lamp of brass with a {i} metre cord\n" for i in range(8)))
    (out / "queries.csv").write_text("qid,query\n" + "".join(f"q{i},lamp {i}\n" for i in range(3)))
    # Five judgments, two of them of a document the corpus does not have.
    (out / "judgments.qrels").write_text("q0 0 d0 1\nq1 0 d1 1\nq2 0 d2 1\nq0 0 gone 1\nq1 0 gone 1\n")
    return out


def _open(browser, url: str):
    page = browser.new_page(viewport={"width": 1400, "height": 2400})
    page.set_default_timeout(60_000)
    page.goto(url)
    page.get_by_role("button", name="Evaluate search quality").wait_for()
    return page


def _upload(page, uploader: str, path: Path) -> None:
    box = page.locator('[data-testid="stFileUploader"]').filter(has_text=uploader)
    box.locator('input[type="file"]').set_input_files(str(path))


def _add_http_search(page, name: str, url: str, *more: tuple[str, str]) -> None:
    """Add your search: an HTTP strategy ``name`` over the test search server at ``url``, saved."""
    page.get_by_text("Add your search").click()
    pick(page, "Kind", "HTTP (any JSON API)")
    for label, value in (("Name", name), ("url (required)", url + "/search?q={{query}}&n={{k}}"),
                         ("hits (required)", "results"), ("id (required)", "doc.id"), *more):
        box = page.get_by_label(label, exact=True)
        box.fill(value)
        box.press("Enter" if label != "url (required)" else "Tab")
        page.wait_for_load_state("networkidle")
    page.get_by_role("button", name="Save", exact=True).click()


def _chips(page) -> set[str]:
    strategies = page.locator('[data-testid="stMultiSelect"]').filter(has_text="Strategies")
    return {name for name in (*RETRIEVAL, *RERANKED)
            if strategies.get_by_role("button", name=f"Remove {name}").count()}


def test_offline_only_the_strategies_that_can_run_are_preselected(app, browser):
    url, _ = app
    page = _open(browser, url)
    page.get_by_role("button", name="Remove Full-text (BM25)").wait_for()
    assert _chips(page) == set(RETRIEVAL)
    why = page.get_by_text("Reranked strategies are not preselected").inner_text()
    assert "Reranker model" in why and "Models and indexes" in why and "--reranker-model" not in why
    page.close()


def test_an_upload_with_only_numbers_is_refused_with_one_line(app, browser, files):
    url, _ = app
    page = _open(browser, url)
    page.get_by_text("Upload a file").click()
    _upload(page, "A .jsonl, .csv", files / "prices.csv")
    errors = page.locator('[data-testid="stAlertContentError"]')
    errors.first.wait_for()
    assert [e.strip() for e in errors.all_inner_texts()] == [
        "prices.csv: no column holds text (columns: 'id', 'price', 'stock'); a corpus needs a column of "
        "document text, such as 'text' or 'body': add one to the file"]
    assert page.get_by_text("Loading gives").count() == 0
    page.close()


def test_judgments_naming_documents_the_corpus_lacks_are_a_warning_with_counts(app, browser, files):
    url, _ = app
    page = _open(browser, url)
    page.get_by_text("Upload a file").click()
    _upload(page, "A .jsonl, .csv", files / "shop.csv")
    page.get_by_text("Loading gives 8 documents").wait_for()
    # Before judgments are attached: what to add, no "no grading mode can run".
    page.get_by_text("add a queries file and a judgments file").wait_for()
    assert page.get_by_text("No grading mode can run").count() == 0
    _upload(page, "Queries file", files / "queries.csv")
    page.get_by_text("Query id column").wait_for()
    _upload(page, "Judgments file (qrels)", files / "judgments.qrels")
    warning = page.locator('[data-testid="stAlertContentWarning"]').filter(has_text="judgments name")
    warning.wait_for()
    assert warning.inner_text().startswith("2 of 5 judgments name 1 document the corpus does not have")
    page.get_by_text("Human judgments (qrels)").first.wait_for()
    page.close()


def test_a_search_added_in_the_browser_is_offered_and_runs(app, browser, server, tiny_folder):  # noqa: F811
    url, home = app
    page = _open(browser, url)
    page.get_by_text("A path on this machine").click()
    path = page.get_by_label("Path", exact=True)
    path.fill(str(tiny_folder))
    path.press("Enter")
    page.get_by_text("12 documents").first.wait_for()
    _add_http_search(page, "my-http", server.url, ("score", "relevance"), ("title", "doc.name"))
    page.get_by_text("Saved my-http").wait_for()
    strategies = page.locator('[data-testid="stMultiSelect"]').filter(has_text="Strategies")
    strategies.get_by_role("button", name="Remove my-http").wait_for()
    for name in RETRIEVAL:
        strategies.get_by_role("button", name=f"Remove {name}").click()
        strategies.get_by_role("button", name=f"Remove {name}").wait_for(state="detached")
    page.get_by_role("button", name="Evaluate search quality").click()
    page.get_by_text("Run complete").wait_for(timeout=180_000)
    run = Store(home).list_runs()[0]
    assert run.status == "complete" and run.config["strategies"] == ["my-http"], run.error
    assert run.config["declared"]["my-http"]["declared_in"] == "app"
    assert Store(home).metric_summary(run.run_id, 10)
    page.close()


def test_a_search_added_for_an_upload_is_not_carried_to_the_demo(app, browser, files, server):  # noqa: F811
    url, home = app
    page = _open(browser, url)
    page.get_by_text("Upload a file").click()
    _upload(page, "A .jsonl, .csv", files / "shop.csv")
    page.get_by_text("Loading gives 8 documents").wait_for()
    _upload(page, "Queries file", files / "queries.csv")
    page.get_by_text("Query id column").wait_for()
    _upload(page, "Judgments file (qrels)", files / "judgments.qrels")
    page.get_by_text("Human judgments (qrels)").first.wait_for()
    _add_http_search(page, "shop-http", server.url)
    page.get_by_text("Saved shop-http").wait_for()
    assert "offered for shop only" in page.get_by_text("Saved shop-http").inner_text()
    strategies = page.locator('[data-testid="stMultiSelect"]').filter(has_text="Strategies")
    strategies.get_by_role("button", name="Remove shop-http").wait_for()
    assert Store(home).saved_strategies()["shop-http"]["collection_name"] == "shop"

    # Switching to the demo unselects it, with a note, and does not offer it there.
    page.get_by_text("The bundled demo (SciFact)").click()
    note = page.get_by_text("shop-http was added for the collection shop and is offered only there")
    note.wait_for()
    strategies.get_by_role("button", name="Remove Full-text (BM25)").wait_for()
    assert strategies.get_by_role("button", name="Remove shop-http").count() == 0
    strategies.click()
    options = page.get_by_role("option")
    options.first.wait_for()
    assert "shop-http" not in options.all_inner_texts()
    page.keyboard.press("Escape")
    page.close()
