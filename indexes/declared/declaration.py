"""One declared strategy, the keys a backend kind takes, and the checks every kind shares.

Every backend module (http.py, milvus.py, plugin.py, and any kind added later) builds on this
module alone; the strategies file (spec.py) and the kinds' registry (kinds.py) sit above them, so
the backends never import the module that parses the file.

Secrets: a value written ``"env:NAME"`` is read from the environment when the strategy is built
(``resolve_env``), never before, and never stored: the declaration kept with a run holds the
``env:NAME`` text. A header that carries credentials (Authorization, API keys, tokens, cookies)
must be an ``env:`` value, and a URL must not hold a password.

Where a strategy was declared (``declared_in``): "" for the operator's own (a strategies file, an
entry point), ``"app"`` / ``"exposed app"`` for one typed in the browser, whose targets, secrets and
paths go through core/outbound.py's policy when checked and again when built (``outbound_policy``).
"""

from __future__ import annotations

import os
import threading
import time
import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from searchgrade.core.outbound import OutboundPolicy, policy_for
from searchgrade.core.records import SearchGradeError

#: Prefix of a value read from the environment.
ENV_PREFIX = "env:"
#: Header names whose values are credentials: only ``env:`` values are accepted.
SECRET_HEADER_WORDS = ("authorization", "api-key", "apikey", "api_key", "token", "secret", "cookie",
                       "password")


@dataclass(frozen=True)
class Key:
    """One key a kind accepts.

    Attributes:
        types: accepted Python types of the TOML value.
        default: the value when the key is absent.
        required: whether the key must be given.
        example: how a valid value looks, for the message.
    """

    types: tuple[type, ...]
    default: Any = None
    required: bool = False
    example: str = ""


#: Keys every kind takes.
COMMON_KEYS: dict[str, Key] = {
    "kind": Key((str,), required=True, example='"http"'),
    "rerank": Key((bool, str, list), False,
                  example='true (also grade NAME_rerank: the run\'s default reranker on its top candidates), '
                          'or "cohere" / ["cohere", "tei"] (NAME_cohere ...: declared [reranker.cohere])'),
}


@dataclass(frozen=True)
class StrategySpec:
    """One declared strategy, checked.

    Attributes:
        name: the strategy's name (``[strategy.NAME]``).
        kind: the backend kind that serves it (indexes/declared/kinds.py: "http", "milvus", ...).
        options: every key of the kind with its value or default (``env:`` values as written).
        rerank: also grade ``NAME_rerank``.
        source: where it was declared ("strategies.toml", "entry point ..."), for messages.
        declared_in: "" for the operator's declarations; "app" or "exposed app" for one typed in
            the browser (core/outbound.py: its targets are checked wherever it runs).
        rerankers: declared rerankers (``[reranker.NAME]``) that also grade ``NAME_RERANKER``.
    """

    name: str
    kind: str
    options: dict[str, Any] = field(default_factory=dict)
    rerank: bool = False
    source: str = ""
    declared_in: str = ""
    rerankers: tuple[str, ...] = ()

    @property
    def where(self) -> str:
        return f"{self.source}: [strategy.{self.name}]" if self.source else f"[strategy.{self.name}]"

    def to_json(self) -> dict[str, Any]:
        """The declaration as stored with a run: ``env:`` values stay ``env:NAME``."""
        typed = {"declared_in": self.declared_in} if self.declared_in else {}
        by = {"rerankers": list(self.rerankers)} if self.rerankers else {}
        return {"kind": self.kind, "rerank": self.rerank, "source": self.source, **typed, **by, **self.options}

    @classmethod
    def from_json(cls, name: str, d: Mapping[str, Any]) -> StrategySpec:
        options = {k: v for k, v in d.items() if k not in ("kind", "rerank", "source", "declared_in", "rerankers")}
        return cls(name, str(d["kind"]), options, bool(d.get("rerank")), str(d.get("source") or ""),
                   str(d.get("declared_in") or ""), tuple(d.get("rerankers") or ()))


def outbound_policy(spec: StrategySpec, environ: Mapping[str, str] | None = None) -> OutboundPolicy | None:
    """The policy a strategy typed in the app is held to (None for the operator's own)."""
    return policy_for(spec.declared_in, environ)


def check_typed_secret(policy: OutboundPolicy, where: str, key: str, value: Any, host: str) -> None:
    """An ``env:NAME`` value of a typed declaration may go only to the host NAME is bound to."""
    if is_env(value):
        policy.check_secret(value[len(ENV_PREFIX):].strip(), host, f"{where}: {key}")


def is_env(value: Any) -> bool:
    return isinstance(value, str) and value.startswith(ENV_PREFIX)


def resolve_env(value: Any, where: str, key: str, environ: Mapping[str, str] | None = None) -> Any:
    """``value`` with ``env:NAME`` replaced by the environment variable NAME.

    Raises:
        SearchGradeError: NAME is not set (or empty).
    """
    if not is_env(value):
        return value
    env_name = value[len(ENV_PREFIX):].strip()
    if not env_name:
        raise SearchGradeError(f"{where}: {key} = \"env:\" names no variable: write env:NAME")
    found = (environ if environ is not None else os.environ).get(env_name)
    if not found:
        raise SearchGradeError(f"{where}: {key} reads ${env_name} (env:{env_name}), which is not set: "
                               f"export {env_name}=... in the environment that runs searchgrade")
    return found


def check_secret_free(where: str, key: str, value: str) -> None:
    """A literal value that looks like a credential is refused (it would be stored with runs)."""
    if is_env(value):
        return
    raise SearchGradeError(f"{where}: {key} holds a literal secret: put it in the environment "
                           f"and write {key} = \"env:NAME\" (the file is stored with every run)")


def check_url(where: str, key: str, url: str, schemes: tuple[str, ...] = ("http", "https")) -> None:
    """A URL with an allowed scheme, a host, and no password in it."""
    parsed = urllib.parse.urlsplit(url.replace("{{query}}", "q").replace("{{k}}", "10"))
    if parsed.scheme not in schemes or not parsed.netloc:
        raise SearchGradeError(f"{where}: {key} {url!r} is not a {'/'.join(schemes)} URL: write e.g. "
                               f"{key} = \"http://127.0.0.1:9200/docs/_search\"")
    if parsed.password:
        raise SearchGradeError(f"{where}: {key} holds a password: put credentials in a header read "
                               "from the environment (headers = { Authorization = \"env:NAME\" })")


def is_secret_header(name: str) -> bool:
    lowered = name.lower()
    return any(word in lowered for word in SECRET_HEADER_WORDS)


def check_columns(where: str, table: str, options: Mapping[str, Any], keys: Sequence[str],
                  columns: Sequence[str]) -> None:
    """Each of ``keys`` (``id_column``, ...) names one of the table's ``columns``.

    Raises:
        SearchGradeError: the first that does not, with the columns there are.
    """
    for key in keys:
        if options[key] not in columns:
            raise SearchGradeError(f"{where}: {key} {options[key]!r} is not a column of {table}: its columns "
                                   f"are {', '.join(columns)}; set {key} = \"...\"")


def embedded_by(model: str, backend: str) -> dict[str, str]:
    """What embedded vectors, as an exported collection or table records it (the backend with its
    export recipe, indexes.embeddings.backends.backend_identity)."""
    from searchgrade.indexes.embeddings.backends import backend_identity
    from searchgrade.indexes.settings import canonical_model_name

    return {"embedding_model": canonical_model_name(model), "embedding_backend": backend_identity(backend)}


def embeddings_differ(where: str, what: str, recorded: Any, model: str, backend: str, again: str) -> None:
    """Raises SearchGradeError when ``recorded`` (what an exported collection or table records, a
    dict or None) names other embeddings than the queries' would be; a target that records none
    (made elsewhere) is not checked.

    Args:
        what: the target, for the message ("Postgres table 'docs'").
        again: the export-index command that would load it again with the run's embeddings.
    """
    if not isinstance(recorded, dict):
        return
    wanted = embedded_by(model, backend)
    if {k: recorded.get(k) for k in wanted} == wanted:
        return
    raise SearchGradeError(
        f"{where}: {what} holds vectors of {recorded.get('embedding_model')} by the "
        f"{recorded.get('embedding_backend')} backend, but this run would embed its queries with "
        f"{wanted['embedding_model']} by {wanted['embedding_backend']}, and such vectors must not be "
        f"compared: load it again with `{again} --replace --embedding-model {model} --embedding-backend "
        f"{backend}`, or run with the model (embedding_model of the strategy) and --embedding-backend "
        "it was loaded with")


#: Query vectors already computed in this process, per embedding model object (weakly held):
#: text -> (vector, seconds its embedding cost).
_QUERY_VECTORS: Any = None
_QUERY_VECTORS_LOCK = threading.Lock()
#: Texts kept per model (a run's queries, several times over).
QUERY_VECTORS_KEPT = 20_000


def query_vectors(embedder: Any, texts: Sequence[str], batch_size: int) -> tuple[list[Any], list[float]]:
    """The vectors of ``texts`` by ``embedder``, and each one's share of the batch that embedded it.

    The declared strategies that embed queries (postgres, lancedb, milvus) share them: a query
    embedded for one strategy is not embedded again for another with the same model, and is charged
    at what it cost then, so each strategy's latency stays what it would cost on its own.
    """
    import weakref

    from searchgrade.indexes.embeddings.encoder import encode

    global _QUERY_VECTORS
    with _QUERY_VECTORS_LOCK:
        if _QUERY_VECTORS is None:
            _QUERY_VECTORS = weakref.WeakKeyDictionary()
        try:
            known = _QUERY_VECTORS.setdefault(embedder, {})
        except TypeError:  # an embedder that cannot be weakly referenced: nothing is kept
            known = {}
        missing = list(dict.fromkeys(t for t in texts if t not in known))
    if missing:
        start = time.perf_counter()
        vectors = encode(embedder, missing, batch_size=batch_size)
        share = (time.perf_counter() - start) / len(missing)
        with _QUERY_VECTORS_LOCK:
            if len(known) + len(missing) > QUERY_VECTORS_KEPT:
                known.clear()
            for text, vector in zip(missing, vectors, strict=True):
                known[text] = (vector, share)
            found = [known[t] for t in texts]
    else:
        with _QUERY_VECTORS_LOCK:
            found = [known[t] for t in texts]
    return [v for v, _ in found], [s for _, s in found]
