"""Any HTTP search API as a strategy, and the Elasticsearch / OpenSearch ``_search`` presets.

A request is made from templates: ``{{query}}`` becomes the query as a JSON string in the body
(URL-encoded in the URL), ``{{k}}`` the number of results wanted (an integer), and any other
``{{NAME}}`` the value ``variables = { NAME = ... }`` gives it (a number as written, a string as its
text: what `searchgrade tune` changes, docs/tuning.md). The reply is read
with JMESPath: ``hits`` finds the ranked list, and ``id`` (and optionally ``score``, ``title``,
``text``) are read inside each hit. Ids are compared with the collection's as strings.

Errors: connection refused or reset, a timeout, HTTP 429 and 5xx are retried ``retries`` times
with exponential backoff (``backoff_s``, doubled each time, honouring ``Retry-After`` up to 30 s);
any other HTTP error, a reply that is not JSON, and a reply the mapping cannot read are not (they
would fail again). A query that still fails is a ``Failure`` for this strategy: recorded, never
an empty list. Up to ``concurrency`` requests are in flight; each query's latency is its successful
attempt: the round trip and reading the reply (backoff waits are not counted).

Typed in the app (``spec.declared_in``), a strategy's url is checked by core/outbound.py's policy
when declared and again on every connection of the run (redirects included: the session connects
only to checked addresses), reads no proxy or ``.netrc`` from the environment, and sends an
``env:`` header only to the host the operator bound it to; on a redirect to another host, every
header that carried a secret is dropped.
"""

from __future__ import annotations

import json
import re
import threading
import urllib.parse
from collections.abc import Mapping
from typing import Any

from searchgrade.core.outbound import OutboundPolicy, OutboundRefused
from searchgrade.core.records import Document, ScoredDoc, SearchGradeError
from searchgrade.indexes.base import FailedAttempt, Found
from searchgrade.indexes.declared.declaration import (
    Key,
    StrategySpec,
    check_secret_free,
    check_typed_secret,
    check_url,
    is_env,
    is_secret_header,
    outbound_policy,
    resolve_env,
)
from searchgrade.indexes.declared.node import DeclaredNode

_PLACEHOLDER = re.compile(r"\{\{\s*(\w+)\s*\}\}")
#: HTTP statuses worth another try.
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
#: Longest Retry-After honoured, in seconds.
MAX_RETRY_AFTER_S = 30.0
#: Characters of a reply shown in a message.
SHOWN = 160

KEYS: dict[str, Key] = {
    "url": Key((str,), required=True, example='"http://127.0.0.1:9200/docs/_search"'),
    "method": Key((str,), None, example='"POST" (or "GET")'),
    "body": Key((str,), None, example="""'{"size": {{k}}, "query": {"match": {"text": {{query}}}}}'"""),
    "hits": Key((str,), required=True, example='"hits.hits" (a JMESPath to the list of hits)'),
    "id": Key((str,), required=True, example='"_id" (a JMESPath inside one hit)'),
    "score": Key((str,), None, example='"_score"'),
    "title": Key((str,), None, example='"_source.title"'),
    "text": Key((str,), None, example='"_source.text"'),
    "headers": Key((dict,), None, example='{ Authorization = "env:PROD_SEARCH_AUTH" }'),
    "variables": Key((dict,), None, example="{ boost_title = 2 } (each {{boost_title}} of url and body)"),
    "timeout_s": Key((float,), 10.0, example="10"),
    "concurrency": Key((int,), 4, example="4"),
    "retries": Key((int,), 2, example="2"),
    "backoff_s": Key((float,), 0.5, example="0.5"),
}

#: The Elasticsearch / OpenSearch presets: ``host`` + ``index`` + a query DSL; any http key may
#: be given to override a default.
PRESET_KEYS: dict[str, Key] = {
    "host": Key((str,), "http://127.0.0.1:9200", example='"http://127.0.0.1:9200"'),
    "index": Key((str,), None, example='"docs"'),
    "query": Key((str,), None, example="""'{"match": {"text": {{query}}}}'"""),
    **{name: Key(rule.types, None, False, rule.example) for name, rule in KEYS.items()},
}
PRESET_DEFAULTS = {"method": "POST", "hits": "hits.hits", "id": "_id", "score": "_score",
                   "title": "_source.title", "text": "_source.text"}


def _fill(template: str, query: str, k: int, *, url: bool, variables: Mapping[str, Any] | None = None) -> str:
    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        if name == "query":
            return urllib.parse.quote_plus(query) if url else json.dumps(query, ensure_ascii=False)
        if name == "k":
            return str(int(k))
        given = (variables or {})[name]
        text = given if isinstance(given, str) else json.dumps(given)
        return urllib.parse.quote_plus(text) if url else text

    return _PLACEHOLDER.sub(value, template)


def template_names(options: Mapping[str, Any]) -> list[str]:
    """The ``{{NAME}}`` variables of a strategy's url and body, other than query and k, in order."""
    found: dict[str, None] = {}
    for key in ("url", "body"):
        for m in _PLACEHOLDER.finditer(options.get(key) or ""):
            if m.group(1) not in ("query", "k"):
                found[m.group(1)] = None
    return list(found)


def check(spec: StrategySpec) -> StrategySpec:
    """The rules across keys of an http strategy (see the module docstring)."""
    o, where = dict(spec.options), spec.where
    method = (o.get("method") or ("POST" if o.get("body") else "GET")).upper()
    if method not in ("GET", "POST"):
        raise SearchGradeError(f"{where}: method {o['method']!r} is not supported: use \"GET\" or \"POST\"")
    o["method"] = method
    check_url(where, "url", o["url"])
    if method == "POST" and not o.get("body"):
        raise SearchGradeError(f"{where}: method POST needs a body template: add body = "
                               f"{KEYS['body'].example}")
    if method == "GET" and o.get("body"):
        raise SearchGradeError(f"{where}: a GET request sends no body: use method = \"POST\", or put "
                               "{{query}} in the url's parameters")
    templates = {"url": o["url"], **({"body": o["body"]} if o.get("body") else {})}
    variables = o.get("variables") or {}
    for name, given in variables.items():
        if isinstance(given, bool) or not isinstance(given, (int, float, str)):
            raise SearchGradeError(f"{where}: variables.{name} must be a number or a string, got {given!r}")
    for key, template in templates.items():
        unknown = sorted({m.group(1) for m in _PLACEHOLDER.finditer(template)} - {"query", "k"} - set(variables))
        if unknown:
            raise SearchGradeError(f"{where}: {key} has {{{{{unknown[0]}}}}} with no value: add variables = "
                                   f"{{ {unknown[0]} = ... }} (only {{{{query}}}} and {{{{k}}}} are filled in "
                                   "without one)")
    if not any("query" in {m.group(1) for m in _PLACEHOLDER.finditer(t)} for t in templates.values()):
        place = "body" if method == "POST" else "url"
        raise SearchGradeError(f"{where}: the {place} template has no {{{{query}}}}: put {{{{query}}}} "
                               "where the query text goes (it becomes a JSON string in a body)")
    if o.get("body"):
        sample = _fill(o["body"], 'a "sample" query', 10, url=False, variables=variables)
        try:
            json.loads(sample)
        except ValueError as exc:
            hint = (" ({{query}} becomes a JSON string with its quotes: write it without quotes)"
                    if re.search(r'"\{\{\s*query\s*\}\}"', o["body"]) else "")
            raise SearchGradeError(f"{where}: body is not valid JSON once {{{{query}}}} and {{{{k}}}} "
                                   f"are filled in ({exc}){hint}: fix the body template") from None
    for key in ("hits", "id", "score", "title", "text"):
        if o.get(key) is not None:
            _compile(o[key], where, key)
    headers = o.get("headers") or {}
    for name, value in headers.items():
        if not isinstance(value, str):
            raise SearchGradeError(f"{where}: header {name} must be a string, got {value!r}")
        if is_secret_header(name):
            check_secret_free(where, f"headers.{name}", value)
    if o["timeout_s"] <= 0:
        raise SearchGradeError(f"{where}: timeout_s must be > 0 seconds, got {o['timeout_s']!r}")
    if o["concurrency"] < 1:
        raise SearchGradeError(f"{where}: concurrency must be >= 1, got {o['concurrency']!r}")
    if o["retries"] < 0 or o["backoff_s"] < 0:
        raise SearchGradeError(f"{where}: retries and backoff_s must be >= 0")
    return StrategySpec(spec.name, spec.kind, o, spec.rerank, spec.source)


def check_preset(spec: StrategySpec) -> StrategySpec:
    """An elasticsearch / opensearch declaration: the http strategy its defaults make, checked."""
    o, where = dict(spec.options), spec.where
    if o.get("url") is None:
        if not o.get("index"):
            raise SearchGradeError(f"{where}: missing key 'index': add index = \"NAME\" (the "
                                   f"{spec.kind} index to search; or give url)")
        check_url(where, "host", o["host"])
        o["url"] = f"{o['host'].rstrip('/')}/{urllib.parse.quote(o['index'], safe=',*')}/_search"
    if o.get("body") is None:
        if not o.get("query"):
            raise SearchGradeError(f"{where}: missing key 'query': add query = "
                                   f"{PRESET_KEYS['query'].example} (the query DSL; or give body)")
        o["body"] = '{"size": {{k}}, "query": ' + o["query"] + "}"
    for key, value in PRESET_DEFAULTS.items():
        if o.get(key) is None:
            o[key] = value
    for key, rule in KEYS.items():
        if o.get(key) is None and rule.default is not None:
            o[key] = rule.default
    checked = check(StrategySpec(spec.name, spec.kind, o, spec.rerank, spec.source))
    return checked


def check_typed(spec: StrategySpec, policy: OutboundPolicy) -> None:
    """A declaration typed in the app: its url's host (resolved) and its ``env:`` headers' hosts.

    Raises:
        OutboundRefused: one line naming the key, what was refused and what the operator can set.
    """
    o, where = spec.options, spec.where
    variables = o.get("variables") or {}
    url = _fill(o["url"], "q", 10, url=True, variables=variables)
    # The host is checked once, so it may not change with the query: {{query}} and {{k}} belong in
    # the path, the parameters or the body (a variable is fixed when checked, tuning checks again).
    if urllib.parse.urlsplit(_fill(o["url"], "other", 11, url=True, variables=variables)).netloc != \
            urllib.parse.urlsplit(url).netloc:
        raise OutboundRefused(f"{where}: url {o['url']!r} puts {{{{query}}}} or {{{{k}}}} in the host: a url "
                              "typed in the app names its server; put them in the path or the parameters")
    policy.check_url(url, f"{where}: url")
    host = urllib.parse.urlsplit(url).hostname or ""
    for name, value in (o.get("headers") or {}).items():
        check_typed_secret(policy, where, f"headers.{name}", value, host)


def _compile(expression: str, where: str, key: str) -> Any:
    try:
        import jmespath
        from jmespath.exceptions import JMESPathError
    except ImportError as exc:
        raise SearchGradeError("jmespath is not installed (pip install jmespath)") from exc
    try:
        return jmespath.compile(expression)
    except JMESPathError as exc:
        first = str(exc).strip().splitlines()[0]
        raise SearchGradeError(f"{where}: {key} {expression!r} is not a valid JMESPath ({first}): "
                               "see jmespath.org for the syntax, e.g. hits.hits") from None


def _start(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = " ".join(text.split())
    return text[:SHOWN] + ("..." if len(text) > SHOWN else "")


class MappingError(Exception):
    """The reply does not have the shape the mapping expects (never retried)."""


class RequestError(Exception):
    """A request that failed; ``retry`` says whether another attempt may succeed."""

    def __init__(self, message: str, retry: bool, wait_s: float | None = None, refused: bool = False) -> None:
        super().__init__(message)
        self.retry = retry
        self.wait_s = wait_s
        #: The request reached no server (refused, or no address answered).
        self.refused = refused


class HttpNode(DeclaredNode):
    """A declared HTTP strategy as an executor node."""

    def __init__(self, spec: StrategySpec, environ: Mapping[str, str] | None = None) -> None:
        super().__init__(spec)
        o = spec.options
        self.url = o["url"]
        self.method = o["method"]
        self.body = o.get("body")
        self.variables = dict(o.get("variables") or {})
        self.timeout_s = float(o["timeout_s"])
        self.concurrency = int(o["concurrency"])
        self.retries = int(o["retries"])
        self.backoff_s = float(o["backoff_s"])
        self.headers = {"Accept": "application/json"}
        if self.body is not None:
            self.headers["Content-Type"] = "application/json"
        # A typed declaration's targets and secrets first: resolving an env: header the policy
        # refuses would say whether the variable is set.
        self.policy = outbound_policy(spec, environ)
        if self.policy is not None:
            check_typed(spec, self.policy)
        for name, value in (o.get("headers") or {}).items():
            self.headers[name] = resolve_env(value, self.where, f"headers.{name}", environ)
        self.paths = {key: (o[key], _compile(o[key], self.where, key))
                      for key in ("hits", "id", "score", "title", "text") if o.get(key)}
        #: Headers whose values are secrets: dropped on a redirect to another host (typed strategies).
        self.secret_headers = {name for name, value in (o.get("headers") or {}).items() if is_env(value)}
        self._local = threading.local()

    # -- one request ----------------------------------------------------------------------------

    def _session(self) -> Any:
        session = getattr(self._local, "session", None)
        if session is None:
            session = self._local.session = guarded_session(self.policy, self.headers, self.secret_headers)
        return session

    def request(self, query: str, k: int) -> Any:
        """One request: the parsed JSON reply."""
        import requests

        url = _fill(self.url, query, k, url=True, variables=self.variables)
        data = (_fill(self.body, query, k, url=False, variables=self.variables).encode("utf-8")
                if self.body is not None else None)
        try:
            reply = self._session().request(self.method, url, data=data, timeout=self.timeout_s)
            content = reply.content
        except requests.Timeout:
            raise RequestError(f"no reply from {self.url} within timeout_s = {self.timeout_s:g} s",
                               True) from None
        except requests.ConnectionError as exc:
            reason = _connection_reason(exc)
            raise RequestError(f"cannot connect to {self.url} ({reason}): is the server running, "
                               "and is the url right?", True, refused=reason in NO_SERVER) from None
        except requests.RequestException as exc:
            raise RequestError(f"request to {self.url} failed ({type(exc).__name__}: {exc})", True) from None
        except OutboundRefused as exc:  # a redirect, or a name that now resolves elsewhere
            raise RequestError(str(exc), False) from None
        if reply.status_code >= 400:
            body = _start(content.decode("utf-8", "replace"))
            retry = reply.status_code in RETRY_STATUSES
            hint = {401: ": check the credentials in headers", 403: ": check the credentials in headers",
                    404: ": check the url (and the index name)",
                    400: ": check the body template"}.get(reply.status_code, "")
            raise RequestError(f"HTTP {reply.status_code} {reply.reason or ''} from {self.url}"
                               f"{hint} (reply: {body})".replace("  ", " "), retry,
                               _retry_after(reply.headers.get("Retry-After")))
        try:
            return json.loads(content)
        except ValueError:
            raise MappingError(f"the reply from {self.url} is not JSON (it starts with: "
                               f"{_start(content.decode('utf-8', 'replace'))})") from None

    def read(self, reply: Any, k: int) -> tuple[list[ScoredDoc], dict[str, Document]]:
        """The ranked ids (and described documents) the mapping reads from one reply."""
        expression, hits_path = self.paths["hits"]
        hits = hits_path.search(reply)
        if not isinstance(hits, list):
            found = "nothing" if hits is None else f"a {type(hits).__name__}, not a list"
            raise MappingError(f"hits {expression!r} finds {found} in the reply (it starts with: "
                               f"{_start(reply)}): fix the hits JMESPath")
        docs: list[ScoredDoc] = []
        described: dict[str, Document] = {}
        seen: set[str] = set()
        for position, hit in enumerate(hits, start=1):
            id_expr, id_path = self.paths["id"]
            raw_id = id_path.search(hit)
            if isinstance(raw_id, bool) or not isinstance(raw_id, (str, int)) or raw_id == "":
                raise MappingError(f"id {id_expr!r} finds {_start(raw_id) if raw_id is not None else 'nothing'} "
                                   f"in hit {position} (it starts with: {_start(hit)}): fix the id JMESPath")
            doc_id = str(raw_id)
            if doc_id in seen:
                continue
            seen.add(doc_id)
            score = 1.0 / position
            if "score" in self.paths:
                value = self.paths["score"][1].search(hit)
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    score = float(value)
            title = self._text(hit, "title")
            text = self._text(hit, "text")
            if title or text:
                described[doc_id] = Document(doc_id, title, text)
            docs.append(ScoredDoc(doc_id, score, len(docs) + 1))
            if len(docs) == k:
                break
        return docs, described

    def _text(self, hit: Any, key: str) -> str:
        if key not in self.paths:
            return ""
        value = self.paths[key][1].search(hit)
        if value is None:
            return ""
        if isinstance(value, list):
            value = " ".join(str(v) for v in value)
        return str(value)

    def search_one(self, text: str, vector: Any, depth: int) -> Found:  # noqa: ARG002 - searched by text
        """One attempt: the request and the ranked ids the mapping reads from its reply.

        Raises:
            RequestError, MappingError: the attempt failed (the message is one line).
        """
        docs, described = self.read(self.request(text, depth), depth)
        return Found(docs, described)

    def explain(self, exc: Exception, attempt: int) -> FailedAttempt | None:
        """A failed request is tried again where that can help, after ``backoff_s`` doubled each time
        (or the server's Retry-After); a reply the mapping cannot read is not."""
        if isinstance(exc, RequestError):
            wait = exc.wait_s if exc.wait_s is not None else self.backoff_s * 2 ** (attempt - 1)
            return FailedAttempt(str(exc), exc.retry, min(wait, MAX_RETRY_AFTER_S), exc.refused)
        if isinstance(exc, MappingError):
            return FailedAttempt(str(exc))
        return None


def guarded_session(policy: OutboundPolicy | None, headers: Mapping[str, str], secret_headers: set[str]) -> Any:
    """A requests session with ``headers``: plain for a declaration from a file (``policy`` None),
    else the policy's session (every address checked, on every redirect) that drops the secret
    headers when a redirect leaves their host. One per thread (requests' sessions are not shared)."""
    import requests

    if policy is None:
        session = requests.Session()
    else:
        session = policy.session()
        session.rebuild_auth = _drop_secrets_elsewhere(session, secret_headers)
    session.headers.update(headers)
    return session


def _drop_secrets_elsewhere(session: Any, secret_headers: set[str]) -> Any:
    """requests' ``rebuild_auth`` (which drops Authorization on a redirect to another host), also
    dropping every header that carries a secret, whatever its name."""
    rebuild = session.rebuild_auth

    def rebuild_auth(prepared: Any, response: Any) -> None:
        rebuild(prepared, response)
        before = urllib.parse.urlsplit(response.request.url).hostname
        if urllib.parse.urlsplit(prepared.url).hostname != before:
            for name in list(prepared.headers):
                if name in secret_headers or name.lower() in {h.lower() for h in secret_headers}:
                    del prepared.headers[name]

    return rebuild_auth


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


#: Connection errors that reached no server (``_connection_reason``'s words): counted as refusals.
NO_SERVER = frozenset({"connection refused", "name or service not known", "no route to host"})


def _connection_reason(exc: Exception) -> str:
    text = str(exc)
    for marker in ("Connection refused", "Connection reset", "Name or service not known",
                   "Remote end closed connection", "Connection aborted", "No route to host",
                   "timed out"):
        if marker.lower() in text.lower():
            return marker.lower()
    return type(exc).__name__


def build_node(spec: StrategySpec, ctx: Any) -> HttpNode:
    return HttpNode(spec)

