"""Files uploaded from the browser: saved under the data directory as a stream, zips unpacked safely.

An upload is copied to disk in chunks (never held twice in memory) under
``<data dir>/uploads/<content hash>/``, so the same file uploaded again is the same collection
(its column mapping is offered again) and two different files with one name never overwrite each
other. Everything is bounded (``UploadLimits``): the upload's size; a zip's entry count and
unpacked size, checked from its directory before unpacking and counted again while unpacking (a
zip's directory can lie); member names that would land outside the folder are refused. Whatever
fails leaves nothing behind: temporary files and partial unpacks are removed.

Messages name the file as the user named it, never a server path.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import uuid
import zipfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from searchgrade.core.records import SearchGradeError
from searchgrade.engine.collections.readers import SNIFF_BYTES, looks_binary

MB = 1024**2
_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")
_CHUNK = MB
#: What each kind of upload may be, by suffix (None: any; a judgments file is read by its content).
UPLOAD_SUFFIXES: dict[str, tuple[str, ...] | None] = {
    "corpus": (".jsonl", ".csv", ".tsv", ".parquet", ".zip"),
    "queries": (".jsonl", ".csv", ".tsv", ".parquet"),
    "qrels": None,
}
_BIGGER = "for bigger files use 'A path on this machine' or the command line"
#: Room left on the disk after unpacking a zip.
_DISK_MARGIN = 64 * MB


@dataclass(frozen=True)
class UploadLimits:
    """How big an upload may be, and (for a zip) how many entries and unpacked bytes it may have.

    ``max_bytes`` is the app's upload limit (Streamlit's ``server.maxUploadSize``, set by
    ``searchgrade app --max-upload-mb``); a zip may unpack to ``max_unpacked_bytes`` (default ten
    times ``max_bytes``: text compresses 3-5x, a zip bomb 1000x).
    """

    max_bytes: int = 200 * MB
    max_entries: int = 10_000
    max_unpacked_bytes: int | None = None

    @classmethod
    def from_mb(cls, max_mb: int) -> UploadLimits:
        return cls(max_bytes=max_mb * MB)

    @property
    def unpacked(self) -> int:
        return self.max_unpacked_bytes if self.max_unpacked_bytes is not None else 10 * self.max_bytes


@dataclass(frozen=True)
class SavedUpload:
    """An upload on disk: the path to load (a file, or the folder holding corpus.jsonl) and the
    name the user gave it (for messages)."""

    path: Path
    name: str


def save_upload(filename: str, source: BinaryIO | bytes, data_dir: str | Path, *, kind: str = "corpus",
                limits: UploadLimits | None = None) -> SavedUpload:
    """Save an upload under data_dir/uploads and return what to load.

    Args:
        filename: The file's name as the user uploaded it.
        source: Its content: a binary stream (read in chunks) or bytes.
        data_dir: The data directory.
        kind: "corpus" (a .jsonl/.csv/.tsv/.parquet file, or a .zip of a BEIR folder), "queries"
            or "qrels".
        limits: The size limits (default ``UploadLimits()``).

    Raises:
        SearchGradeError: A wrong type, a file past a limit, a bad zip; nothing is left on disk.
    """
    limits = limits or UploadLimits()
    shown = Path(filename).name or "upload"
    name = _SAFE_NAME.sub("_", shown).strip("._") or "upload"
    suffix = Path(name).suffix.lower()
    allowed = UPLOAD_SUFFIXES[kind]
    if allowed is not None and suffix not in allowed:
        what = ("a .jsonl, .csv, .tsv or .parquet file, or a .zip of a BEIR folder" if kind == "corpus"
                else "a .jsonl, .csv, .tsv or .parquet file")
        raise SearchGradeError(f"{shown}: unsupported upload type {suffix or '(none)'}; upload {what}")
    uploads = Path(data_dir) / "uploads"
    uploads.mkdir(parents=True, exist_ok=True)
    with _incoming(uploads) as incoming:
        digest = _copy(source, incoming, limits, shown)
        _check_content(incoming, suffix, kind, shown)
        target = uploads / digest[:16]
        if suffix != ".zip":
            saved = target / name
            if not saved.is_file():
                target.mkdir(exist_ok=True)
                os.replace(incoming, saved)
            return SavedUpload(saved, shown)
        if not target.is_dir():
            _unpack(incoming, uploads, target, Path(name).stem, limits, shown)
    return SavedUpload(_beir_folder(target, shown), shown)


@contextmanager
def _incoming(uploads: Path) -> Iterator[Path]:
    """A temporary file name in the uploads folder, removed afterwards if still there."""
    path = uploads / f".incoming-{uuid.uuid4().hex}"
    try:
        yield path
    finally:
        path.unlink(missing_ok=True)


def _copy(source: BinaryIO | bytes, target: Path, limits: UploadLimits, shown: str) -> str:
    """Copy the upload to target in chunks, within the size limit; its sha256 hex digest."""
    digest = hashlib.sha256()
    size = 0
    if isinstance(source, bytes | bytearray):
        chunks: Iterator[bytes] = iter([bytes(source)])
    else:
        if hasattr(source, "seek"):
            source.seek(0)
        chunks = iter(lambda: source.read(_CHUNK), b"")
    with open(target, "wb") as out:
        for chunk in chunks:
            size += len(chunk)
            if size > limits.max_bytes:
                raise SearchGradeError(f"{shown}: larger than the upload limit of "
                                       f"{limits.max_bytes // MB:,} MB; {_BIGGER}")
            digest.update(chunk)
            out.write(chunk)
    return digest.hexdigest()


#: What the first bytes of a binary upload type must be.
_MAGIC = {".parquet": (b"PAR1", "a Parquet file"), ".zip": (b"PK", "a zip file")}


def _check_content(path: Path, suffix: str, kind: str, shown: str) -> None:
    """A text upload holds text, a Parquet or zip upload starts as one does: else one line."""
    with open(path, "rb") as f:
        head = f.read(SNIFF_BYTES)
    if suffix in _MAGIC:
        magic, what = _MAGIC[suffix]
        if not head.startswith(magic):
            raise SearchGradeError(f"{shown}: not {what} (its content does not start as one does); upload "
                                   f"the file itself, or save it as {what}")
        return
    if looks_binary(head):
        what = "a judgments file (TREC or BEIR qrels)" if kind == "qrels" else "a .jsonl, .csv or .tsv file"
        raise SearchGradeError(f"{shown}: not a text file (it holds binary data); upload {what} as UTF-8 text")


def _check_members(zf: zipfile.ZipFile, limits: UploadLimits, shown: str) -> list[zipfile.ZipInfo]:
    """The zip's members, after the checks its directory allows: count, sizes, names, encryption."""
    members = zf.infolist()
    if len(members) > limits.max_entries:
        raise SearchGradeError(f"{shown}: {len(members):,} entries, more than the limit of "
                               f"{limits.max_entries:,}; zip only the BEIR folder")
    declared = sum(m.file_size for m in members)
    if declared > limits.unpacked:
        raise SearchGradeError(f"{shown}: unpacks to {declared / MB:,.0f} MB, more than the limit of "
                               f"{limits.unpacked // MB:,} MB; {_BIGGER}")
    for member in members:
        parts = re.split(r"[/\\]", member.filename)
        if (member.filename.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", member.filename)
                or ".." in parts or "\x00" in member.filename):
            raise SearchGradeError(f"{shown}: member {member.filename!r} points outside the archive's "
                                   "folder; re-create the zip from the BEIR folder")
        if member.flag_bits & 0x1:
            raise SearchGradeError(f"{shown}: member {member.filename!r} is encrypted; zip it without "
                                   "a password")
    return members


def _unpack(archive: Path, uploads: Path, target: Path, stem: str, limits: UploadLimits, shown: str) -> None:
    """Unpack into a temporary folder, counting bytes as they are written, then move it to target."""
    staging = uploads / f".unpacking-{uuid.uuid4().hex}"
    try:
        try:
            with zipfile.ZipFile(archive) as zf:
                members = _check_members(zf, limits, shown)
                needed = sum(m.file_size for m in members) + _DISK_MARGIN
                if shutil.disk_usage(uploads).free < needed:
                    raise SearchGradeError(f"{shown}: not enough free disk space to unpack it "
                                           f"({needed / MB:,.0f} MB needed); free some space")
                folder = staging / stem
                written = 0
                for member in members:
                    destination = (folder / member.filename).resolve()
                    if not destination.is_relative_to(folder.resolve()):
                        raise SearchGradeError(f"{shown}: member {member.filename!r} points outside the "
                                               "archive's folder; re-create the zip from the BEIR folder")
                    if member.is_dir():
                        destination.mkdir(parents=True, exist_ok=True)
                        continue
                    destination.parent.mkdir(parents=True, exist_ok=True)
                    with zf.open(member) as src, open(destination, "wb") as dst:
                        for chunk in iter(lambda: src.read(_CHUNK), b""):
                            written += len(chunk)
                            if written > limits.unpacked:
                                raise SearchGradeError(
                                    f"{shown}: unpacks to more than the limit of {limits.unpacked // MB:,} MB "
                                    f"(its directory said less); {_BIGGER}")
                            dst.write(chunk)
        except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError) as error:
            raise SearchGradeError(f"{shown}: not a readable zip file ({error}); re-create it") from None
        try:
            os.rename(staging, target)
        except OSError:
            if not target.is_dir():  # else another session unpacked the same file first
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _beir_folder(target: Path, shown: str) -> Path:
    """The shallowest folder holding corpus.jsonl in an unpacked zip (macOS's __MACOSX ignored)."""
    corpora = sorted((p for p in target.rglob("corpus.jsonl") if "__MACOSX" not in p.parts),
                     key=lambda p: len(p.parts))
    if not corpora:
        shutil.rmtree(target, ignore_errors=True)
        raise SearchGradeError(f"{shown}: no corpus.jsonl inside; zip a BEIR folder (corpus.jsonl, "
                               "queries.jsonl, qrels.tsv)")
    return corpora[0].parent
