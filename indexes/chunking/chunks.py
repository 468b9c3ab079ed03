"""A collection's chunks: made once per chunking and tokenizer, kept on disk.

Each chunk is a span of its document's text (``Document.text``), indexed and embedded with the
document's title in front, as whole documents are (``Document.content``): a passage keeps the
context its title gives. A document whose text yields no chunk (an empty text) is one chunk of its
title, so every document can still be found.

The chunks of a collection live in ``data_dir/chunks/<collection fingerprint>-<chunk fingerprint>/``
(``chunks.npz``: each chunk's document row, position in its document and character span; then
``manifest.json``, written last, so a folder without it is an interrupted build and is made again).
The chunk fingerprint holds the method, size, overlap and the tokenizer's identity, so two variants
with the same setting and tokenizer share one chunking, and its ANN and full-text indexes are named
by it.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from searchgrade.core.records import Document, Passage
from searchgrade.indexes.base import ProgressFn
from searchgrade.indexes.chunking.spec import Chunking
from searchgrade.indexes.chunking.splitter import cut, make_splitter, tokenizer_identity

MANIFEST = "manifest.json"
#: Documents cut per call of the splitter (its batch runs in parallel; progress moves between).
BLOCK = 2_000


@dataclass(frozen=True)
class ChunkSet:
    """The chunks of a collection, in document order.

    Attributes:
        fingerprint: the collection's and the chunking's (names the folders built over it).
        chunking: how they were cut.
        doc_ids: the collection's document ids, in order.
        doc_of: chunk -> its document's row in ``doc_ids``.
        position: chunk -> its place in its document (0 for the first).
        starts, ends: chunk -> its character span in its document's text.
        folder: where they are kept on disk.
    """

    fingerprint: str
    chunking: Chunking
    doc_ids: Sequence[str]
    doc_of: np.ndarray
    position: np.ndarray
    starts: np.ndarray
    ends: np.ndarray
    folder: str = ""

    def __len__(self) -> int:
        return len(self.doc_of)

    @property
    def chunks_per_doc(self) -> float:
        return len(self) / max(1, len(self.doc_ids))

    def item_ids(self) -> list[str]:
        """One id per chunk, ``DOC#POSITION``, what the indexes over the chunks keep per row."""
        return [f"{self.doc_ids[d]}#{p}" for d, p in zip(self.doc_of.tolist(), self.position.tolist(), strict=True)]

    def texts(self, documents: Sequence[Document]) -> list[str]:
        """Each chunk's text as it is indexed and embedded: its document's title, then the span."""
        out = []
        for d, start, end in zip(self.doc_of.tolist(), self.starts.tolist(), self.ends.tolist(), strict=True):
            doc = documents[d]
            body = doc.text[start:end]
            out.append(f"{doc.title} {body}".strip() if doc.title else body)
        return out

    def passage(self, row: int) -> Passage:
        return Passage(int(self.position[row]), int(self.starts[row]), int(self.ends[row]))


def chunks_dir(data_dir: Path, collection_fingerprint: str, fingerprint: str) -> Path:
    return Path(data_dir) / "chunks" / f"{collection_fingerprint}-{fingerprint}"


def load_or_cut(documents: Sequence[Document], chunking: Chunking, tokenizer: Any, data_dir: Path,
                collection_fingerprint: str, progress: ProgressFn | None = None) -> tuple[ChunkSet, bool]:
    """The chunks of ``documents`` by ``chunking`` counted with ``tokenizer`` (None: BM25's words),
    from disk when made before, else cut now and kept.

    Returns:
        (the chunks, whether they came from disk).
    """
    own = chunking.fingerprint(tokenizer_identity(tokenizer))
    fingerprint = f"{collection_fingerprint[:16]}-{own}"
    directory = chunks_dir(data_dir, collection_fingerprint, own)
    doc_ids = [d.doc_id for d in documents]
    found = _load(directory, fingerprint, chunking, doc_ids)
    if found is not None:
        if progress:
            progress("chunk", len(doc_ids), len(doc_ids))
        return found, True
    splitter = make_splitter(chunking, tokenizer)
    doc_of: list[int] = []
    position: list[int] = []
    starts: list[int] = []
    ends: list[int] = []
    for first in range(0, len(documents), BLOCK):
        block = documents[first:first + BLOCK]
        for offset, spans in enumerate(cut(splitter, [d.text for d in block])):
            spans = spans or [(0, len(block[offset].text))]  # nothing to cut: the title (and any text) alone
            for i, (start, end) in enumerate(spans):
                doc_of.append(first + offset)
                position.append(i)
                starts.append(start)
                ends.append(end)
        if progress:
            progress("chunk", min(first + BLOCK, len(documents)), len(documents))
    chunks = ChunkSet(fingerprint, chunking, doc_ids, np.asarray(doc_of, np.int32), np.asarray(position, np.int32),
                      np.asarray(starts, np.int64), np.asarray(ends, np.int64), str(directory))
    _save(directory, chunks)
    return chunks, False


def _save(directory: Path, chunks: ChunkSet) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / MANIFEST).unlink(missing_ok=True)
    tmp = directory / f".chunks.{uuid.uuid4().hex[:8]}.tmp"
    with open(tmp, "wb") as handle:
        np.savez(handle, doc_of=chunks.doc_of, position=chunks.position, starts=chunks.starts, ends=chunks.ends)
    os.replace(tmp, directory / "chunks.npz")
    manifest = {"artifact": "chunks", "fingerprint": chunks.fingerprint, "chunking": chunks.chunking.to_json(),
                "documents": len(chunks.doc_ids), "chunks": len(chunks),
                "created": time.strftime("%Y-%m-%dT%H:%M:%S")}
    (directory / MANIFEST).write_text(json.dumps(manifest, indent=2), encoding="utf-8")


def _load(directory: Path, fingerprint: str, chunking: Chunking, doc_ids: list[str]) -> ChunkSet | None:
    try:
        manifest = json.loads((directory / MANIFEST).read_text(encoding="utf-8"))
        with np.load(directory / "chunks.npz", allow_pickle=False) as data:
            arrays = {key: data[key] for key in ("doc_of", "position", "starts", "ends")}
    except (OSError, ValueError, KeyError):
        return None
    if manifest.get("fingerprint") != fingerprint or manifest.get("documents") != len(doc_ids):
        return None
    if len({len(a) for a in arrays.values()}) != 1 or (len(arrays["doc_of"]) and arrays["doc_of"].max() >= len(doc_ids)):
        return None
    return ChunkSet(fingerprint, chunking, doc_ids, arrays["doc_of"], arrays["position"], arrays["starts"],
                    arrays["ends"], str(directory))
