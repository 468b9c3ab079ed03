"""Reading files of records (JSONL, CSV, TSV, Parquet) as streams, with a location per record.

Nothing here reads a whole file into memory: text files are decoded line by line (a line that is
not UTF-8 is named by its number), Parquet files batch by batch, only the columns asked for. Each
record comes with its location for messages: ``file:line`` for text files, ``file row N`` for
Parquet.
"""

from __future__ import annotations

import csv
import itertools
import json
import sys
from collections.abc import Collection as Names
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from searchgrade.core.records import SearchGradeError
from searchgrade.engine.collections.problems import Shown, problem

#: One record and where it was read: (location, field -> value).
Record = tuple[str, dict[str, Any]]
RECORD_SUFFIXES = (".jsonl", ".csv", ".tsv", ".parquet")
_DELIMITERS = {".csv": ",", ".tsv": "\t"}
#: JSONL has no header: its columns are the keys of the first records.
_JSONL_SAMPLE = 100
_PARQUET_BATCH = 8192
_BOM = b"\xef\xbb\xbf"


#: Bytes looked at to tell a text file from a binary one.
SNIFF_BYTES = 8192
_CONTROL = frozenset(range(32)) - {9, 10, 12, 13, 27} | {127}


def looks_binary(head: bytes) -> bool:
    """Whether a file's first bytes are binary data rather than text: a NUL byte (no text encoding
    but UTF-16/32, which we do not read, has one), or more than a tenth control characters."""
    if not head:
        return False
    if b"\0" in head:
        return True
    return sum(byte in _CONTROL for byte in head) > len(head) / 10


def not_text(shown: Shown) -> SearchGradeError:
    """The one line for a binary file where a text file was expected."""
    return SearchGradeError(f"{shown.short}: not a text file (it holds binary data); give a UTF-8 text file "
                            "(.jsonl, .csv, .tsv, TREC or BEIR qrels), or a .parquet file")


def text_lines(shown: Shown) -> Iterator[tuple[int, str]]:
    """``(number, line)`` for every line of a UTF-8 file (a leading BOM dropped; line ends kept).

    Lines end at ``\\n`` only: JSON strings may hold U+2028 and other characters Python's
    ``splitlines`` would split at.
    """
    with open(shown.path, "rb") as f:
        if looks_binary(f.read(SNIFF_BYTES)):
            raise not_text(shown)
        f.seek(0)
        for number, raw in enumerate(f, start=1):
            if number == 1 and raw.startswith(_BOM):
                raw = raw[len(_BOM):]
            try:
                yield number, raw.decode("utf-8")
            except UnicodeDecodeError as error:
                raise problem(shown.line(number),
                              f"bytes {raw[error.start:error.end]!r} are not valid UTF-8",
                              "re-save the file as UTF-8 (e.g. iconv -f latin1 -t utf-8)") from None


def decode_whole(shown: Shown) -> str:
    """A small text file's content (a .txt or .md document), decoded as :func:`text_lines` does."""
    return "".join(line for _, line in text_lines(shown))


@dataclass
class Records:
    """A file of records with named columns, read as a stream.

    Attributes:
        shown: The file, as messages name it.
        columns: The header (CSV, TSV), the schema (Parquet) or the keys of the first records (JSONL).
        header: Whether the first line of a CSV/TSV file is a header (else columns are "column 1", ...).
    """

    shown: Shown
    columns: list[str]
    header: bool = True

    @property
    def kind(self) -> str:
        return self.shown.path.suffix.lower()

    def __iter__(self) -> Iterator[Record]:
        return self.read()

    def read(self, wanted: Sequence[str] | None = None) -> Iterator[Record]:
        """Every record; ``wanted`` limits the columns read where the format allows (Parquet)."""
        if self.kind == ".jsonl":
            return _jsonl(self.shown)
        if self.kind == ".parquet":
            return _parquet(self.shown, [c for c in (wanted or self.columns) if c in self.columns])
        return _delimited(self.shown, _DELIMITERS[self.kind], self.columns, self.header)

    def head(self, n: int) -> list[dict[str, Any]]:
        """The first n records (fewer if the file is shorter)."""
        return [record for _, record in itertools.islice(self.read(), n)]


def open_records(shown: Shown, *, header_names: Names[str] | None = None) -> Records:
    """The records of a .jsonl, .csv, .tsv or .parquet file.

    Args:
        shown: The file.
        header_names: For CSV/TSV files whose header is optional (queries): a first line holding
            none of these names (any case) is data, and the columns are "column 1", "column 2", ...
            None: the first line is always the header.

    Raises:
        SearchGradeError: An unreadable Parquet file, a malformed first line, or an unknown suffix.
    """
    kind = shown.path.suffix.lower()
    if kind == ".jsonl":
        keys: dict[str, None] = {}
        for _, record in itertools.islice(_jsonl(shown), _JSONL_SAMPLE):
            keys.update(dict.fromkeys(record))
        return Records(shown, list(keys))
    if kind == ".parquet":
        return Records(shown, _parquet_file(shown).schema_arrow.names)
    if kind in _DELIMITERS:
        first = _first_row(shown, _DELIMITERS[kind])
        if header_names is not None and first:
            lowered = {n.lower() for n in header_names}
            if not any(cell.strip().lower() in lowered for cell in first):
                return Records(shown, [f"column {i}" for i in range(1, len(first) + 1)], header=False)
        return Records(shown, [cell.strip() for cell in first])
    raise SearchGradeError(f"{shown.label}: unsupported file type {kind or '(no suffix)'!r}; "
                           f"use a {', '.join(RECORD_SUFFIXES)} file")


def _jsonl(shown: Shown) -> Iterator[Record]:
    for number, line in text_lines(shown):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise problem(shown.line(number), f"invalid JSON ({error.msg} at column {error.colno})",
                          "each line must be one JSON object") from None
        if not isinstance(record, dict):
            raise problem(shown.line(number), f"expected a JSON object, got {type(record).__name__}",
                          'each line must be one JSON object such as {"_id": ..., "text": ...}')
        yield shown.line(number), record


def _csv_reader(shown: Shown, delimiter: str) -> Any:
    # The default field limit (128 KiB) is below the size of a long document.
    csv.field_size_limit(min(sys.maxsize, 2**31 - 1))
    return csv.reader((line for _, line in text_lines(shown)), delimiter=delimiter)


def _first_row(shown: Shown, delimiter: str) -> list[str]:
    reader = _csv_reader(shown, delimiter)
    try:
        for row in reader:
            if any(cell.strip() for cell in row):
                return row
    except csv.Error as error:
        raise problem(shown.line(reader.line_num), f"malformed {_format(delimiter)} ({error})",
                      "fix the quoting") from None
    return []


def _format(delimiter: str) -> str:
    return "CSV" if delimiter == "," else "TSV"


def _delimited(shown: Shown, delimiter: str, columns: list[str], header: bool) -> Iterator[Record]:
    reader = _csv_reader(shown, delimiter)
    skip_header = header
    try:
        start = 1
        for row in reader:
            location = shown.line(start)
            start = reader.line_num + 1
            if not any(cell.strip() for cell in row):
                continue
            if skip_header:
                skip_header = False
                continue
            if len(row) != len(columns):
                what = "the header has" if header else "the first line has"
                raise problem(location, f"row has {len(row)} cells but {what} {len(columns)}",
                              "quote cells that contain " + ("commas" if delimiter == "," else "tabs")
                              + " or line breaks")
            yield location, dict(zip(columns, row, strict=True))
    except csv.Error as error:
        raise problem(shown.line(reader.line_num), f"malformed {_format(delimiter)} ({error})",
                      "fix the quoting") from None


def _parquet_file(shown: Shown) -> Any:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise SearchGradeError("pyarrow is not installed (pip install pyarrow)") from None
    try:
        return pq.ParquetFile(shown.path)
    except Exception as error:  # noqa: BLE001 - pyarrow raises several types for a corrupt file
        first = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise problem(shown.label, f"not a readable Parquet file ({first})", "re-export it") from None


def _parquet(shown: Shown, columns: list[str]) -> Iterator[Record]:
    number = 0
    try:
        for batch in _parquet_file(shown).iter_batches(batch_size=_PARQUET_BATCH, columns=columns):
            for row in batch.to_pylist():
                number += 1
                yield shown.row(number), row
    except SearchGradeError:
        raise
    except Exception as error:  # noqa: BLE001 - a corrupt row group shows only when it is read
        first = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise problem(shown.row(number + 1), f"not a readable Parquet row ({first})", "re-export the file") from None
