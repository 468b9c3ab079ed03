"""The logins of this app process: which Streamlit session logged in, from which browser, and whether
the login still holds.

A login belongs to one Streamlit session (a browser tab's connection to the app) and to the browser
it was made in: the ``searchgrade_client`` cookie the access gate gives every browser
(server/access/gate.py). It ends when the person logs out, after ``idle_seconds`` without their
doing anything (server/auth.py), after ``session_seconds`` at most, and it is never honoured for
another browser: a session id replayed from elsewhere gets a new session, which shows the login.

The gate asks here before it lets a request or a websocket message through; the login page
(views/_login.py) records logins and logouts here. Pure and thread-safe: the gate runs on the
server's event loop, the pages in their script threads.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from searchgrade.server import auth

#: What a session is to the gate.
IN, OUT, EXPIRED = "in", "out", "expired"


@dataclass
class Login:
    #: The browser (its gate cookie) the login was made in; None where there is no gate (a test).
    client: str | None
    since: float
    last_active: float


class Sessions:
    """The logins of this process, by Streamlit session id.

    Args:
        clock: seconds, monotonic (tests pass their own).
        session_s, idle_s: how long a login lasts at most, and without activity; None reads them
            from the environment on every check (server/auth.py), so the app follows its settings.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic, session_s: float | None = None,
                 idle_s: float | None = None) -> None:
        self._clock = clock
        self._session_s = session_s
        self._idle_s = idle_s
        self._lock = threading.Lock()
        self._logins: dict[str, Login] = {}
        #: Browsers whose last login expired (the login page says so once).
        self._expired: set[str] = set()

    def _limits(self) -> tuple[float, float]:
        return (self._session_s if self._session_s is not None else auth.session_seconds(),
                self._idle_s if self._idle_s is not None else auth.idle_seconds())

    def _state(self, login: Login | None, now: float) -> str:
        if login is None:
            return OUT
        session_s, idle_s = self._limits()
        if now - login.since > session_s or now - login.last_active > idle_s:
            return EXPIRED
        return IN

    def login(self, session_id: str, client: str | None) -> None:
        """``session_id`` logged in from the browser ``client``."""
        now = self._clock()
        with self._lock:
            for other in [s for s, login in self._logins.items() if self._state(login, now) != IN]:
                del self._logins[other]  # expired logins go when another is made: the map stays bounded
            self._logins[session_id] = Login(client, now, now)
            self._expired.discard(client or "")

    def logout(self, session_id: str) -> None:
        with self._lock:
            self._logins.pop(session_id, None)

    def touch(self, session_id: str) -> None:
        """The person did something in this session (not a page refreshing itself)."""
        now = self._clock()
        with self._lock:
            login = self._logins.get(session_id)
            if login is not None and self._state(login, now) == IN:
                login.last_active = now

    def state(self, session_id: str | None, client: str | None = None) -> str:
        """IN, OUT or EXPIRED for ``session_id`` as seen from the browser ``client``: a login is
        OUT for any other browser than its own. An expired login is forgotten once said."""
        if not session_id:
            return OUT
        now = self._clock()
        with self._lock:
            login = self._logins.get(session_id)
            if login is not None and login.client != client:
                return OUT
            found = self._state(login, now)
            if found == EXPIRED and login is not None:
                del self._logins[session_id]
                if login.client:
                    self._expired.add(login.client)
            return found

    def logged_in(self, session_id: str | None, client: str | None = None) -> bool:
        return self.state(session_id, client) == IN

    def any_logged_in(self, client: str | None) -> bool:
        """Whether the browser ``client`` has a live login (in any of its sessions)."""
        if not client:
            return False
        now = self._clock()
        with self._lock:
            return any(login.client == client and self._state(login, now) == IN for login in self._logins.values())

    def expired_for(self, client: str | None) -> bool:
        """Whether this browser's last login expired (said once, on the next login page)."""
        with self._lock:
            if client and client in self._expired:
                self._expired.discard(client)
                return True
            return False

    def clear(self) -> None:
        """Forget every login (tests)."""
        with self._lock:
            self._logins.clear()
            self._expired.clear()


#: The logins of this app process (the gate and every page share it).
SESSIONS = Sessions()
