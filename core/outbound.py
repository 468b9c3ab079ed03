"""Where a connection typed in the browser may go: the guard against using the app as a way into
the server's network.

A URL, host, DSN or path a person types in the app makes the server connect somewhere (a search
backend, the LLM endpoint, a suite's webhook or SMTP server). The operator's own declarations (the
strategies file, the command line, the environment) are theirs and pass unchecked; what is typed in
the browser goes through an ``OutboundPolicy``:

- **Addresses.** On an exposed app (bound beyond loopback, server/deploy.py), a host that resolves
  to a loopback, link-local (the cloud metadata address 169.254.169.254 among them), private,
  shared, reserved or multicast address is refused, unless the operator allows it in
  ``$SEARCHGRADE_BACKEND_ALLOWED_HOSTS`` (host names or CIDRs, comma-separated). Every address a
  name resolves to is checked, and the connection is made to a checked address
  (``create_connection``), so a name cannot resolve one way when checked and another when used; a
  ``session()`` does that for every request, each redirect included. On a loopback-only app the
  person at the keyboard is the operator: any address is theirs to use.
- **Secrets.** A typed declaration may name an ``env:NAME`` secret only for a host the operator
  bound NAME to (``$SEARCHGRADE_BACKEND_SECRETS``, ``NAME=host`` pairs, comma-separated), on any
  app: so nobody at the browser can send the server's token to an address of their choosing. No
  other server-side credential (proxies and ``.netrc`` from the environment, libpq's
  ``PGPASSWORD`` / ``.pgpass``, cloud credentials) is attached to a typed target.
- **Files.** A local path (a socket folder, a LanceDB folder, a Milvus Lite file) must lie inside
  the collections root (``$SEARCHGRADE_COLLECTIONS_ROOT``, links out of it refused); without a
  root, an exposed app takes no path and a loopback-only one takes any.

Every refusal is one ``OutboundRefused`` line naming what was typed, why, and the variable the
operator sets to allow it.

How other code uses it (the Evaluate page's LLM endpoint, declared strategies, suites' alerts)::

    policy = OutboundPolicy.for_browser(exposed=True)       # or server.outbound.browser_policy()
    policy.check_url("http://169.254.169.254/", "webhook url")   # raises OutboundRefused
    policy.check_secret("HOOK_TOKEN", "hooks.example.com", "headers.Authorization")
    session = policy.session()                # requests.Session: every connection checked
    transport = policy.httpx_transport(httpx)  # the same for an httpx client (the openai package's)
    sock = policy.create_connection(("smtp.example.com", 587), timeout=10)  # e.g. SMTP._get_socket
"""

from __future__ import annotations

import ipaddress
import os
import socket
import urllib.parse
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from searchgrade.core.records import SearchGradeError

#: Host names and CIDRs an exposed app's browser users may reach besides public addresses.
ENV_ALLOWED_HOSTS = "SEARCHGRADE_BACKEND_ALLOWED_HOSTS"
#: ``NAME=host`` pairs: the host each ``env:NAME`` secret may be sent to from a typed declaration.
ENV_SECRETS = "SEARCHGRADE_BACKEND_SECRETS"
#: The folder typed paths must lie in (engine/paths.py reads the same variable).
ENV_COLLECTIONS_ROOT = "SEARCHGRADE_COLLECTIONS_ROOT"

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network


class OutboundRefused(SearchGradeError):  # noqa: N818 - the guard's refusal, named as the app words it
    """A typed target the policy refuses (one line: what, why, and what the operator can set)."""


def _split(value: str) -> list[str]:
    return [part.strip() for part in value.replace("\n", ",").replace(" ", ",").split(",") if part.strip()]


def _host_key(host: str) -> str:
    return host.strip().strip("[]").rstrip(".").lower()


def parse_allowed_hosts(value: str) -> tuple[frozenset[str], tuple[Network, ...]]:
    """``$SEARCHGRADE_BACKEND_ALLOWED_HOSTS``: host names, addresses and CIDRs.

    Raises:
        SearchGradeError: an entry that is neither a host name nor an address or CIDR.
    """
    names: set[str] = set()
    networks: list[Network] = []
    for entry in _split(value):
        try:
            networks.append(ipaddress.ip_network(entry.strip("[]"), strict=False))
            continue
        except ValueError:
            pass
        if "/" in entry or ":" in entry or not entry.replace("-", "").replace(".", "").replace("_", "").isalnum():
            raise SearchGradeError(f"{ENV_ALLOWED_HOSTS} entry {entry!r} is neither a host name nor an "
                                   "address or CIDR: write e.g. es.internal,10.0.0.0/8")
        names.add(_host_key(entry))
    return frozenset(names), tuple(networks)


def parse_secret_hosts(value: str) -> dict[str, frozenset[str]]:
    """``$SEARCHGRADE_BACKEND_SECRETS``: ``NAME=host`` pairs (a name may be bound to several hosts).

    Raises:
        SearchGradeError: an entry without ``=``, or with an empty side.
    """
    bound: dict[str, set[str]] = {}
    for entry in _split(value):
        name, sep, host = entry.partition("=")
        if not sep or not name.strip() or not host.strip():
            raise SearchGradeError(f"{ENV_SECRETS} entry {entry!r} is not NAME=host: write e.g. "
                                   "ES_AUTH=es.internal,PG_PASSWORD=db.internal")
        bound.setdefault(name.strip(), set()).add(_host_key(host) if not host.strip().startswith("/")
                                                  else host.strip().rstrip("/"))
    return {name: frozenset(hosts) for name, hosts in bound.items()}


def address_kind(address: Address) -> str | None:
    """What makes an address one a typed target may not reach: "loopback", "link-local", ...;
    None for a public (globally routable, unicast) address."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    for kind, flag in (("loopback", address.is_loopback), ("link-local", address.is_link_local),
                       ("unspecified", address.is_unspecified), ("multicast", address.is_multicast),
                       ("private", address.is_private), ("reserved", address.is_reserved)):
        if flag:
            return kind
    if not address.is_global:
        return "shared or reserved"
    return None


@dataclass(frozen=True)
class OutboundPolicy:
    """What a target typed in the browser may be.

    Attributes:
        guard_addresses: refuse non-public addresses (an exposed app); False on a loopback-only one.
        allowed_names: host names the operator allows whatever they resolve to.
        allowed_networks: addresses and CIDRs the operator allows.
        secret_hosts: ``env:`` name -> the hosts (or socket folders) it may be sent to.
        files_root: the folder typed paths must lie in, or None.
        secrets_set: the names of ``secret_hosts`` set (non-empty) in the server's environment.
    """

    guard_addresses: bool
    allowed_names: frozenset[str] = frozenset()
    allowed_networks: tuple[Network, ...] = ()
    secret_hosts: Mapping[str, frozenset[str]] = field(default_factory=dict)
    files_root: Path | None = None
    #: The bound ``env:`` names that are set in the server's environment.
    secrets_set: frozenset[str] = frozenset()

    @classmethod
    def for_browser(cls, exposed: bool, environ: Mapping[str, str] | None = None) -> OutboundPolicy:
        """The policy for what is typed in an app: ``exposed`` when it is bound beyond loopback.

        Raises:
            SearchGradeError: the operator's variables cannot be read (one line naming the entry).
        """
        env = os.environ if environ is None else environ
        names, networks = parse_allowed_hosts(env.get(ENV_ALLOWED_HOSTS, ""))
        root = env.get(ENV_COLLECTIONS_ROOT, "").strip()
        secret_hosts = parse_secret_hosts(env.get(ENV_SECRETS, ""))
        return cls(exposed, names, networks, secret_hosts, Path(root).expanduser() if root else None,
                   frozenset(name for name in secret_hosts if env.get(name)))

    # -- addresses --------------------------------------------------------------------------------

    def check_address(self, host: str, address: str, what: str) -> None:
        """Raises OutboundRefused when ``host`` (as typed), at ``address``, may not be reached."""
        if not self.guard_addresses or _host_key(host) in self.allowed_names:
            return
        ip = ipaddress.ip_address(address.split("%")[0])
        if any(ip in network for network in self.allowed_networks) or (
                isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None
                and any(ip.ipv4_mapped in network for network in self.allowed_networks)):
            return
        kind = address_kind(ip)
        if kind is None:
            return
        if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped  # named as the IPv4 address it is
        at = "" if _host_key(host) == str(ip) else f" ({host} resolves to {ip})"
        metadata = " (the cloud metadata service among them)" if kind == "link-local" else ""
        article = "an" if kind[0] in "aeiou" else "a"
        raise OutboundRefused(
            f"{what}: {ip} is {article} {kind} address{metadata}{at}: a target typed in this app may not "
            f"reach loopback, link-local or private networks; the operator allows a host with "
            f"{ENV_ALLOWED_HOSTS}={host} (host names or CIDRs)")

    def resolve(self, host: str, port: int | None, what: str) -> list[tuple[Any, ...]]:
        """``getaddrinfo`` for a TCP connection to ``host``, every address checked.

        Raises:
            OutboundRefused: an address the policy refuses (one is enough: the name is refused).
            socket.gaierror: the name does not resolve.
        """
        infos = socket.getaddrinfo(host.strip("[]"), port, 0, socket.SOCK_STREAM)
        for info in infos:
            self.check_address(host, info[4][0], what)
        return infos

    def check_host(self, host: str, port: int | None, what: str) -> list[str]:
        """The checked addresses of ``host`` (to connect to, not the name again).

        Raises:
            OutboundRefused: the host is refused, or does not resolve (one line either way).
        """
        if not host:
            raise OutboundRefused(f"{what}: no host: give the server's host name or address")
        try:
            infos = self.resolve(host, port, what)
        except (socket.gaierror, UnicodeError) as exc:
            raise OutboundRefused(f"{what}: host {host!r} does not resolve ({exc}): check the name") from None
        return list(dict.fromkeys(info[4][0] for info in infos))

    def check_url(self, url: str, what: str, schemes: Iterable[str] = ("http", "https")) -> list[str]:
        """An http(s) URL whose host the policy accepts; its checked addresses.

        Raises:
            OutboundRefused: another scheme, credentials in the URL, or a refused host.
        """
        parts = urllib.parse.urlsplit(url.strip())
        schemes = tuple(schemes)
        if parts.scheme.lower() not in schemes or not parts.hostname:
            raise OutboundRefused(f"{what}: {url!r} is not a {'/'.join(schemes)} URL with a host")
        if parts.username or parts.password:
            raise OutboundRefused(f"{what}: {url!r} holds credentials: name a secret with env:NAME "
                                  "in a header instead")
        try:
            port = parts.port
        except ValueError:
            raise OutboundRefused(f"{what}: {url!r} has no valid port") from None
        return self.check_host(parts.hostname, port or (443 if parts.scheme.lower() == "https" else 80), what)

    def create_connection(self, address: tuple[str, int], timeout: float | None = None,
                          source_address: tuple[str, int] | None = None,
                          socket_options: Iterable[tuple[Any, ...]] | None = None,
                          what: str = "connection") -> socket.socket:
        """``socket.create_connection`` to a checked address of ``address``'s host.

        Raises:
            OutboundRefused: the host is refused; OSError: no checked address accepts the connection.
        """
        host, port = address
        error: OSError | None = None
        for family, kind, proto, _, sockaddr in self.resolve(host, port, what):
            sock = socket.socket(family, kind, proto)
            try:
                for option in socket_options or ():
                    sock.setsockopt(*option)
                if isinstance(timeout, (int, float)):  # not urllib3's "default" sentinel
                    sock.settimeout(timeout)
                if source_address:
                    sock.bind(source_address)
                sock.connect(sockaddr)
                return sock
            except OSError as exc:
                error = exc
                sock.close()
        raise error or OSError(f"no address for {host}")

    def session(self) -> Any:
        """A ``requests.Session`` whose every connection (each redirect's too) goes to a checked
        address, reading nothing from the environment (no proxies, no ``.netrc`` credentials)."""
        import requests

        session = requests.Session()
        session.trust_env = False
        adapter = _guarded_adapter(self)
        session.mount("http://", adapter)
        session.mount("https://", adapter)
        return session

    def httpx_transport(self, httpx: Any) -> Any:
        """An ``httpx`` transport whose every connection goes to a checked address, as ``session()``
        does for requests; ``httpx`` is the module the client is made with (the openai package's:
        httpx, or httpx2). Build the client with ``trust_env=False`` (no proxy, no ``.netrc``).

        Raises:
            SearchGradeError: this httpx cannot be guarded (its connections would go unchecked).
        """
        return _guarded_httpx_transport(self, httpx)

    # -- secrets and files ------------------------------------------------------------------------

    def check_secret(self, env_name: str, host: str, what: str) -> None:
        """``env:env_name`` may go to ``host`` only when the operator bound it there and set it.

        Unbound, bound elsewhere and bound but unset read the same: a person at the browser learns
        neither which variables the server has nor where its secrets go.

        Raises:
            OutboundRefused: it is not available for ``host``.
        """
        key = host.rstrip("/") if host.startswith("/") else _host_key(host)
        if key in self.secret_hosts.get(env_name, frozenset()) and env_name in self.secrets_set:
            return
        raise OutboundRefused(
            f"{what}: env:{env_name} is not available to declarations typed in the app for "
            f"{host or 'this target'}: the operator sets {env_name} on the server and binds it to its "
            f"host with {ENV_SECRETS}={env_name}={host or 'HOST'}")

    def check_path(self, text: str, what: str) -> Path:
        """A typed local path, inside the collections root (relative paths are taken inside it).

        Raises:
            OutboundRefused: paths are off (an exposed app without a root), or it leaves the root.
        """
        typed = Path(text).expanduser()
        if self.files_root is None:
            if self.guard_addresses:
                raise OutboundRefused(
                    f"{what}: {text}: this app is reachable from other machines and reads no local "
                    f"path: the operator restarts it with --collections-root DIR to allow paths inside DIR")
            return typed
        root = self.files_root.resolve()
        location = typed if typed.is_absolute() else root / typed
        if not location.resolve().is_relative_to(root):
            raise OutboundRefused(f"{what}: {text} is outside the collections folder: type a path "
                                  "inside it (relative to it), without links out of it")
        return location


def _guarded_adapter(policy: OutboundPolicy) -> Any:
    """A requests adapter whose connection pools connect through ``policy.create_connection``."""
    import socket as socket_module

    from requests.adapters import HTTPAdapter
    from urllib3.connection import HTTPConnection, HTTPSConnection
    from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
    from urllib3.exceptions import ConnectTimeoutError, NameResolutionError, NewConnectionError

    def new_conn(conn: Any) -> socket_module.socket:
        # urllib3's own _new_conn, with the policy choosing (and checking) the address.
        try:
            return policy.create_connection((conn._dns_host, conn.port), conn.timeout, conn.source_address,
                                            conn.socket_options, what=f"{conn.host}")
        except socket_module.gaierror as exc:
            raise NameResolutionError(conn.host, conn, exc) from exc
        except TimeoutError as exc:
            raise ConnectTimeoutError(conn, f"Connection to {conn.host} timed out") from exc
        except OSError as exc:
            raise NewConnectionError(conn, f"Failed to establish a new connection: {exc}") from exc

    class GuardedHTTPConnection(HTTPConnection):
        def _new_conn(self) -> socket_module.socket:
            return new_conn(self)

    class GuardedHTTPSConnection(HTTPSConnection):
        def _new_conn(self) -> socket_module.socket:
            return new_conn(self)

    class GuardedHTTPPool(HTTPConnectionPool):
        ConnectionCls = GuardedHTTPConnection

    class GuardedHTTPSPool(HTTPSConnectionPool):
        ConnectionCls = GuardedHTTPSConnection

    class GuardedAdapter(HTTPAdapter):
        def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
            super().init_poolmanager(*args, **kwargs)
            self.poolmanager.pool_classes_by_scheme = {"http": GuardedHTTPPool, "https": GuardedHTTPSPool}

        def proxy_manager_for(self, proxy: str, **kwargs: Any) -> Any:  # noqa: ARG002 - requests' adapter API
            raise OutboundRefused("a proxy is never used for a target typed in the app")

    return GuardedAdapter()


def _guarded_httpx_transport(policy: OutboundPolicy, httpx: Any) -> Any:
    """``httpx.HTTPTransport`` whose connection pool opens its sockets to addresses ``policy`` checked."""
    import importlib

    transport = httpx.HTTPTransport(trust_env=False)
    pool = getattr(transport, "_pool", None)  # httpcore's ConnectionPool: its backend opens every socket
    if pool is None or not hasattr(pool, "_network_backend"):
        raise SearchGradeError(f"{httpx.__name__} {getattr(httpx, '__version__', '')} has no connection pool "
                               "this app can guard: a typed endpoint cannot be reached safely; install the "
                               "httpx version the openai package was tested with")
    httpcore = importlib.import_module(type(pool).__module__.split(".")[0])

    class GuardedBackend(httpcore.SyncBackend):  # type: ignore[misc, name-defined]
        def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                        local_address: str | None = None, socket_options: Any = None) -> Any:
            error: Exception | None = None
            for address in policy.check_host(host, port, host):  # the name resolved once, checked
                try:
                    return super().connect_tcp(address, port, timeout, local_address, socket_options)
                except httpcore.ConnectError as exc:
                    error = exc
            raise error or httpcore.ConnectError(f"no address for {host}")

    pool._network_backend = GuardedBackend()
    return transport


def policy_for(declared_in: str, environ: Mapping[str, str] | None = None) -> OutboundPolicy | None:
    """The policy of a declaration by where it was declared: None for the operator's own (a file,
    an entry point), the browser's policy for one typed in the app (``"app"``, or ``"exposed app"``
    when typed in an app bound beyond loopback)."""
    if not declared_in:
        return None
    return OutboundPolicy.for_browser(declared_in == EXPOSED_APP, environ)


#: ``StrategySpec.declared_in`` of a strategy typed in an app on loopback, and in an exposed one.
APP = "app"
EXPOSED_APP = "exposed app"
