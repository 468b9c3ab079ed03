"""A chunking setting: how a document's text is cut into passages.

    chunking = { method = "tokens", size = 128, overlap = 16 }

``method`` is a key of ``METHODS``: what ``size`` and ``overlap`` count, and how the cut is made
(indexes/chunking/splitter.py). Every check is here, once, and says what was wrong and the fix.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from searchgrade.core.records import SearchGradeError


class Method(NamedTuple):
    """One way to cut: the unit ``size`` and ``overlap`` count, and what it does, in words."""

    unit: str
    text: str


#: Chunking methods by name (what ``method`` takes).
METHODS: dict[str, Method] = {
    "tokens": Method("tokens", "up to `size` tokens of the variant's tokenizer, cut at the largest unit that "
                               "fits (a sentence, else a word); neighbours share up to `overlap` tokens"),
    "sentences": Method("sentences", "`size` whole sentences, neighbours sharing `overlap` of them"),
    "markdown": Method("tokens", "up to `size` tokens, cut at Markdown's structure first (headings, "
                                 "blocks, lists), then sentences and words"),
}
#: Bump when a method cuts differently: the chunks kept on disk are made again.
CHUNK_FORMAT = "chunks-v1"
EXAMPLE = '{ method = "tokens", size = 128, overlap = 16 }'
#: The method of a chunking table that names none.
DEFAULT_METHOD = "tokens"


@dataclass(frozen=True)
class Chunking:
    """How documents are cut (see ``METHODS``).

    Attributes:
        method: a key of METHODS.
        size: the most units a chunk holds (tokens or sentences).
        overlap: units two neighbouring chunks share (less than ``size``).
    """

    method: str
    size: int
    overlap: int = 0

    def __post_init__(self) -> None:
        check_chunking(self)

    @property
    def unit(self) -> str:
        return METHODS[self.method].unit

    def label(self) -> str:
        """Short, for generated names and tables: "tokens128-16", "sentences3-1"."""
        return table_label(self.to_json())

    def to_json(self) -> dict[str, Any]:
        return {"method": self.method, "size": self.size, "overlap": self.overlap}

    def fingerprint(self, tokenizer: str) -> str:
        """16 hex digits naming these chunks of a collection cut with ``tokenizer`` (its identity)."""
        payload = json.dumps({**self.to_json(), "tokenizer": tokenizer, "format": CHUNK_FORMAT}, sort_keys=True)
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:16]


def check_chunking(chunking: Chunking, where: str = "chunking") -> Chunking:
    """The rules: a known method, a whole size >= 1, a whole overlap >= 0 and below size.

    Raises:
        SearchGradeError: one line naming the key, the value and the fix.
    """
    if chunking.method not in METHODS:
        raise SearchGradeError(f"{where}: method {chunking.method!r} is not known: use one of "
                               f"{', '.join(METHODS)}, e.g. chunking = {EXAMPLE}")
    for key in ("size", "overlap"):
        value = getattr(chunking, key)
        if isinstance(value, bool) or not isinstance(value, int):
            raise SearchGradeError(f"{where}: {key} must be a whole number of {chunking.unit}, got {value!r}")
    if chunking.size < 1:
        raise SearchGradeError(f"{where}: size must be at least 1 {chunking.unit}, got {chunking.size}")
    if chunking.overlap < 0 or chunking.overlap >= chunking.size:
        raise SearchGradeError(f"{where}: overlap of {chunking.overlap} must be at least 0 and less than size "
                               f"({chunking.size} {chunking.unit}): e.g. overlap = {chunking.size // 8}")
    return chunking


def table_label(value: Mapping[str, Any]) -> str:
    """``Chunking.label`` of a ``chunking`` table, its defaults applied (method "tokens", overlap 0)
    and not checked: a sweep names its variants before each is checked as a strategy."""
    return f"{value.get('method', DEFAULT_METHOD)}{value.get('size', '')}-{value.get('overlap', 0)}"


def parse_chunking(value: Any, where: str = "chunking") -> Chunking | None:
    """A ``chunking`` table (or None: whole documents) as a checked Chunking.

    Raises:
        SearchGradeError: not a table, an unknown or missing key, or a rule broken (one line).
    """
    if value is None or isinstance(value, Chunking):
        return value
    if not isinstance(value, Mapping):
        raise SearchGradeError(f"{where} must be a table, got {value!r}; e.g. chunking = {EXAMPLE}")
    unknown = sorted(set(value) - {"method", "size", "overlap"})
    if unknown:
        raise SearchGradeError(f"{where}: unknown key {unknown[0]!r}: the keys are method, size and overlap; "
                               f"e.g. chunking = {EXAMPLE}")
    if "size" not in value:
        raise SearchGradeError(f"{where}: missing key 'size': e.g. chunking = {EXAMPLE}")
    method = value.get("method", DEFAULT_METHOD)
    if not isinstance(method, str):
        raise SearchGradeError(f"{where}: method must be a string, got {method!r}; use one of {', '.join(METHODS)}")
    probe = object.__new__(Chunking)  # checked with the message's where, not the dataclass's default
    object.__setattr__(probe, "method", method)
    object.__setattr__(probe, "size", value["size"])
    object.__setattr__(probe, "overlap", value.get("overlap", 0))
    check_chunking(probe, where)
    return Chunking(method, value["size"], value.get("overlap", 0))
