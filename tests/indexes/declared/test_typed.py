"""Strategies typed in the app are held to core/outbound.py's policy by every kind: their hosts,
their secrets, their paths, and (Postgres) none of libpq's own credentials."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from searchgrade.core.outbound import ENV_ALLOWED_HOSTS, ENV_SECRETS, OutboundPolicy, OutboundRefused
from searchgrade.indexes.base import QueryBatch
from searchgrade.indexes.declared import lancedb, milvus
from searchgrade.indexes.declared import postgres as pg_kind
from searchgrade.indexes.declared.declaration import StrategySpec
from searchgrade.indexes.declared.http import HttpNode
from searchgrade.indexes.declared.spec import parse_spec
from searchgrade.indexes.executor import Executor
from tests.conftest import write_beir

from .conftest import SearchServer

QUERY = "largest planet in the solar system"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    folder = write_beir(tmp_path_factory.mktemp("beir") / "tiny")
    server = SearchServer(folder, tmp_path_factory.mktemp("server-data"))
    yield server
    server.stop()


def typed(table: dict, declared_in: str = "exposed app") -> StrategySpec:
    spec = parse_spec("mine", table, "the app")
    return StrategySpec(spec.name, spec.kind, spec.options, spec.rerank, spec.source, declared_in)


def es(server, **keys) -> dict:
    return {"kind": "elasticsearch", "host": server.url, "index": "tiny", "retries": 0,
            "query": '{"match": {"text": {{query}}}}', **keys}


def first_ids(node) -> list[str]:
    execution = Executor({node.name: node}, [node.name], 3).run(QueryBatch(["q"], [QUERY]))
    assert execution.failures[node.name] == {}
    return [d.doc_id for d in execution.hits[node.name][0].docs]


def test_an_exposed_apps_typed_strategy_reaches_loopback_only_when_the_operator_allows_it(server):
    with pytest.raises(OutboundRefused, match="url: 127.0.0.1 is a loopback address"):
        HttpNode(typed(es(server)), environ={})
    allowed = {ENV_ALLOWED_HOSTS: "127.0.0.1"}
    assert first_ids(HttpNode(typed(es(server)), environ=allowed))[0] == "d3"
    # On a loopback-only app the person at the keyboard is the operator.
    assert first_ids(HttpNode(typed(es(server), "app"), environ={}))[0] == "d3"


def test_a_typed_strategys_secret_goes_only_where_the_operator_bound_it(server, monkeypatch):
    monkeypatch.setenv("SG_TYPED_TOKEN", "Bearer server-secret")
    table = es(server, headers={"Authorization": "env:SG_TYPED_TOKEN", "X-Require": "Bearer server-secret"})
    refusal = ("headers.Authorization: env:SG_TYPED_TOKEN is not available to declarations typed in the app "
               "for 127.0.0.1: .*SEARCHGRADE_BACKEND_SECRETS=SG_TYPED_TOKEN=127.0.0.1$")
    with pytest.raises(OutboundRefused, match=refusal):
        HttpNode(typed(table, "app"), environ={"SG_TYPED_TOKEN": "Bearer server-secret"})
    # Bound but not set on the server: the same line, not "which is not set".
    with pytest.raises(OutboundRefused, match=refusal):
        HttpNode(typed(table, "app"), environ={ENV_SECRETS: "SG_TYPED_TOKEN=127.0.0.1"})
    bound = {"SG_TYPED_TOKEN": "Bearer server-secret", ENV_SECRETS: "SG_TYPED_TOKEN=127.0.0.1"}
    assert first_ids(HttpNode(typed(table, "app"), environ=bound))[0] == "d3"  # the server checked the token


class _Redirect(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    seen: list[tuple[str, dict[str, str]]] = []
    target = ""

    def log_message(self, *args):
        pass

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        type(self).seen.append((self.headers.get("Host", ""), {k.lower(): v for k, v in self.headers.items()}))
        if self.path.startswith("/start"):
            self.send_response(307)
            self.send_header("Location", type(self).target)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        body = b'{"hits": {"hits": [{"_id": "d3", "_score": 1.0}]}}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def test_a_redirect_to_another_host_loses_every_header_that_carried_a_secret(monkeypatch):
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Redirect)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    _Redirect.seen, _Redirect.target = [], f"http://localhost:{port}/end"
    try:
        environ = {"SG_KEY": "k-123", ENV_SECRETS: "SG_KEY=127.0.0.1", ENV_ALLOWED_HOSTS: "127.0.0.1,localhost"}
        spec = typed({"kind": "http", "url": f"http://127.0.0.1:{port}/start", "method": "POST",
                      "body": '{"q": {{query}}}', "hits": "hits.hits", "id": "_id", "retries": 0,
                      "headers": {"X-Api-Key": "env:SG_KEY", "Accept-Language": "en"}})
        assert first_ids(HttpNode(spec, environ=environ)) == ["d3"]
    finally:
        server.shutdown()
        server.server_close()
    (first_host, first), (second_host, second) = _Redirect.seen
    assert first_host.startswith("127.0.0.1") and first["x-api-key"] == "k-123"
    assert second_host.startswith("localhost") and "x-api-key" not in second
    assert second["accept-language"] == "en"


def test_a_redirect_into_a_private_network_fails_the_query_in_one_line():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Redirect)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    _Redirect.seen, _Redirect.target = [], "http://169.254.169.254/latest/meta-data/"
    try:
        spec = typed({"kind": "http", "url": f"http://127.0.0.1:{port}/start", "method": "POST",
                      "body": '{"q": {{query}}}', "hits": "hits.hits", "id": "_id", "retries": 0})
        node = HttpNode(spec, environ={ENV_ALLOWED_HOSTS: "127.0.0.1"})
        execution = Executor({node.name: node}, [node.name], 3).run(QueryBatch(["q"], [QUERY]))
    finally:
        server.shutdown()
        server.server_close()
    (failure,) = execution.failures["mine"].values()
    assert "169.254.169.254 is a link-local address" in failure.error and "\n" not in failure.error
    assert len(_Redirect.seen) == 1  # the metadata address was never asked


def test_milvus_typed_files_stay_in_the_root_and_servers_pass_the_policy(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    policy = OutboundPolicy(True, files_root=root)
    spec = typed({"kind": "milvus", "uri": "milvus.db", "collection": "c"})
    assert milvus.check_typed(spec, policy) == str(root / "milvus.db")
    with pytest.raises(OutboundRefused, match="uri: .* is outside the collections folder"):
        milvus.check_typed(typed({"kind": "milvus", "uri": str(tmp_path / "x.db"), "collection": "c"}), policy)
    with pytest.raises(OutboundRefused, match="uri: 10.0.0.5 is a private address"):
        milvus.check_typed(typed({"kind": "milvus", "uri": "http://10.0.0.5:19530", "collection": "c"}), policy)
    open_to = OutboundPolicy(True, allowed_names=frozenset({"localhost"}))
    pinned = milvus.check_typed(typed({"kind": "milvus", "uri": "http://localhost:19530", "collection": "c"}), open_to)
    assert pinned in ("http://127.0.0.1:19530", "http://[::1]:19530")  # opened at the checked address


def test_lancedb_typed_is_a_folder_inside_the_root(tmp_path):
    policy = OutboundPolicy(True, files_root=tmp_path)
    assert lancedb.check_typed(typed({"kind": "lancedb", "uri": "lance", "table": "t"}), policy) == str(tmp_path / "lance")
    with pytest.raises(OutboundRefused, match="server's own credentials"):
        lancedb.check_typed(typed({"kind": "lancedb", "uri": "s3://bucket/db", "table": "t"}), policy)


@pytest.mark.parametrize(("dsn", "expected"), [
    ("postgresql://me@10.1.2.3/docs", "dsn host: 10.1.2.3 is a private address"),
    ("dbname=docs user=me", "dsn must name one host"),
    ("host=a.example,b.example dbname=docs", "dsn must name one host"),
    ("host=/var/run/postgresql dbname=docs", "is outside the collections folder"),
    ("postgresql://me@db.example/docs?service=prod", "dsn sets service, which a DSN typed in the app may not"),
    ("postgresql://me@db.example/docs?sslkey=/root/.postgresql/postgresql.key", "dsn sets sslkey"),
])
def test_a_typed_dsn_names_one_host_the_policy_accepts_and_no_server_files(dsn, expected, tmp_path):
    spec = typed({"kind": "postgres", "dsn": dsn, "table": "docs"})
    with pytest.raises(OutboundRefused if "private" in expected or "outside" in expected else Exception,
                       match=expected):
        pg_kind.check_typed(spec, OutboundPolicy(True, files_root=tmp_path))


def test_a_typed_dsn_reads_neither_pgpassword_nor_pgpass(postgres, tmp_path, monkeypatch):
    # libpq fills in a password the DSN leaves out from $PGPASSWORD, else from .pgpass: the
    # operator's own DSN gets them, a DSN typed in the app gets neither (trust authentication here,
    # so the password libpq chose is what the connection reports).
    file_spec = parse_spec("pg", {"kind": "postgres", "dsn": postgres.dsn, "table": "docs"}, "s.toml")
    typed_spec = typed({"kind": "postgres", "dsn": postgres.dsn, "table": "docs"})
    policy = OutboundPolicy(True, files_root=postgres.folder.parent)
    passfile = tmp_path / "pgpass"
    passfile.write_text("*:*:*:*:from-the-pgpass-file\n", encoding="utf-8")
    passfile.chmod(0o600)

    def password_used(spec, policy=None):
        import psycopg

        with psycopg.connect(pg_kind.conninfo(spec, policy=policy)) as conn:
            return conn.info.password

    monkeypatch.setenv("PGPASSWORD", "from-pgpassword")
    assert password_used(file_spec) == "from-pgpassword"
    assert password_used(typed_spec, policy) == ""
    monkeypatch.delenv("PGPASSWORD")
    monkeypatch.setenv("PGPASSFILE", str(passfile))
    assert password_used(file_spec) == "from-the-pgpass-file"
    assert password_used(typed_spec, policy) == ""


def test_a_typed_url_with_a_variable_is_checked_with_its_variable(server):
    table = {"kind": "http", "url": server.url.replace("127.0.0.1", "{{h}}") + "/tiny/_search?size={{k}}",
             "method": "POST", "body": '{"query": {"match": {"text": {{query}}}}}', "hits": "hits.hits",
             "id": "_id", "variables": {"h": "127.0.0.1"}, "retries": 0}
    with pytest.raises(OutboundRefused, match=r"url: 127.0.0.1 is a loopback address"):
        HttpNode(typed(table), environ={})
    assert first_ids(HttpNode(typed(table, "app"), environ={}))[0] == "d3"


@pytest.mark.parametrize("url", ["http://{{query}}.example.com/s", "http://example.com:{{k}}/s?q={{query}}"])
def test_a_typed_url_may_not_put_the_query_in_its_host(url):
    table = {"kind": "http", "url": url + ("" if "q=" in url else "?q={{query}}"), "hits": "h", "id": "i"}
    with pytest.raises(OutboundRefused, match=r"puts \{\{query\}\} or \{\{k\}\} in the host"):
        HttpNode(typed(table, "app"), environ={})
