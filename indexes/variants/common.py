"""What the variant kinds share: the chunking and aggregate keys, their checks, their settings.

A variant's settings are the run's (``--embedding-model``, ``--bm25-k1``, ...) with the keys it
gives on top, so a variant that gives none is the built-in itself (and shares its index).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from searchgrade.core.records import SearchGradeError
from searchgrade.indexes.chunking.aggregate import AGGREGATES, parse_aggregate
from searchgrade.indexes.chunking.spec import EXAMPLE, parse_chunking
from searchgrade.indexes.declared.declaration import Key, StrategySpec
from searchgrade.indexes.settings import IndexSettings

#: Keys every variant takes: how documents are cut, and how chunk scores become a document's.
CHUNK_KEYS: dict[str, Key] = {
    "chunking": Key((dict,), None, example=EXAMPLE),
    "aggregate": Key((str,), "max", example=f'"max" (or {", ".join(repr(a) for a in AGGREGATES[1:])})'.replace("'", '"')),
}


def looks_like_path(name: str) -> bool:
    """A model named by a path (not a model-hub id): it must exist, and is checked by its files."""
    return name.startswith((".", "/", "~")) or name.count("/") > 1 or "\\" in name or Path(name).expanduser().exists()


def check_model(where: str, name: str | None) -> None:
    """A folder given as ``embedding_model`` exists and holds an embedding model (by its files);
    a hub name is tried when the strategy is built (and skipped with the reason if it cannot load).

    Raises:
        SearchGradeError: a path that does not exist, or a folder of something else (one line).
    """
    if name is None:
        return
    if not name.strip():
        raise SearchGradeError(f"{where}: embedding_model is empty: give a model name or a folder")
    if not looks_like_path(name):
        return
    from searchgrade.indexes.embeddings.models import model_kind

    if not Path(name).expanduser().exists():
        raise SearchGradeError(f"{where}: embedding_model '{name}' does not exist: give a model folder, or a "
                               "model name such as all-MiniLM-L6-v2")
    try:
        model_kind(name)
    except SearchGradeError as exc:
        raise SearchGradeError(f"{where}: embedding_model {exc}") from None


def check_chunk_keys(spec: StrategySpec, options: dict[str, Any]) -> None:
    """``chunking`` parsed and stored as its table (checked: method, size, overlap), ``aggregate``
    one of the known ones."""
    chunking = parse_chunking(options.get("chunking"), f"{spec.where}: chunking")
    options["chunking"] = chunking.to_json() if chunking is not None else None
    parse_aggregate(options["aggregate"], f"{spec.where}: aggregate")


def variant_settings(run: IndexSettings, options: dict[str, Any], keys: tuple[str, ...], where: str) -> IndexSettings:
    """The run's settings with the variant's given ``keys`` on top.

    Raises:
        SearchGradeError: a value IndexSettings refuses, named with the strategy.
    """
    given = {key: options[key] for key in keys if options.get(key) is not None}
    try:
        return replace(run, **given)
    except SearchGradeError as exc:
        raise SearchGradeError(f"{where}: {exc}") from None


def check_settings(spec: StrategySpec, keys: tuple[str, ...]) -> None:
    """The variant's own settings are valid on their own (an unknown backend or index type, a bad
    k1 or b): checked against the defaults, before any run."""
    variant_settings(IndexSettings(), spec.options, keys, spec.where)
