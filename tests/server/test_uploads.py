"""Uploads: saved as a stream under the data directory, zips unpacked within limits, nothing left
behind when anything fails."""

from __future__ import annotations

import io
import struct
import zipfile
from pathlib import Path

import pytest

from searchgrade.core.records import SearchGradeError
from searchgrade.server.uploads import MB, UploadLimits, save_upload

BEIR = {"mybeir/corpus.jsonl": '{"_id": "d1", "text": "x"}\n',
        "mybeir/queries.jsonl": '{"_id": "q1", "text": "x"}\n',
        "mybeir/qrels.tsv": "query-id\tcorpus-id\tscore\nq1\td1\t1\n"}


def _zip(members: dict[str, bytes | str], compression: int = zipfile.ZIP_DEFLATED) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return buffer.getvalue()


def _refused(tmp_path: Path, filename: str, data: bytes, **kwargs) -> str:
    """The one-line error, after checking that nothing is left in the uploads folder."""
    with pytest.raises(SearchGradeError) as info:
        save_upload(filename, data, tmp_path, **kwargs)
    message = str(info.value)
    assert "\n" not in message
    assert str(tmp_path) not in message, "the message names the user's file, not a server path"
    uploads = tmp_path / "uploads"
    assert list(uploads.iterdir()) == [], "partial unpacks and temporary files are removed"
    return message


def test_a_zipped_beir_folder_unpacks_to_its_folder_named_by_content(tmp_path):
    data = _zip(BEIR)
    saved = save_upload("My Data.zip", data, tmp_path)
    assert saved.name == "My Data.zip"
    assert saved.path.name == "mybeir" and saved.path.parent.parent == tmp_path / "uploads" / saved.path.parts[-3]
    assert (saved.path / "corpus.jsonl").read_text() == BEIR["mybeir/corpus.jsonl"]
    # The same content again is the same collection; a different one with the same name is not.
    assert save_upload("My Data.zip", io.BytesIO(data), tmp_path).path == saved.path
    other = save_upload("My Data.zip", _zip({**BEIR, "mybeir/extra.txt": "y"}), tmp_path)
    assert other.path != saved.path and (saved.path / "corpus.jsonl").is_file()


def test_a_file_is_copied_from_a_stream_in_chunks(tmp_path):
    content = b"doc_id,headline,body\n" + b"".join(b"%d,t,%s\n" % (i, b"w" * 100) for i in range(30_000))
    assert len(content) > 3 * MB
    saved = save_upload("export.csv", io.BytesIO(content), tmp_path)
    assert saved.path.read_bytes() == content and saved.path.name == "export.csv"
    assert [p.name for p in (tmp_path / "uploads").iterdir()] == [saved.path.parent.name]


def test_an_upload_over_the_size_limit_is_refused_with_the_way_around(tmp_path):
    message = _refused(tmp_path, "big.csv", b"x" * (2 * MB), limits=UploadLimits.from_mb(1))
    assert message == ("big.csv: larger than the upload limit of 1 MB; for bigger files use "
                       "'A path on this machine' or the command line")


def test_a_member_climbing_out_with_dot_dot_is_refused(tmp_path):
    message = _refused(tmp_path, "evil.zip", _zip({"mybeir/corpus.jsonl": "{}", "../../outside/x.txt": "pwn"}))
    assert message == ("evil.zip: member '../../outside/x.txt' points outside the archive's folder; "
                       "re-create the zip from the BEIR folder")
    assert not (tmp_path / "outside").exists() and not (tmp_path.parent / "outside").exists()


def test_an_absolute_member_is_refused(tmp_path):
    assert "member '/etc/corpus.jsonl' points outside" in _refused(tmp_path, "abs.zip", _zip({"/etc/corpus.jsonl": "{}"}))


def test_a_zip_bomb_is_refused_before_unpacking(tmp_path):
    bomb = _zip({"mybeir/corpus.jsonl": b"\0" * (40 * MB)})
    assert len(bomb) < 100_000  # 40 MB of zeros compress ~1000x
    message = _refused(tmp_path, "bomb.zip", bomb, limits=UploadLimits.from_mb(1))
    assert message == ("bomb.zip: unpacks to 40 MB, more than the limit of 10 MB; for bigger files use "
                       "'A path on this machine' or the command line")


def _claim_size(data: bytes, real: int, claimed: int) -> bytes:
    """The zip with one member's sizes in its local header and directory changed to ``claimed``
    (a stored member's compressed size too)."""
    old, new = struct.pack("<I", real), struct.pack("<I", claimed)
    assert data.count(old) in (2, 4)
    return data.replace(old, new)


def test_a_zip_claiming_three_gigabytes_is_refused_with_the_default_limits(tmp_path):
    real = _zip({"mybeir/corpus.jsonl": b"\0" * 5000})
    bomb = _claim_size(real, 5000, 3 * 1024**3)
    message = _refused(tmp_path, "bomb.zip", bomb)
    assert message.startswith("bomb.zip: unpacks to 3,072 MB, more than the limit of 2,000 MB")


def test_a_zip_whose_directory_lies_stops_while_unpacking_and_leaves_nothing(tmp_path):
    # Declares 1,000 bytes for a member of 300,000: what is written is counted, and the partial
    # file goes with the rest of the unpack.
    real = _zip({"mybeir/queries.jsonl": "{}\n", "mybeir/corpus.jsonl": b"a" * 300_000},
                compression=zipfile.ZIP_STORED)
    liar = _claim_size(real, 300_000, 1000)
    message = _refused(tmp_path, "liar.zip", liar)
    assert message.startswith("liar.zip: not a readable zip file (") and message.endswith("; re-create it")


def test_too_many_entries_are_refused(tmp_path):
    members = {f"mybeir/{i}.txt": "x" for i in range(11)}
    message = _refused(tmp_path, "many.zip", _zip(members), limits=UploadLimits(max_bytes=MB, max_entries=10))
    assert message == "many.zip: 11 entries, more than the limit of 10; zip only the BEIR folder"


def test_a_zip_without_corpus_is_refused_and_removed(tmp_path):
    message = _refused(tmp_path, "notbeir.zip", _zip({"docs/a.txt": "x"}))
    assert message.startswith("notbeir.zip: no corpus.jsonl inside")


def test_not_a_zip_and_wrong_types_are_refused(tmp_path):
    assert _refused(tmp_path, "broken.zip", b"PK\x03\x04 not really").startswith("broken.zip: not a readable zip file")
    assert _refused(tmp_path, "slides.pptx", b"x") == (
        "slides.pptx: unsupported upload type .pptx; upload a .jsonl, .csv, .tsv or .parquet file, or a .zip "
        "of a BEIR folder")
    assert _refused(tmp_path, "q.txt", b"x", kind="queries").startswith("q.txt: unsupported upload type .txt")


def test_a_judgments_file_may_have_any_name(tmp_path):
    saved = save_upload("qrels.test", b"1 0 d1 1\n", tmp_path, kind="qrels")
    assert saved.path.name == "qrels.test" and saved.name == "qrels.test"
