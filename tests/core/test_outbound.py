"""The guard on what is typed in the browser: addresses after DNS resolution and on every redirect,
secrets only for the host they are bound to, paths inside the collections root."""

from __future__ import annotations

import re
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from searchgrade.core.outbound import (
    ENV_ALLOWED_HOSTS,
    ENV_SECRETS,
    OutboundPolicy,
    OutboundRefused,
    address_kind,
    parse_allowed_hosts,
    parse_secret_hosts,
    policy_for,
)
from searchgrade.core.records import SearchGradeError

EXPOSED = OutboundPolicy(guard_addresses=True)


@pytest.mark.parametrize(("address", "kind"), [
    ("169.254.169.254", "link-local"), ("127.0.0.1", "loopback"), ("10.1.2.3", "private"),
    ("192.168.0.7", "private"), ("172.16.5.4", "private"), ("::1", "loopback"),
    ("::ffff:127.0.0.1", "loopback"), ("fd00::1", "private"), ("fe80::1", "link-local"),
    ("0.0.0.0", "unspecified"), ("100.100.100.200", "shared or reserved"), ("224.0.0.1", "multicast"),
    ("8.8.8.8", None), ("2001:4860:4860::8888", None),
])
def test_every_non_public_address_has_a_kind_and_public_ones_none(address, kind):
    import ipaddress

    assert address_kind(ipaddress.ip_address(address)) == kind


def test_the_metadata_address_is_refused_on_an_exposed_app_in_one_line_naming_the_fix():
    with pytest.raises(OutboundRefused) as info:
        EXPOSED.check_url("http://169.254.169.254/latest/meta-data/", "url")
    message = str(info.value)
    assert "\n" not in message and message.startswith("url: 169.254.169.254 is a link-local address")
    assert "cloud metadata" in message and f"{ENV_ALLOWED_HOSTS}=169.254.169.254" in message


def test_a_name_is_checked_by_what_it_resolves_to():
    with pytest.raises(OutboundRefused, match="127.0.0.1 is a loopback address .localhost resolves to 127.0.0.1"):
        EXPOSED.check_url("http://localhost:9200/docs/_search", "url")


@pytest.mark.parametrize(("host", "found"), [
    ("127.1", "127.0.0.1"), ("127.0.1", "127.0.0.1"), ("2130706433", "127.0.0.1"), ("0x7f000001", "127.0.0.1"),
    ("0x7f.0.0.1", "127.0.0.1"), ("0177.0.0.1", "127.0.0.1"), ("017700000001", "127.0.0.1"),
    ("LOCALHOST", "127.0.0.1"), ("127.127.127.127", "127.127.127.127"), ("[0:0:0:0:0:0:0:1]", "::1"),
    ("[::ffff:127.0.0.1]", "127.0.0.1"), ("[::ffff:7f00:1]", "127.0.0.1"), ("[64:ff9b::7f00:1]", "64:ff9b::7f00:1"),
    ("[::127.0.0.1]", "::7f00:1"), ("0", "0.0.0.0"), ("2852039166", "169.254.169.254"),
    ("[::ffff:169.254.169.254]", "169.254.169.254"), ("[64:ff9b::a9fe:a9fe]", "64:ff9b::a9fe:a9fe"),
])
def test_loopback_and_the_metadata_address_are_refused_however_spelled(host, found):
    """Decimal, hex and octal forms, IPv4-mapped and NAT64 IPv6: each is what it resolves to."""
    with pytest.raises(OutboundRefused, match=rf"^url: {re.escape(found)} is an? [a-z -]+ address"):
        EXPOSED.check_url(f"http://{host}:8080/", "url")


def test_a_loopback_only_app_lets_its_operator_reach_any_address():
    policy = OutboundPolicy(guard_addresses=False)
    assert policy.check_url("http://127.0.0.1:9200/", "url") == ["127.0.0.1"]
    assert policy.check_host("169.254.169.254", 80, "host") == ["169.254.169.254"]


def test_the_operator_allows_hosts_by_name_or_cidr():
    policy = OutboundPolicy.for_browser(True, {ENV_ALLOWED_HOSTS: "localhost, 10.0.0.0/8 fd00::/8"})
    assert "127.0.0.1" in policy.check_url("http://localhost:1/", "url")
    policy.check_host("10.9.8.7", 80, "host")
    policy.check_host("fd00::5", 80, "host")
    with pytest.raises(OutboundRefused, match="192.168.1.1 is a private address"):
        policy.check_host("192.168.1.1", 80, "host")
    with pytest.raises(SearchGradeError, match=f"^{ENV_ALLOWED_HOSTS} entry 'http://x' is neither"):
        parse_allowed_hosts("http://x")


def test_every_address_of_a_name_must_pass_and_the_connection_goes_to_a_checked_one(monkeypatch):
    # A name that resolves to a public address and to the metadata address is refused, whichever
    # would be tried first: the check and the connection read the same resolution.
    real = socket.getaddrinfo

    def fake(host, port, *args, **kwargs):
        if host == "evil.example":
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("93.184.216.34", port)),
                    (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("169.254.169.254", port))]
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", fake)
    with pytest.raises(OutboundRefused, match=r"169.254.169.254 is a link-local address \(the cloud metadata "
                                              r"service among them\) \(evil.example resolves to"):
        EXPOSED.create_connection(("evil.example", 80), timeout=1)


def test_a_name_that_does_not_resolve_is_one_line():
    with pytest.raises(OutboundRefused, match="host 'no-such-host.invalid' does not resolve"):
        EXPOSED.check_url("https://no-such-host.invalid/", "url")


@pytest.mark.parametrize("url", ["ftp://example.com/", "file:///etc/passwd", "http://user:pw@example.com/"])
def test_only_http_urls_without_credentials(url):
    with pytest.raises(OutboundRefused, match="^url: "):
        EXPOSED.check_url(url, "url")


def test_a_secret_goes_only_to_the_host_the_operator_bound_it_to():
    environ = {ENV_SECRETS: "ES_AUTH=es.internal,PG_PW=/srv/pg/", "ES_AUTH": "Basic abc", "PG_PW": "pw",
               "OPENAI_API_KEY": "sk-set"}
    policy = OutboundPolicy.for_browser(False, environ)
    policy.check_secret("ES_AUTH", "ES.internal", "headers.Authorization")
    policy.check_secret("PG_PW", "/srv/pg", "dsn password")
    with pytest.raises(OutboundRefused) as info:
        policy.check_secret("ES_AUTH", "collector.example.com", "headers.Authorization")
    assert "es.internal" not in str(info.value)  # where the secret may go is the operator's business
    assert f"{ENV_SECRETS}=ES_AUTH=collector.example.com" in str(info.value)
    with pytest.raises(OutboundRefused, match="env:OPENAI_API_KEY is not available to declarations typed in "
                                              "the app for es.internal"):
        policy.check_secret("OPENAI_API_KEY", "es.internal", "headers.X-Key")
    with pytest.raises(SearchGradeError, match=f"^{ENV_SECRETS} entry 'ES_AUTH' is not NAME=host"):
        parse_secret_hosts("ES_AUTH")


def test_a_refused_secret_reads_the_same_whether_the_server_has_the_variable_or_not():
    def refusal(environ: dict[str, str]) -> str:
        with pytest.raises(OutboundRefused) as info:
            OutboundPolicy.for_browser(True, environ).check_secret("HOOK", "hooks.example.com", "headers.Token")
        return str(info.value)

    lines = {refusal({}), refusal({"HOOK": "secret-value"}), refusal({ENV_SECRETS: "HOOK=hooks.example.com"}),
             refusal({ENV_SECRETS: "HOOK=elsewhere.example.com", "HOOK": "secret-value"})}
    assert lines == {"headers.Token: env:HOOK is not available to declarations typed in the app for "
                     "hooks.example.com: the operator sets HOOK on the server and binds it to its host with "
                     f"{ENV_SECRETS}=HOOK=hooks.example.com"}


def test_typed_paths_stay_inside_the_collections_root(tmp_path):
    root = tmp_path / "root"
    (root / "lance").mkdir(parents=True)
    (root / "out").symlink_to(tmp_path)
    policy = OutboundPolicy(True, files_root=root)
    assert policy.check_path("lance", "uri") == root / "lance"
    assert policy.check_path(str(root / "lance"), "uri") == root / "lance"
    for outside in (str(tmp_path), "../x", "out/elsewhere"):
        with pytest.raises(OutboundRefused, match="is outside the collections folder"):
            policy.check_path(outside, "uri")
    with pytest.raises(OutboundRefused, match="reads no local path.*--collections-root"):
        EXPOSED.check_path(str(root), "uri")
    assert OutboundPolicy(False).check_path(str(tmp_path), "uri") == tmp_path


def test_the_operators_declarations_have_no_policy_and_typed_ones_the_browsers():
    assert policy_for("") is None
    assert policy_for("app", {}).guard_addresses is False
    assert policy_for("exposed app", {}).guard_addresses is True


class _Redirecting(BaseHTTPRequestHandler):
    location = ""
    seen: list[dict[str, str]] = []

    def log_message(self, *args):
        pass

    def do_GET(self):
        type(self).seen.append(dict(self.headers))
        if self.path == "/start":
            self.send_response(302)
            self.send_header("Location", type(self).location)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        body = b'{"ok": true}'
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def redirecting():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Redirecting)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _Redirecting.seen = []
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def test_every_redirect_is_checked_again(redirecting):
    port = redirecting
    policy = OutboundPolicy.for_browser(True, {ENV_ALLOWED_HOSTS: "127.0.0.1/32"})
    session = policy.session()
    assert session.get(f"http://127.0.0.1:{port}/end", timeout=5).json() == {"ok": True}
    _Redirecting.location = f"http://127.0.0.2:{port}/end"  # another loopback address, not allowed
    with pytest.raises(OutboundRefused, match="127.0.0.2 is a loopback address"):
        session.get(f"http://127.0.0.1:{port}/start", timeout=5)
    assert session.trust_env is False  # no proxy, no .netrc credentials from the environment
