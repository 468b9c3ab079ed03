"""A model/chunking sweep: one declaration expanded into a small grid of variants.

    [sweep.grid]
    kind = "ann"
    embedding_model = ["all-MiniLM-L6-v2", "./minilm-static"]        # a list: one value per variant
    chunking = [{ method = "tokens", size = 128, overlap = 16 },
                { method = "tokens", size = 256, overlap = 32 }]      # "none": whole documents
    aggregate = "max"                                                 # one value: every variant
    reference = "ann"                                                 # compared with (default: the built-in of the kind)

Every combination of the listed values is a variant, checked as a ``[strategy.NAME]`` of its kind
would be, and named from its settings: the sweep's name, then each varying setting's value
(``grid-minilm-static-tokens128-16``). The variants share what can be shared when they are built
(indexes/variants/components.py): one chunking per setting and tokenizer, one embedding per model
and chunk text, through the embedding cache. The run reports the grid with each variant's paired
difference from ``reference`` (viewmodels/sweep.py).
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from searchgrade.core.records import SearchGradeError
from searchgrade.indexes.chunking.spec import table_label

#: Kinds a sweep expands into.
SWEEP_KINDS = ("ann", "fulltext")
#: The most variants one sweep may make: a sweep is a small grid, each variant a full strategy.
MAX_VARIANTS = 24
#: A chunking list entry meaning whole documents.
WHOLE = "none"


@dataclass(frozen=True)
class Sweep:
    """One expanded sweep: its axes (the keys given as lists, with their values), its reference
    strategy, and each variant's name with the values it takes."""

    name: str
    kind: str
    reference: str
    axes: dict[str, list[Any]] = field(default_factory=dict)
    variants: dict[str, dict[str, Any]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "reference": self.reference, "axes": self.axes, "variants": self.variants}

    @classmethod
    def from_json(cls, name: str, data: Mapping[str, Any]) -> Sweep:
        return cls(name, str(data["kind"]), str(data["reference"]), dict(data.get("axes") or {}),
                   dict(data.get("variants") or {}))


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "x"


def value_label(key: str, value: Any) -> str:
    """A setting's value as a part of a generated name."""
    if key == "embedding_model":
        return _slug(Path(str(value)).name)
    if key == "chunking":
        return "whole" if value is None else table_label(value)
    if key == "aggregate":
        return _slug(str(value))
    return _slug(f"{key.replace('bm25_', '').replace('embedding_', '')}{value}")


def axis_labels(key: str, values: list[Any]) -> list[str]:
    """Each value's part of the generated names, made distinct: two model folders of one name are
    told apart by their parent folder, then by their place in the list."""
    labels = [value_label(key, v) for v in values]
    if key == "embedding_model" and len(set(labels)) < len(labels):
        labels = [_slug("-".join(Path(str(v)).parts[-2:])) for v in values]
    if len(set(labels)) < len(labels):
        labels = [f"{label}-{i}" for i, label in enumerate(labels, start=1)]
    return labels


def parse_sweep(name: str, table: Any, source: str = "") -> tuple[Sweep, dict[str, dict[str, Any]]]:
    """A ``[sweep.NAME]`` table as its Sweep and the ``[strategy.NAME]`` tables of its variants
    (checked by the caller as any strategy is).

    Raises:
        SearchGradeError: a bad table, an unknown kind, a list that is empty, too many variants, or
            two variants that would get the same name (one line each).
    """
    where = f"{source}: [sweep.{name}]" if source else f"[sweep.{name}]"
    if not isinstance(table, Mapping):
        raise SearchGradeError(f"{where} must be a table (kind = \"ann\", embedding_model = [...], ...), got {table!r}")
    kind = table.get("kind")
    if kind not in SWEEP_KINDS:
        raise SearchGradeError(f"{where}: kind must be one of {', '.join(SWEEP_KINDS)}, got {kind!r}")
    reference = table.get("reference", kind)
    if not isinstance(reference, str) or not reference:
        raise SearchGradeError(f"{where}: reference must name a strategy, e.g. reference = \"{kind}\"")
    fixed: dict[str, Any] = {}
    axes: dict[str, list[Any]] = {}
    for key, value in table.items():
        if key in ("kind", "reference"):
            continue
        if isinstance(value, list):
            if not value:
                raise SearchGradeError(f"{where}: {key} is an empty list: give one value or more")
            values = [None if key == "chunking" and v == WHOLE else v for v in value]
            if len(values) > 1:
                axes[key] = values
            else:
                fixed[key] = values[0]
        else:
            fixed[key] = None if key == "chunking" and value == WHOLE else value
    count = math.prod(len(v) for v in axes.values())
    if count > MAX_VARIANTS:
        raise SearchGradeError(f"{where} makes {count} variants, more than {MAX_VARIANTS}: a sweep is "
                               "a small grid (each variant is a full strategy); list fewer values or split it")
    labels = {key: axis_labels(key, values) for key, values in axes.items()}
    variants: dict[str, dict[str, Any]] = {}
    tables: dict[str, dict[str, Any]] = {}
    for places in itertools.product(*(range(len(v)) for v in axes.values())) if axes else [()]:
        chosen = {key: axes[key][i] for key, i in zip(axes, places, strict=True)}
        variant = "-".join([name, *(labels[key][i] for key, i in zip(axes, places, strict=True))])
        variants[variant] = chosen
        tables[variant] = {"kind": kind, **{k: v for k, v in {**fixed, **chosen}.items() if v is not None}}
    return Sweep(name, kind, reference, axes, variants), tables
