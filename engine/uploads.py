"""Collections uploaded from the browser: saved under the data directory, a zipped BEIR folder
unpacked safely (no member may land outside its folder)."""

from __future__ import annotations

import io
import re
import shutil
import zipfile
from pathlib import Path

from core.records import SearchGradeError

_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")
UPLOAD_SUFFIXES = (".jsonl", ".csv", ".parquet", ".zip")


def save_upload(filename: str, data: bytes, data_dir: str | Path) -> Path:
    """Save an uploaded collection under data_dir/uploads and return the path to load.

    A .zip is unpacked (members stay inside the target folder) and the folder holding
    corpus.jsonl is returned; other files are saved as they are.
    """
    name = _SAFE_NAME.sub("_", Path(filename).name).strip("._") or "upload"
    suffix = Path(name).suffix.lower()
    if suffix not in UPLOAD_SUFFIXES:
        raise SearchGradeError(f"{filename}: unsupported upload type {suffix or '(none)'}; upload a "
                               ".jsonl, .csv or .parquet file, or a .zip of a BEIR folder")
    uploads = Path(data_dir) / "uploads"
    uploads.mkdir(parents=True, exist_ok=True)
    if suffix != ".zip":
        target = uploads / name
        target.write_bytes(data)
        return target
    folder = uploads / Path(name).stem
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir()
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            for member in zf.infolist():
                target = (folder / member.filename).resolve()
                if not target.is_relative_to(folder.resolve()):
                    raise SearchGradeError(f"{filename}: member {member.filename!r} points outside "
                                           "the archive's folder; re-create the zip from the BEIR folder")
                if member.is_dir():
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                with zf.open(member) as src, open(target, "wb") as dst:
                    shutil.copyfileobj(src, dst)
    except zipfile.BadZipFile:
        raise SearchGradeError(f"{filename}: not a readable zip file; re-create it") from None
    corpora = sorted(folder.rglob("corpus.jsonl"), key=lambda p: len(p.parts))
    corpora = [p for p in corpora if "__MACOSX" not in p.parts]
    if not corpora:
        raise SearchGradeError(f"{filename}: no corpus.jsonl inside; zip a BEIR folder (corpus.jsonl, "
                               "queries.jsonl, qrels.tsv)")
    return corpora[0].parent
