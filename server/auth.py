"""Who may use the app: the password login, its rate limit and session length, and OIDC detection.

Two ways to log in, both configured by the operator, never in the browser:

- a password in $SEARCHGRADE_APP_PASSWORD (at least 12 characters), compared in constant time;
  failed attempts are limited per client address and in total (:class:`LoginLimiter`); a login
  lasts $SEARCHGRADE_APP_SESSION_MINUTES (default 480), ends after $SEARCHGRADE_APP_IDLE_MINUTES
  (default 30) without activity, and ends with the browser session (server/access/: the logins
  of this process, bound to the browser they were made in);
- Streamlit's OpenID Connect login (``st.login``), configured by an ``[auth]`` table in a
  ``.streamlit/secrets.toml`` (:func:`oidc_status`).

An app that is exposed (server/deploy.py) needs one of them, unless the operator says
``--no-auth`` ($SEARCHGRADE_APP_NO_AUTH=1). Pure: the login page is views/_login.py.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import threading
import time
import tomllib
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from searchgrade.core.records import SearchGradeError

ENV_PASSWORD = "SEARCHGRADE_APP_PASSWORD"
ENV_SESSION_MINUTES = "SEARCHGRADE_APP_SESSION_MINUTES"
ENV_IDLE_MINUTES = "SEARCHGRADE_APP_IDLE_MINUTES"
#: Set by `searchgrade app --no-auth`: the operator chose to expose the app without a login.
ENV_NO_AUTH = "SEARCHGRADE_APP_NO_AUTH"

MIN_PASSWORD_CHARS = 12
DEFAULT_SESSION_MINUTES = 480.0
DEFAULT_IDLE_MINUTES = 30.0
#: The longest session or idle time the variables take (a week).
MAX_MINUTES = 7 * 24 * 60.0

#: Keys an OIDC provider needs besides the shared ``redirect_uri`` and ``cookie_secret``.
_PROVIDER_KEYS = ("client_id", "client_secret", "server_metadata_url")


def _env(environ: Mapping[str, str] | None) -> Mapping[str, str]:
    return os.environ if environ is None else environ


def password(environ: Mapping[str, str] | None = None) -> str | None:
    return _env(environ).get(ENV_PASSWORD) or None


def no_auth(environ: Mapping[str, str] | None = None) -> bool:
    return _env(environ).get(ENV_NO_AUTH, "").strip().lower() in ("1", "true", "yes")


def check_password_strength(value: str) -> None:
    """A password too short to stand a rate-limited guesser is refused, with the fix."""
    if len(value) < MIN_PASSWORD_CHARS:
        raise SearchGradeError(
            f"{ENV_PASSWORD} has {len(value)} characters; use at least {MIN_PASSWORD_CHARS} "
            "(e.g. `python -c 'import secrets; print(secrets.token_urlsafe(18))'`)")


def password_matches(given: str, expected: str) -> bool:
    """Constant time in the content and the length of both: digests of equal length are compared."""
    return hmac.compare_digest(hashlib.sha256(given.encode()).digest(),
                               hashlib.sha256(expected.encode()).digest())


def _minutes(name: str, default: float, environ: Mapping[str, str] | None) -> float:
    raw = _env(environ).get(name, "").strip()
    if not raw:
        return default * 60
    try:
        minutes = float(raw)
    except ValueError:
        minutes = 0.0
    if not 0 < minutes <= MAX_MINUTES:
        raise SearchGradeError(f"{name}={raw!r} is not a number of minutes from 0 to {MAX_MINUTES:g} (a "
                               f"week); unset it for the default of {default:g}")
    return minutes * 60


def session_seconds(environ: Mapping[str, str] | None = None) -> float:
    """How long a login lasts at most, however active."""
    return _minutes(ENV_SESSION_MINUTES, DEFAULT_SESSION_MINUTES, environ)


def idle_seconds(environ: Mapping[str, str] | None = None) -> float:
    """How long a login lasts without the person doing anything (a page that refreshes itself,
    a run's progress, is not them)."""
    return _minutes(ENV_IDLE_MINUTES, DEFAULT_IDLE_MINUTES, environ)


# -- OIDC (st.login) ------------------------------------------------------------------------------


def secrets_files(app_dir: Path, cwd: Path | None = None, home: Path | None = None) -> list[Path]:
    """Where Streamlit looks for secrets.toml by default: the user's, the working directory's and
    the app's ``.streamlit`` folders."""
    cwd = cwd or Path.cwd()
    home = home or Path.home()
    paths = [home / ".streamlit" / "secrets.toml", cwd / ".streamlit" / "secrets.toml",
             app_dir / ".streamlit" / "secrets.toml"]
    return list(dict.fromkeys(paths))


@dataclass(frozen=True)
class OIDCStatus:
    #: An [auth] table is present (the operator means to use st.login).
    present: bool
    #: What is missing or wrong, or "" when st.login can work.
    problem: str = ""

    @property
    def ready(self) -> bool:
        return self.present and not self.problem


def oidc_status(files: Iterable[str | Path], authlib_installed: Callable[[], bool] | None = None) -> OIDCStatus:
    """Whether the secrets files configure Streamlit's OIDC login, and if not quite, what is missing.

    Later files override earlier ones, as in Streamlit. The secrets themselves are never returned.
    """
    table: dict = {}
    for path in files:
        path = Path(path)
        if not path.is_file():
            continue
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            return OIDCStatus(True, f"{path} cannot be read as TOML ({exc})")
        if isinstance(data.get("auth"), dict):
            table.update(data["auth"])
    return oidc_table_status(table, authlib_installed)


def oidc_table_status(table: Mapping | None, authlib_installed: Callable[[], bool] | None = None) -> OIDCStatus:
    """Whether an ``[auth]`` secrets table (as Streamlit reads it) lets st.login work."""
    if not table:
        return OIDCStatus(False)
    missing = [k for k in ("redirect_uri", "cookie_secret") if not table.get(k)]
    providers = [table] + [v for v in table.values() if isinstance(v, Mapping)]
    if not any(all(p.get(k) for k in _PROVIDER_KEYS) for p in providers):
        missing.append(" / ".join(_PROVIDER_KEYS) + " (in [auth] or an [auth.PROVIDER] table)")
    if missing:
        return OIDCStatus(True, "the [auth] secrets lack " + ", ".join(missing))
    check = authlib_installed or _authlib_installed
    if not check():
        return OIDCStatus(True, "st.login needs Authlib: pip install 'Authlib>=1.3.2'")
    return OIDCStatus(True)


def _authlib_installed() -> bool:
    import importlib.util

    return importlib.util.find_spec("authlib") is not None


# -- what the app command and the page decide ------------------------------------------------------


def login_method(environ: Mapping[str, str] | None = None, oidc: OIDCStatus | None = None) -> str | None:
    """"password" when $SEARCHGRADE_APP_PASSWORD is set, else "oidc" when st.login is configured,
    else None (no login). The password wins: it is the one set for this process."""
    if password(environ):
        return "password"
    if oidc is not None and oidc.ready:
        return "oidc"
    return None


def exposed_without_login_message(host: str) -> str:
    return (f"the app would be reachable from other machines ({host}) with no login: set "
            f"{ENV_PASSWORD} (at least {MIN_PASSWORD_CHARS} characters), or configure st.login with an "
            "[auth] table in .streamlit/secrets.toml, or pass --no-auth to serve it to anyone who "
            "reaches the port")


# -- the rate limit --------------------------------------------------------------------------------


class LoginLimiter:
    """Failed logins allowed per client address and in total, over a sliding window.

    Per address: ``per_client`` failures in ``window_s``; then that address waits until the oldest
    of them leaves the window. In total: ``overall`` failures in ``window_s`` from all addresses
    together, so that many addresses (or a proxy's one) do not multiply the guesses; then every
    login waits. A success does not clear the failures: guesses are what is counted.
    """

    def __init__(self, per_client: int = 5, overall: int = 30, window_s: float = 300.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.per_client = per_client
        self.overall = overall
        self.window_s = window_s
        self._clock = clock
        self._lock = threading.Lock()
        self._failures: dict[str, deque[float]] = {}
        self._all: deque[float] = deque()

    def _prune(self, now: float) -> None:
        horizon = now - self.window_s
        while self._all and self._all[0] <= horizon:
            self._all.popleft()
        for client in list(self._failures):
            times = self._failures[client]
            while times and times[0] <= horizon:
                times.popleft()
            if not times:
                del self._failures[client]

    def wait_s(self, client: str) -> float:
        """Seconds before ``client`` may try again (0: now)."""
        with self._lock:
            now = self._clock()
            self._prune(now)
            waits = [0.0]
            times = self._failures.get(client)
            if times is not None and len(times) >= self.per_client:
                waits.append(times[-self.per_client] + self.window_s - now)
            if len(self._all) >= self.overall:
                waits.append(self._all[-self.overall] + self.window_s - now)
            return max(waits)

    def failed(self, client: str) -> None:
        with self._lock:
            now = self._clock()
            self._failures.setdefault(client, deque()).append(now)
            self._all.append(now)


#: The limiter of this app process (every browser session shares it).
LIMITER = LoginLimiter()
