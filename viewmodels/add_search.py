"""The Evaluate page's "Add your search": a form per backend kind with the strategies file's keys,
checked as a declaration typed in the browser, tested, saved in the run store, edited, deleted, and
exported as a strategies-file snippet.

What is typed is a declaration like a strategies file's ``[strategy.NAME]`` table, checked by the
same code (indexes/declared/spec.py) and then as typed in the app: its kind's ``check_typed`` holds
its hosts, paths and ``env:`` secrets to core/outbound.py's policy (``exposed``: the app is bound
beyond loopback), and every ``env:NAME`` it names must be set in the server's environment. The
table is saved as typed (``env:NAME``, never a secret) with where it was typed, so the policy holds
wherever it runs (a run in the app, ``searchgrade evaluate --strategies NAME``, a resume).
"""

from __future__ import annotations

import json
import re
import tomllib
from dataclasses import dataclass
from typing import Any

from searchgrade.core.outbound import APP, EXPOSED_APP, OutboundPolicy
from searchgrade.core.records import SearchGradeError
from searchgrade.engine.store import Store
from searchgrade.indexes.declared.declaration import COMMON_KEYS, Key, StrategySpec
from searchgrade.indexes.declared.kinds import KINDS
from searchgrade.indexes.declared.spec import check_environment, parse_spec

#: Where a declaration typed in the app says it came from, in messages.
SOURCE = "the app"

#: The keys each kind's form shows first; the others are under "More keys". Kinds a person may
#: add from the browser are those with a ``check_typed`` (not ``python``: that would be code).
PRIMARY_KEYS: dict[str, tuple[str, ...]] = {
    "elasticsearch": ("host", "index", "query", "headers"),
    "opensearch": ("host", "index", "query", "headers"),
    "http": ("url", "method", "body", "hits", "id", "score", "title", "text", "headers"),
    "milvus": ("uri", "collection", "search", "token", "embedding_model"),
    "postgres": ("dsn", "table", "search", "sql"),
    "lancedb": ("uri", "table", "search"),
    # Variants of the built-ins (indexes/variants/): another model, chunking, BM25 parameters.
    "ann": ("embedding_model", "chunking", "aggregate"),
    "fulltext": ("bm25_k1", "bm25_b", "chunking", "aggregate"),
    "hybrid": ("ann", "fulltext", "fusion"),
}
#: Keys whose values are long (a text area rather than a line).
LONG_KEYS = frozenset({"sql", "body", "query"})
#: The form's labels of the kinds.
KIND_LABELS = {"elasticsearch": "Elasticsearch", "opensearch": "OpenSearch", "http": "HTTP (any JSON API)",
               "milvus": "Milvus", "postgres": "Postgres (pgvector, full-text, SQL)", "lancedb": "LanceDB",
               "ann": "ANN variant (embedding model, chunking)", "fulltext": "Full-text variant (BM25, chunking)",
               "hybrid": "Hybrid (a fusion of two strategies)"}


@dataclass(frozen=True)
class Field:
    """One key of a kind's form."""

    key: str
    kind: str  # "text", "long", "number", "whole", "flag", "table"
    required: bool
    default: Any
    example: str
    primary: bool


_QUOTED = re.compile(r"""^(["'])(.*?)\1(.*)$""", re.DOTALL)


def placeholder(field: Field) -> str:
    """A field's example as typed in the form: a TOML string's quotes dropped (the form takes the
    text itself), the rest of the example kept."""
    found = _QUOTED.match(field.example)
    return found.group(2) + found.group(3) if found else field.example


def form_kinds() -> list[str]:
    """The kinds a person may add from the browser, in the order the form offers them."""
    return [name for name in PRIMARY_KEYS if name in KINDS and KINDS[name].check_typed is not None] + [
        name for name, kind in KINDS.items() if kind.check_typed is not None and name not in PRIMARY_KEYS]


def _field_kind(key: str, rule: Key) -> str:
    if bool in rule.types:
        return "flag"
    if dict in rule.types:
        return "table"
    if float in rule.types:
        return "number"
    if int in rule.types:
        return "whole"
    return "long" if key in LONG_KEYS else "text"


def form_fields(kind: str) -> list[Field]:
    """The fields of a kind's form: its keys (as the strategies file takes them) and ``rerank``."""
    keys = KINDS[kind].keys
    primary = PRIMARY_KEYS.get(kind) or tuple(k for k, rule in keys.items() if rule.required)
    fields = [Field(key, _field_kind(key, rule), rule.required, rule.default, rule.example, key in primary)
              for key, rule in keys.items()]
    rerank = COMMON_KEYS["rerank"]
    fields.append(Field("rerank", "flag", False, rerank.default, rerank.example, True))
    return sorted(fields, key=lambda f: (not f.primary, primary.index(f.key) if f.key in primary else len(primary)))


def table_from_form(kind: str, values: dict[str, Any]) -> dict[str, Any]:
    """The ``[strategy.NAME]`` table the form's values make: empty fields are left out (their
    default applies), numbers and ``{ ... }`` tables parsed.

    Raises:
        SearchGradeError: a value that is not a number or an inline table (one line naming the key).
    """
    table: dict[str, Any] = {"kind": kind}
    for field in form_fields(kind):
        value = values.get(field.key)
        if field.kind == "flag":
            if value is not None and bool(value) != bool(field.default):
                table[field.key] = bool(value)
            continue
        text = "" if value is None else str(value).strip()
        if not text:
            continue
        if field.kind in ("whole", "number"):
            try:
                table[field.key] = int(text) if field.kind == "whole" else float(text)
            except ValueError:
                what = "a whole number" if field.kind == "whole" else "a number"
                raise SearchGradeError(f"{field.key} must be {what}, got {text!r}") from None
        elif field.kind == "table":
            try:
                parsed = tomllib.loads(f"value = {text}")["value"]
            except tomllib.TOMLDecodeError:
                parsed = None
            if not isinstance(parsed, dict):
                raise SearchGradeError(f"{field.key} must be a table such as {field.example}, got {text!r}")
            table[field.key] = parsed
        else:
            table[field.key] = text
    return table


def form_values(table: dict[str, Any]) -> dict[str, Any]:
    """A saved table as the form's values (to edit it)."""
    kind = str(table["kind"])
    out: dict[str, Any] = {}
    for field in form_fields(kind):
        value = table.get(field.key)
        if field.kind == "flag":
            out[field.key] = bool(value) if value is not None else bool(field.default)
        elif value is None or value == field.default:
            out[field.key] = ""
        elif field.kind == "table":
            out[field.key] = _toml_value(value)
        else:
            out[field.key] = str(value)
    return out


def check_declaration(name: str, table: dict[str, Any], *, exposed: bool, taken: dict[str, str] | None = None,
                      environ: dict[str, str] | None = None) -> StrategySpec:
    """A declaration typed in the app, checked as the strategies file checks one, then as typed: its
    targets against the outbound policy, its ``env:`` names set in the server's environment.

    Args:
        taken: names the strategies file declares (name -> the file), which the app may not reuse.

    Raises:
        SearchGradeError: one line naming the key and the fix.
    """
    name = name.strip()
    if not name:
        raise SearchGradeError("give the strategy a name: lower-case letters, digits, '_' and '-', e.g. prod-es")
    if taken and name in taken:
        raise SearchGradeError(f"{name!r} is declared in the strategies file {taken[name]}: give this one "
                               "another name (the file's declarations are read-only here)")
    kind = KINDS.get(str(table.get("kind")))
    if kind is not None and kind.check_typed is None:
        raise SearchGradeError(f"kind {table['kind']!r} cannot be declared in the app: declare it in the "
                               "strategies file")
    spec = parse_spec(name, table, SOURCE)
    spec = StrategySpec(spec.name, spec.kind, spec.options, spec.rerank, spec.source,
                        EXPOSED_APP if exposed else APP)
    KINDS[spec.kind].check_typed(spec, OutboundPolicy.for_browser(exposed, environ))  # type: ignore[misc]
    check_environment(spec, environ)
    return spec


def save(store: Store, table: dict[str, Any], spec: StrategySpec, *, replace: bool = False,
         collection: str | None = None) -> None:
    """Keep a checked strategy's table as typed (``env:`` names, never their values), added for
    ``collection`` (the Evaluate page offers it only there)."""
    store.save_strategy(spec.name, table, spec.declared_in, replace=replace, collection_name=collection)


@dataclass(frozen=True)
class Saved:
    """A strategy added in the app, as the screen lists it."""

    name: str
    kind: str
    table: dict[str, Any]
    declared_in: str
    error: str  # why it no longer passes the checks, or ""
    #: The collection it was added for (None: any, saved before collections were recorded).
    collection: str | None = None


def saved(store: Store) -> list[Saved]:
    """The strategies added in the app, each checked again as a strategies file's (not its targets:
    that is for Test and for the run)."""
    out = []
    for name, row in store.saved_strategies().items():
        try:
            parse_spec(name, row["table"], SOURCE)
            error = ""
        except SearchGradeError as exc:
            error = str(exc)
        out.append(Saved(name, str(row["table"].get("kind")), row["table"], row["declared_in"], error,
                         row.get("collection_name")))
    return out


def delete(store: Store, name: str) -> bool:
    return store.delete_strategy(name)


# -- the strategies-file snippet ---------------------------------------------------------------------

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def _toml_key(key: str) -> str:
    return key if _BARE_KEY.fullmatch(key) else json.dumps(key)


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, dict):
        inner = ", ".join(f"{_toml_key(k)} = {_toml_value(v)}" for k, v in value.items())
        return "{ " + inner + " }" if inner else "{}"
    text = str(value)
    if "\n" in text and "'''" not in text and not text.endswith("'") and all(
            c.isprintable() or c in "\n\t" for c in text):
        return "'''\n" + text + "'''"  # the newline after the opening quotes is not part of it
    if '"' in text and "'" not in text and text.isprintable():
        return f"'{text}'"  # a literal string: JSON in it reads as written
    return json.dumps(text, ensure_ascii=False)  # a TOML basic string is a JSON string


def toml_snippet(tables: dict[str, dict[str, Any]]) -> str:
    """Saved tables as a strategies file holds them (keys left at their default left out; a secret
    only ever as its ``env:`` name): pasted into a file, they declare the same strategies."""
    blocks = []
    for name, table in tables.items():
        kind = str(table["kind"])
        keys = KINDS[kind].keys if kind in KINDS else {}
        lines = [f"[strategy.{name}]", f"kind = {_toml_value(kind)}"]
        for key, value in table.items():
            if key in ("kind", "source", "declared_in") or value is None:
                continue
            if key == "rerank" and not value:
                continue
            if key in keys and value == keys[key].default:
                continue
            lines.append(f"{_toml_key(key)} = {_toml_value(value)}")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) + ("\n" if blocks else "")
