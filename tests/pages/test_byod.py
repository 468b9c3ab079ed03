"""The Evaluate page with the user's own files (AppTest): column mapping, queries and judgments
beside an upload, the mapping offered again, errors in the page's words, paths on an exposed app."""

from __future__ import annotations

import io
import re
import time
import zipfile

import pytest

from searchgrade.engine.run.pipeline import RunOutcome
from tests.pages.conftest import bound_to, open_page
from tests.pages.synthetic import tiny_spec, write_run

CSV = ("doc_id,headline,body,notes\n"
       + "".join(f"d{i},Headline {i},Body about topic {i} with more words,note {i}\n" for i in range(8)))
QUERIES = "qid,query\n" + "".join(f"q{i},topic {i}\n" for i in range(3))
QRELS = "".join(f"q{i} 0 d{i} 1\n" for i in range(3))

pytestmark = pytest.mark.usefixtures("clean_jobs")


@pytest.fixture
def captured(monkeypatch):
    """run_evaluation replaced: records the collection the job loaded, stores a tiny run."""
    seen = []

    def run(collection, config, store, data_dir, *, progress=None, on_run_created=None, on_usage=None,
            on_complete=None):
        seen.append((collection, config))
        run_id = write_run(store, tiny_spec())
        on_run_created(run_id)
        return RunOutcome(run_id, "complete")

    monkeypatch.setattr("searchgrade.engine.run.pipeline.run_evaluation", run)
    return seen


def _upload_page(name: str = "export.csv", data: str | bytes = CSV):
    at = open_page("views/evaluate.py")
    at.radio(key="evaluate_source").set_value("Upload a file").run()
    payload = data.encode() if isinstance(data, str) else data
    at.file_uploader(key="evaluate_upload").set_value((name, payload, "application/octet-stream")).run()
    assert not at.exception, [e.message for e in at.exception]
    return at


def _texts(at) -> str:
    parts = [e.value for kind in ("markdown", "caption", "error", "info", "warning", "success")
             for e in getattr(at, kind)]
    return "\n".join(str(p).replace("\\", "") for p in parts)


def _errors(at) -> list[str]:
    return [e.value.replace("\\", "") for e in at.error]


def test_an_upload_is_mapped_by_a_guess_with_a_preview_and_the_counts(home):
    at = _upload_page()
    assert at.selectbox(key="evaluate_map_id").value == "doc_id"
    assert at.selectbox(key="evaluate_map_title").value == "headline"
    assert at.multiselect(key="evaluate_map_text").value == ["body"]
    assert list(at.dataframe[0].value.columns) == ["doc_id", "headline", "body", "notes"]
    assert "Loading gives 8 documents" in _texts(at)
    # Without judgments only the LLM could grade it, and it is not configured: the page says what to
    # attach (the uploaders are right above), not yet that nothing can run.
    assert not _errors(at)
    assert "add a queries file and a judgments file (qrels)" in _texts(at)
    # Judgments attached that name none of the corpus's documents: now nothing can run, and why.
    at.file_uploader(key="evaluate_queries_upload").set_value(("queries.csv", QUERIES.encode(), "text/csv")).run()
    wrong = "".join(f"q{i} 0 x{i} 1\n" for i in range(3))
    at.file_uploader(key="evaluate_qrels_upload").set_value(("wrong.qrels", wrong.encode(), "text/plain")).run()
    warnings = [w.value.replace("\\", "") for w in at.warning]
    assert any(w.startswith("None of the judgments names a document of the corpus") for w in warnings), warnings
    assert any("No grading mode can run" in e for e in _errors(at))


def test_judgments_naming_documents_the_corpus_lacks_are_a_warning_with_counts(home):
    at = _upload_page()
    at.file_uploader(key="evaluate_queries_upload").set_value(("queries.csv", QUERIES.encode(), "text/csv")).run()
    # Five judgments, two of them of documents the corpus lacks (one of them twice).
    qrels = QRELS + "q0 0 gone1 1\nq1 0 gone1 1\n"
    at.file_uploader(key="evaluate_qrels_upload").set_value(("j.qrels", qrels.encode(), "text/plain")).run()
    [warning] = [w.value.replace("\\", "") for w in at.warning]
    assert warning.startswith("2 of 5 judgments name 1 document the corpus does not have")
    assert at.radio(key="evaluate_mode").options == ["Human judgments (qrels)"]


def test_a_corpus_with_no_text_column_is_refused_not_read_from_its_numbers(home):
    at = _upload_page("prices.csv", "id,price,stock\n" + "".join(f"p{i},{i}.99,{i * 3}\n" for i in range(6)))
    assert _errors(at) == ["prices.csv: no column holds text (columns: 'id', 'price', 'stock'); a corpus needs a "
                           "column of document text, such as 'text' or 'body': add one to the file"]
    assert "Loading gives" not in _texts(at)
    assert not [b for b in at.button if b.label == "Evaluate search quality"]


def test_a_numeric_column_picked_as_text_is_refused_with_the_picker_to_change(home):
    at = _upload_page("mixed.csv", "id,price,name\n" + "".join(f"p{i},{i}.99,Lamp number {i}\n" for i in range(6)))
    at.multiselect(key="evaluate_map_text").set_value(["price"]).run()
    [error] = _errors(at)
    assert error == "mixed.csv: 'price' holds no text (numbers or empty values); pick the column of document text as 'Text columns'"


def test_a_binary_file_is_not_a_text_file(home):
    at = _upload_page("photo.csv", bytes(range(256)) * 8)
    assert _errors(at) == ["photo.csv: not a text file (it holds binary data); upload a .jsonl, .csv or .tsv "
                           "file as UTF-8 text"]


def test_queries_and_trec_qrels_beside_an_upload_make_qrels_mode_run(home, captured):
    at = _upload_page()
    at.multiselect(key="evaluate_map_text").set_value(["body", "notes"]).run()
    at.file_uploader(key="evaluate_queries_upload").set_value(("queries.csv", QUERIES.encode(), "text/csv")).run()
    assert (at.selectbox(key="evaluate_qmap_id").value, at.selectbox(key="evaluate_qmap_text").value) == ("qid", "query")
    at.file_uploader(key="evaluate_qrels_upload").set_value(("judgments.qrels", QRELS.encode(), "text/plain")).run()
    assert "export: 8 documents, 3 queries with human judgments" in _texts(at).replace("*", "")
    assert at.radio(key="evaluate_mode").options == ["Human judgments (qrels)"]
    at.button(key="evaluate_start").click().run()
    deadline = time.time() + 30
    while not captured and time.time() < deadline:
        time.sleep(0.1)
    [(collection, config)] = captured
    assert [d.text for d in collection.documents[:1]] == ["Body about topic 0 with more words\n\nnote 0"]
    assert [d.title for d in collection.documents[:1]] == ["Headline 0"]
    assert sorted(collection.qrels) == ["q0", "q1", "q2"]
    assert collection.fields["labels"] == {"corpus": "export.csv", "queries": "queries.csv",
                                           "qrels": "judgments.qrels"}


def test_the_mapping_a_run_stored_is_offered_again_for_the_same_file(home, store):
    at = _upload_page()
    path = at.session_state["evaluate_map_for"]
    # A run of this file stored another mapping (id from headline, text from notes + body).
    fields = {"id_field": "headline", "title_field": "", "text_field": ["notes", "body"]}
    run_id = store.create_run(name="earlier", collection_name="export", collection_path=path, mode="qrels",
                              label_source="human", grade_min=0, grade_max=1, threshold=1, k=10, depth=10,
                              config={"collection_fields": fields})
    store.finish_run(run_id, "complete")
    again = _upload_page()
    assert again.selectbox(key="evaluate_map_id").value == "headline"
    assert again.selectbox(key="evaluate_map_title").value is None
    assert again.multiselect(key="evaluate_map_text").value == ["notes", "body"]


def test_a_bad_record_is_named_with_the_picker_to_change_and_no_server_path(home):
    at = _upload_page("records.jsonl", '{"_id": "a", "text": "x"}\n{"key": "b", "text": "y"}\n')
    [error] = _errors(at)
    assert error == ("records.jsonl:2: no '_id' field (fields: 'key', 'text'); pick the column that holds "
                     "the document id as 'Document id column'")
    assert str(home) not in _texts(at)


def test_repeated_ids_are_counted_before_loading_and_name_the_picker(home):
    at = _upload_page()
    at.selectbox(key="evaluate_map_id").set_value("notes").run()
    assert "Loading gives 8 documents" in _texts(at)
    at.selectbox(key="evaluate_map_id").set_value("headline").run()
    repeated = CSV.replace("Headline 1,", "Headline 0,").replace("Headline 2,", "Headline 0,")
    at = _upload_page("repeated.csv", repeated)
    at.selectbox(key="evaluate_map_id").set_value("headline").run()
    [error] = _errors(at)
    assert re.fullmatch(r"repeated\.csv: 1 id appears more than once \(e\.g\. 'Headline 0'\), so loading would "
                        r"stop; pick a column with one id per row as 'Document id column'", error), error


@pytest.mark.parametrize(("name", "members", "expected"), [
    ("escape.zip", {"beir/corpus.jsonl": "{}", "../../evil.txt": "x"},
     "escape.zip: member '../../evil.txt' points outside the archive's folder; re-create the zip from the "
     "BEIR folder"),
    ("bomb.zip", {"beir/corpus.jsonl": b"\0" * (40 * 1024**2)},
     "bomb.zip: unpacks to 40 MB, more than the limit of 10 MB; for bigger files use 'A path on this "
     "machine' or the command line"),
])
def test_a_zip_climbing_out_or_a_bomb_is_refused_in_one_line(home, name, members, expected):
    from streamlit import config

    before = config.get_option("server.maxUploadSize")
    config.set_option("server.maxUploadSize", 1)  # a zip may then unpack to 10 MB
    try:
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
            for member, data in members.items():
                zf.writestr(member, data)
        at = _upload_page(name, buffer.getvalue())
    finally:
        config.set_option("server.maxUploadSize", before)
    [error] = _errors(at)
    assert error == expected
    assert [p.name for p in (home / "uploads").iterdir()] == []
    assert not (home.parent / "evil.txt").exists()


def test_an_exposed_app_reads_no_path_unless_given_a_collections_root(home, tmp_path_factory, monkeypatch):
    from tests.conftest import write_beir

    root = tmp_path_factory.mktemp("collections")
    write_beir(root / "tiny")
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    # Started with --no-auth, so the page opens without a login; paths are restricted all the same.
    monkeypatch.setenv("SEARCHGRADE_APP_NO_AUTH", "1")
    with bound_to("0.0.0.0"):
        at = open_page("views/evaluate.py")
        at.radio(key="evaluate_source").set_value("A path on this machine").run()
        assert not at.text_input  # no path box at all
        assert "Reading collections by path is off" in at.info[0].value.replace("\\", "")

        monkeypatch.setenv("SEARCHGRADE_COLLECTIONS_ROOT", str(root))
        at = open_page("views/evaluate.py")
        at.radio(key="evaluate_source").set_value("A path on this machine").run()
        at.text_input(key="evaluate_path").set_value("tiny").run()
        assert "queries with human judgments" in _texts(at)
        at.text_input(key="evaluate_path").set_value(str(elsewhere)).run()
        assert _errors(at) == [f"{elsewhere}: outside the collections folder; type a path inside it "
                               "(relative to it), without links out of it"]
        (root / "escape").symlink_to(elsewhere)
        at.text_input(key="evaluate_path").set_value("escape").run()
        assert "outside the collections folder" in _errors(at)[0]
        assert str(root) not in _texts(at)


def test_pages_show_no_server_path_after_errors(home, tmp_path):
    from searchgrade.engine.store import Store

    store = Store(home)
    write_run(store, tiny_spec())
    failed = store.create_run(name="broken", collection_name="up", collection_path=str(home / "uploads" / "x"),
                              mode="qrels", label_source="human", grade_min=0, grade_max=1, threshold=1,
                              k=10, depth=10, config={})
    store.finish_run(failed, "failed", f"OSError: [Errno 28] No space left on device: '{home}/indexes/x.npy'")
    _upload_page("records.jsonl", '{"_id": "a", "text": "x"}\n{"key": "b", "text": "y"}\n')
    for page in ("views/evaluate.py", "views/results.py", "views/drilldown.py", "views/trends.py",
                 "views/compare.py"):
        state = {"app_open_run": failed} if page == "views/results.py" else None
        other = open_page(page, state=state)
        assert str(home) not in _texts(other), page
        assert str(tmp_path) not in _texts(other), page
    results = open_page("views/results.py", state={"app_open_run": failed})
    assert "the data folder/indexes/x.npy" in _texts(results)


def _zip(members: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        for member, data in members.items():
            zf.writestr(member, data)
    return buffer.getvalue()


def test_a_zipped_beir_folder_is_mapped_too_and_takes_the_judgments_it_lacks(home, captured):
    corpus = "".join(f'{{"key": "d{i}", "body": "Body about topic {i}"}}\n' for i in range(4))
    queries = "".join(f'{{"_id": "q{i}", "text": "topic {i}"}}\n' for i in range(2))
    at = _upload_page("mine.zip", _zip({"mine/corpus.jsonl": corpus, "mine/queries.jsonl": queries}))
    # Its corpus has no usual id column: the picker says so, and nothing loads until it is picked.
    assert at.selectbox(key="evaluate_map_id").value is None
    assert at.multiselect(key="evaluate_map_text").value == ["body"]
    assert _errors(at) == ["pick a column as 'Document id column'"]
    at.selectbox(key="evaluate_map_id").set_value("key").run()
    assert "Loading gives 4 documents" in _texts(at)
    assert "qrels.tsv (missing)" in _texts(at)
    # Judgments beside it, with its own queries.jsonl: qrels mode runs.
    at.file_uploader(key="evaluate_qrels_upload").set_value(("judgments.qrels", QRELS.encode(), "text/plain")).run()
    assert at.radio(key="evaluate_mode").options == ["Human judgments (qrels)"]
    at.button(key="evaluate_start").click().run()
    deadline = time.time() + 30
    while not captured and time.time() < deadline:
        time.sleep(0.1)
    [(collection, _)] = captured
    assert [d.doc_id for d in collection.documents] == ["d0", "d1", "d2", "d3"]
    assert sorted(collection.qrels) == ["q0", "q1"]
    assert collection.fields["id_field"] == "key"
    assert collection.fields["labels"] == {"corpus": "mine.zip", "qrels": "judgments.qrels"}


def test_a_complete_beir_folder_keeps_its_own_judgments_and_offers_others_folded(home):
    from tests.conftest import write_beir

    folder = write_beir(home.parent / "complete")
    at = open_page("views/evaluate.py")
    at.radio(key="evaluate_source").set_value("A path on this machine").run()
    at.text_input(key="evaluate_path").set_value(str(folder)).run()
    assert not at.exception and not _errors(at)
    assert at.selectbox(key="evaluate_map_id").value == "_id"
    assert at.expander[0].label == "Other queries or judgments"
    assert "queries with human judgments" in _texts(at)


def test_after_a_run_a_new_evaluation_of_the_same_upload_is_mapped_again(home, captured):
    # The form is hidden while a run goes on, and Streamlit then forgets its pickers' state: they
    # must be filled again (here by the guess: the captured run stored no mapping), not left empty.
    at = _upload_page()
    at.file_uploader(key="evaluate_queries_upload").set_value(("queries.csv", QUERIES.encode(), "text/csv")).run()
    at.file_uploader(key="evaluate_qrels_upload").set_value(("judgments.qrels", QRELS.encode(), "text/plain")).run()
    at.button(key="evaluate_start").click().run()
    deadline = time.time() + 30
    while not captured and time.time() < deadline:
        time.sleep(0.1)
    for _ in range(100):
        at.run()
        if [b for b in at.button if b.key == "evaluate_new"]:
            break
        time.sleep(0.1)
    at.button(key="evaluate_new").click().run()
    if at.file_uploader(key="evaluate_upload").value is None:
        at.file_uploader(key="evaluate_upload").set_value(("export.csv", CSV.encode(), "text/csv")).run()
    if at.file_uploader(key="evaluate_queries_upload").value is None:
        at.file_uploader(key="evaluate_queries_upload").set_value(("queries.csv", QUERIES.encode(), "text/csv")).run()
    if at.file_uploader(key="evaluate_qrels_upload").value is None:
        at.file_uploader(key="evaluate_qrels_upload").set_value(("judgments.qrels", QRELS.encode(), "text/plain")).run()
    assert not _errors(at), _errors(at)
    assert at.selectbox(key="evaluate_map_id").value == "doc_id"
    assert at.multiselect(key="evaluate_map_text").value == ["body"]
    assert (at.selectbox(key="evaluate_qmap_id").value, at.selectbox(key="evaluate_qmap_text").value) == ("qid", "query")
