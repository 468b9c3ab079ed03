"""Connecting to Postgres, and what keeps a connection to what its declaration allows: the DSN
read as libpq reads it, a password only from the environment, and a DSN typed in the app held to
core/outbound.py's policy with every source of the server's own credentials closed."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from searchgrade.core.outbound import OutboundPolicy
from searchgrade.core.records import SearchGradeError, first_line
from searchgrade.indexes.declared.declaration import StrategySpec, check_typed_secret, is_env, resolve_env

#: libpq keys a DSN typed in the app may use (others could point libpq at the server's files).
TYPED_DSN_KEYS = frozenset({"host", "port", "dbname", "user", "password", "sslmode", "connect_timeout",
                            "application_name", "options"})
#: A password file that never exists (inside the installed package): libpq reads no .pgpass.
NO_PASSFILE = str(Path(__file__).with_name("no-such-pgpass"))


def load_psycopg() -> Any:
    try:
        import psycopg
    except ImportError as exc:
        raise SearchGradeError("psycopg is not installed (pip install 'psycopg[binary]' psycopg-pool)") from exc
    return psycopg


def parse_dsn(dsn: str, where: str) -> dict[str, str]:
    """A DSN (URL or ``key=value`` form) as libpq reads it.

    Raises:
        SearchGradeError: libpq cannot read it, or its password is literal.
    """
    psycopg = load_psycopg()
    try:
        params = psycopg.conninfo.conninfo_to_dict(dsn)
    except psycopg.ProgrammingError as exc:
        raise SearchGradeError(f"{where}: dsn is not a connection string libpq reads ({first_line(exc)}): "
                               'write e.g. dsn = "postgresql://search@db.internal:5432/docs"') from None
    password = params.get("password")
    if password and not is_env(password):
        raise SearchGradeError(f"{where}: dsn holds a literal password: put it in the environment and "
                               'write it as env:NAME (e.g. "postgresql://search:env:PG_PASSWORD@db/docs"); '
                               "the declaration is stored with every run")
    return {k: str(v) for k, v in params.items()}


def check_typed(spec: StrategySpec, policy: OutboundPolicy) -> dict[str, str]:
    """A DSN typed in the app: the libpq keys it may use, one host the policy accepts (or a socket
    folder inside the collections root), and a password bound to that host. Returns the libpq
    parameters to connect with: the checked address pinned (``hostaddr``), and every source of the
    server's own credentials closed.

    Raises:
        SearchGradeError: one line naming the key and the fix.
    """
    where = spec.where
    params = parse_dsn(spec.options["dsn"], where)
    other = sorted(set(params) - TYPED_DSN_KEYS)
    if other:
        raise SearchGradeError(f"{where}: dsn sets {other[0]}, which a DSN typed in the app may not: use "
                               f"only {', '.join(sorted(TYPED_DSN_KEYS))}")
    host = params.get("host", "")
    if not host or "," in host:
        raise SearchGradeError(f"{where}: dsn must name one host (a server, or a socket folder inside the "
                               "collections root): add host, e.g. postgresql://search@db.internal/docs")
    if host.startswith("/"):
        params["host"] = str(policy.check_path(host, f"{where}: dsn host"))
    else:
        port = int(params.get("port") or 5432)
        params["hostaddr"] = policy.check_host(host, port, f"{where}: dsn host")[0]
    check_typed_secret(policy, where, "dsn password", params.get("password"), host)
    # libpq would otherwise fill in what the DSN leaves out from the server's environment and files.
    params.setdefault("password", "")
    params.update(passfile=NO_PASSFILE, sslcertmode="disable", gssencmode="disable",
                  require_auth="password,md5,scram-sha-256,none")
    return params


def conninfo(spec: StrategySpec, environ: Mapping[str, str] | None = None,
             policy: OutboundPolicy | None = None) -> str:
    """The connection string the strategy connects with (``env:`` password read now)."""
    psycopg = load_psycopg()
    where = spec.where
    params = check_typed(spec, policy) if policy is not None else parse_dsn(spec.options["dsn"], where)
    if is_env(params.get("password")):
        params["password"] = resolve_env(params["password"], where, "dsn password", environ)
    params.setdefault("connect_timeout", str(max(1, int(spec.options["timeout_s"]))))
    return psycopg.conninfo.make_conninfo(**params)


def connect(conninfo_: str, where: str, timeout_s: float) -> Any:
    psycopg = load_psycopg()
    try:
        return psycopg.connect(conninfo_, connect_timeout=max(1, int(timeout_s)), autocommit=True)
    except psycopg.Error as exc:
        raise SearchGradeError(f"{where}: cannot connect to Postgres ({first_line(exc)}): check dsn, and "
                               "that the server is running") from None


def hide_password(dsn: str) -> str:
    return re.sub(r"(password\s*=\s*)\S+", r"\1***", re.sub(r"(://[^:/@]+:)[^@]+@", r"\1***@", dsn))


def table_facts(conn: Any, parts: tuple[str, ...]) -> tuple[dict[str, str], dict[str, Any]] | None:
    """The table's columns (name -> type) and the JSON of its comment; None when it is not there."""
    name = ".".join(f'"{p}"' for p in (p.replace('"', '""') for p in parts))
    oid = conn.execute("SELECT to_regclass(%s)::oid", (name,)).fetchone()[0]
    if oid is None:
        return None
    columns = dict(conn.execute(
        "SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = %s "
        "AND attnum > 0 AND NOT attisdropped ORDER BY attnum", (oid,)).fetchall())
    comment = conn.execute("SELECT obj_description(%s, 'pg_class')", (oid,)).fetchone()[0]
    try:
        facts = json.loads(comment) if comment else {}
    except ValueError:
        facts = {}
    return columns, facts if isinstance(facts, dict) else {}
