"""Rerank services over HTTP: ``kind = "http"`` (a template) and the presets ``cohere``, ``jina``,
``voyage`` and ``tei``.

A preset is the template with its defaults filled in (as ``elasticsearch`` is a preset of the http
search backend); any template key may be given to override one:

    preset   url (default)                         request                                   reply
    cohere   https://api.cohere.com/v2/rerank      model, query, documents, top_n            results[].index, relevance_score
    jina     https://api.jina.ai/v1/rerank         model, query, documents, top_n            results[].index, relevance_score
    voyage   https://api.voyageai.com/v1/rerank    model, query, documents, top_k            data[].index, relevance_score
    tei      (required) http://HOST:PORT/rerank    query, texts                              [].index, score

A url given with no path gets the preset's (``/v2/rerank``, ``/v1/rerank``, ``/rerank``). The
template (``body``) fills ``{{query}}`` (a JSON string), ``{{documents}}`` (a JSON array of the
texts), ``{{top_n}}`` (their number) and ``{{model}}`` (a JSON string); ``results`` is a JMESPath
to the reply's list, ``index`` and ``score`` JMESPaths inside one item, as for search backends
(indexes/declared/http.py).

A query's candidates go in requests of at most ``batch_size`` texts (the service's limit: TEI's
``--max-client-batch-size`` is 32 by default), whose scores are put together (a cross-encoder's
scores are per pair, so batches compare). Connection errors, timeouts, 429 and 5xx are retried
``retries`` times (exponential backoff from ``backoff_s``, honouring ``Retry-After`` up to 30 s).
A reply that is not JSON, whose list is missing, holds fewer items than were sent, repeats an index
or has one out of range, or a score that is no number, fails the query (``RerankFailed``, one
line): never retried, never replaced by the base order.

Secrets: ``api_key`` (sent as ``Authorization: Bearer ...``) and any credential header are only
``env:NAME`` values, read when the reranker is built. Typed in the app (``declared_in``), the url is
checked by core/outbound.py's policy when declared and on every connection, and an ``env:`` secret
goes only to the host the operator bound it to.
"""

from __future__ import annotations

import json
import re
import threading
import time
import urllib.parse
from collections.abc import Mapping, Sequence
from typing import Any

from searchgrade.core.outbound import OutboundPolicy, OutboundRefused
from searchgrade.core.records import SearchGradeError
from searchgrade.indexes.declared.declaration import (
    Key,
    check_secret_free,
    check_typed_secret,
    check_url,
    is_env,
    is_secret_header,
    resolve_env,
)
from searchgrade.indexes.declared.http import (
    MAX_RETRY_AFTER_S,
    RETRY_STATUSES,
    _compile,
    _connection_reason,
    _retry_after,
    _start,
    guarded_session,
)
from searchgrade.indexes.declared.rerankers import RerankerKind, RerankerSpec, register_kind
from searchgrade.indexes.rerank.service import RerankFailed

_PLACEHOLDER = re.compile(r"\{\{\s*(\w+)\s*\}\}")
PLACEHOLDERS = ("query", "documents", "top_n", "model")

KEYS: dict[str, Key] = {
    "url": Key((str,), None, example='"http://127.0.0.1:8080/rerank"'),
    "model": Key((str,), None, example='"rerank-v3.5"'),
    "api_key": Key((str,), None, example='"env:COHERE_API_KEY" (sent as Authorization: Bearer ...)'),
    "headers": Key((dict,), None, example='{ X-Api-Key = "env:RERANK_KEY" }'),
    "body": Key((str,), None, example="""'{"query": {{query}}, "texts": {{documents}}}'"""),
    "results": Key((str,), None, example='"results" (a JMESPath to the list of scored items)'),
    "index": Key((str,), None, example='"index" (a JMESPath inside one item)'),
    "score": Key((str,), None, example='"relevance_score" (a JMESPath inside one item)'),
    "batch_size": Key((int,), None, example="32 (texts per request: the service's limit)"),
    "depth": Key((int,), None, example="50 (candidates rescored per query; default --rerank-depth)"),
    "timeout_s": Key((float,), 30.0, example="30"),
    "concurrency": Key((int,), 4, example="4"),
    "retries": Key((int,), 2, example="2"),
    "backoff_s": Key((float,), 0.5, example="0.5"),
}

_COHERE_BODY = '{"model": {{model}}, "query": {{query}}, "documents": {{documents}}, "top_n": {{top_n}}}'
#: Each preset's defaults (``path`` is appended to a url given without one; ``url`` is the hosted API).
PRESETS: dict[str, dict[str, Any]] = {
    "cohere": {"url": "https://api.cohere.com/v2/rerank", "path": "/v2/rerank", "body": _COHERE_BODY,
               "results": "results", "index": "index", "score": "relevance_score", "batch_size": 1000},
    "jina": {"url": "https://api.jina.ai/v1/rerank", "path": "/v1/rerank", "body": _COHERE_BODY,
             "results": "results", "index": "index", "score": "relevance_score", "batch_size": 1000},
    "voyage": {"url": "https://api.voyageai.com/v1/rerank", "path": "/v1/rerank",
               "body": '{"model": {{model}}, "query": {{query}}, "documents": {{documents}}, "top_k": {{top_n}}}',
               "results": "data", "index": "index", "score": "relevance_score", "batch_size": 1000},
    "tei": {"url": None, "path": "/rerank", "body": '{"query": {{query}}, "texts": {{documents}}}',
            "results": "@", "index": "index", "score": "score", "batch_size": 32},
    "http": {"url": None, "path": None, "body": None, "results": None, "index": None, "score": None,
             "batch_size": 32},
}


def _fill(template: str, query: str, texts: Sequence[str], model: str | None) -> str:
    values = {"query": json.dumps(query, ensure_ascii=False), "documents": json.dumps(list(texts), ensure_ascii=False),
              "top_n": str(len(texts)), "model": json.dumps(model, ensure_ascii=False)}
    return _PLACEHOLDER.sub(lambda m: values[m.group(1)], template)


def check(spec: RerankerSpec) -> RerankerSpec:
    """The rules across keys of an http reranker or a preset: its defaults filled in, checked."""
    o, where = dict(spec.options), spec.where
    preset = PRESETS[spec.kind]
    for key in ("body", "results", "index", "score", "batch_size"):
        if o.get(key) is None:
            o[key] = preset[key]
    if o.get("url") is None:
        if preset["url"] is None:
            raise SearchGradeError(f"{where}: missing key 'url': add url = {KEYS['url'].example}")
        o["url"] = preset["url"]
    check_url(where, "url", o["url"])
    if preset["path"] and urllib.parse.urlsplit(o["url"]).path in ("", "/"):
        o["url"] = o["url"].rstrip("/") + preset["path"]
    for key in ("body", "results", "index", "score"):
        if not o.get(key):
            raise SearchGradeError(f"{where}: missing key {key!r}: add {key} = {KEYS[key].example}")
    used = {m.group(1) for m in _PLACEHOLDER.finditer(o["body"])}
    unknown = sorted(used - set(PLACEHOLDERS))
    if unknown:
        raise SearchGradeError(f"{where}: body has {{{{{unknown[0]}}}}}: only "
                               f"{', '.join('{{' + p + '}}' for p in PLACEHOLDERS)} are filled in")
    for needed in ("query", "documents"):
        if needed not in used:
            raise SearchGradeError(f"{where}: the body template has no {{{{{needed}}}}}: put it where the "
                                   f"{'query text' if needed == 'query' else 'list of texts'} goes")
    if "model" in used and not o.get("model"):
        raise SearchGradeError(f"{where}: {spec.kind} needs the model to rerank with: add model = "
                               f"{KEYS['model'].example if spec.kind != 'jina' else chr(34) + 'jina-reranker-v2-base-multilingual' + chr(34)}")
    try:
        json.loads(_fill(o["body"], 'a "sample" query', ["one", "two"], o.get("model") or "m"))
    except ValueError as exc:
        raise SearchGradeError(f"{where}: body is not valid JSON once its placeholders are filled in ({exc}): "
                               "write {{query}}, {{documents}} and {{model}} without quotes") from None
    for key in ("results", "index", "score"):
        _compile(o[key], where, key)
    if o.get("api_key") is not None and not is_env(o["api_key"]):
        check_secret_free(where, "api_key", o["api_key"])
    for name, value in (o.get("headers") or {}).items():
        if not isinstance(value, str):
            raise SearchGradeError(f"{where}: header {name} must be a string, got {value!r}")
        if is_secret_header(name):
            check_secret_free(where, f"headers.{name}", value)
    for key, low in (("batch_size", 1), ("concurrency", 1), ("depth", 1), ("retries", 0)):
        if o.get(key) is not None and o[key] < low:
            raise SearchGradeError(f"{where}: {key} must be >= {low}, got {o[key]!r}")
    if o["timeout_s"] <= 0 or o["backoff_s"] < 0:
        raise SearchGradeError(f"{where}: timeout_s must be > 0 and backoff_s >= 0")
    return RerankerSpec(spec.name, spec.kind, o, spec.source, spec.declared_in)


def check_typed(spec: RerankerSpec, policy: OutboundPolicy) -> None:
    """A reranker typed in the app: its url's host (resolved) and where its ``env:`` secrets go."""
    o, where = spec.options, spec.where
    policy.check_url(o["url"], f"{where}: url")
    host = urllib.parse.urlsplit(o["url"]).hostname or ""
    check_typed_secret(policy, where, "api_key", o.get("api_key"), host)
    for name, value in (o.get("headers") or {}).items():
        check_typed_secret(policy, where, f"headers.{name}", value, host)


class _Retry(Exception):  # noqa: N818 - control flow inside the client
    def __init__(self, message: str, wait_s: float | None = None) -> None:
        super().__init__(message)
        self.wait_s = wait_s


class HttpReranker:
    """A declared rerank service as a QueryReranker (indexes/rerank/service.py)."""

    def __init__(self, spec: RerankerSpec, environ: Mapping[str, str] | None = None) -> None:
        from searchgrade.core.outbound import policy_for

        o = spec.options
        self.name = spec.name
        self.kind = spec.kind
        self.where = spec.where
        self.url = o["url"]
        self.model = o.get("model")
        self.body = o["body"]
        self.batch_size = int(o["batch_size"])
        self.timeout_s = float(o["timeout_s"])
        self.concurrency = int(o["concurrency"])
        self.retries = int(o["retries"])
        self.backoff_s = float(o["backoff_s"])
        self.headers = {"Accept": "application/json", "Content-Type": "application/json"}
        # A typed declaration's targets and secrets first (resolving a refused env: value would say
        # whether the variable is set).
        self.policy = policy_for(spec.declared_in, environ)
        if self.policy is not None:
            check_typed(spec, self.policy)
        secret_headers = set()
        if o.get("api_key") is not None:
            self.headers["Authorization"] = "Bearer " + resolve_env(o["api_key"], self.where, "api_key", environ)
            secret_headers.add("Authorization")
        for name, value in (o.get("headers") or {}).items():
            self.headers[name] = resolve_env(value, self.where, f"headers.{name}", environ)
            if is_env(value):
                secret_headers.add(name)
        self.secret_headers = secret_headers
        self.paths = {key: (o[key], _compile(o[key], self.where, key)) for key in ("results", "index", "score")}
        self.requests = 0
        self._local = threading.local()

    def _session(self) -> Any:
        session = getattr(self._local, "session", None)
        if session is None:
            session = self._local.session = guarded_session(self.policy, self.headers, self.secret_headers)
        return session

    def rerank(self, query: str, texts: Sequence[str]) -> list[float]:
        """One score per text, in order, from as many requests as ``batch_size`` makes.

        Raises:
            RerankFailed: a request still failed after its retries, or a reply did not fit.
        """
        scores: list[float] = []
        for start in range(0, len(texts), self.batch_size):
            scores += self._batch(query, texts[start:start + self.batch_size])
        return scores

    def _batch(self, query: str, texts: Sequence[str]) -> list[float]:
        attempt = 0
        while True:
            attempt += 1
            try:
                return self.read(self.request(query, texts), len(texts))
            except _Retry as exc:
                if attempt > self.retries:
                    suffix = f" (after {attempt} attempts)" if attempt > 1 else ""
                    raise RerankFailed(f"{exc}{suffix}") from None
                wait = exc.wait_s if exc.wait_s is not None else self.backoff_s * 2 ** (attempt - 1)
                time.sleep(min(wait, MAX_RETRY_AFTER_S))

    def request(self, query: str, texts: Sequence[str]) -> Any:
        """One attempt: the parsed JSON reply."""
        import requests

        data = _fill(self.body, query, texts, self.model).encode("utf-8")
        self.requests += 1
        try:
            reply = self._session().post(self.url, data=data, timeout=self.timeout_s)
            content = reply.content
        except requests.Timeout:
            raise _Retry(f"no reply from {self.url} within timeout_s = {self.timeout_s:g} s") from None
        except requests.ConnectionError as exc:
            raise _Retry(f"cannot connect to {self.url} ({_connection_reason(exc)}): is the service "
                         "running, and is the url right?") from None
        except requests.RequestException as exc:
            raise _Retry(f"request to {self.url} failed ({type(exc).__name__}: {exc})") from None
        except OutboundRefused as exc:
            raise RerankFailed(str(exc)) from None
        if reply.status_code >= 400:
            body = _start(content.decode("utf-8", "replace"))
            hint = {401: ": check api_key", 403: ": check api_key", 404: ": check the url",
                    400: ": check the body template (and model)", 413: ": lower batch_size",
                    422: ": check the body template (and model; or lower batch_size)"}.get(reply.status_code, "")
            message = f"HTTP {reply.status_code} from {self.url}{hint} (reply: {body})"
            if reply.status_code in RETRY_STATUSES:
                raise _Retry(message, _retry_after(reply.headers.get("Retry-After")))
            raise RerankFailed(message)
        try:
            return json.loads(content)
        except ValueError:
            raise RerankFailed(f"the reply from {self.url} is not JSON (it starts with: "
                               f"{_start(content.decode('utf-8', 'replace'))})") from None

    def read(self, reply: Any, sent: int) -> list[float]:
        """The scores of the ``sent`` texts, in the order sent, from one reply.

        Raises:
            RerankFailed: the list is missing, shorter than what was sent, an index repeats or is
                out of range, or a score is no number.
        """
        expression, path = self.paths["results"]
        items = path.search(reply)
        if not isinstance(items, list):
            found = "nothing" if items is None else f"a {type(items).__name__}, not a list"
            raise RerankFailed(f"results {expression!r} finds {found} in the reply from {self.url} (it "
                               f"starts with: {_start(reply)}): fix the results JMESPath")
        if len(items) != sent:
            raise RerankFailed(f"{self.url} returned {len(items)} scored items for the {sent} documents "
                               "sent: a reranker must score every document it is sent")
        scores: list[float | None] = [None] * sent
        index_expr, index_path = self.paths["index"]
        score_expr, score_path = self.paths["score"]
        for position, item in enumerate(items, start=1):
            index = index_path.search(item)
            if isinstance(index, bool) or not isinstance(index, int):
                raise RerankFailed(f"index {index_expr!r} finds {_start(index)} in item {position} of the "
                                   f"reply from {self.url}, not a whole number: fix the index JMESPath")
            if not 0 <= index < sent:
                raise RerankFailed(f"{self.url} returned index {index} for {sent} documents sent (0 to "
                                   f"{sent - 1}): the reply does not fit the request")
            if scores[index] is not None:
                raise RerankFailed(f"{self.url} returned index {index} twice: the reply does not fit the request")
            value = score_path.search(item)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise RerankFailed(f"score {score_expr!r} finds {_start(value)} in item {position} of the "
                                   f"reply from {self.url}, not a number: fix the score JMESPath")
            scores[index] = float(value)
        return [float(s) for s in scores]  # every index seen once: none is None


def build(spec: RerankerSpec, ctx: Any) -> HttpReranker:
    return HttpReranker(spec)


for _kind in PRESETS:
    register_kind(RerankerKind(_kind, KEYS, check, build, check_typed))
