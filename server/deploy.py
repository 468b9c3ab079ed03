"""Whether the app is exposed: bound to an address other machines can reach.

On loopback (127.0.0.1, ::1, localhost) only this machine's users reach the app, and it runs as the
tool of the person who started it. Bound to anything else (0.0.0.0, a LAN address, a host name, or
no address at all, which Streamlit takes as every interface) it is exposed: it needs a login, and
what a browser may make the server do is restricted (see the README's "Deploying").

Pure: the app command asks with the --host it was given; the pages with Streamlit's
``server.address`` option (views/_common.py ``app_exposed``).
"""

from __future__ import annotations

import ipaddress
import socket
from functools import lru_cache

#: Names that mean this machine only, whatever the resolver says.
_LOOPBACK_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"}


@lru_cache(maxsize=32)
def is_loopback(address: str | None) -> bool:
    """True when ``address`` lets only this machine connect.

    None or "" is every interface (Streamlit's default), so False. A host name counts as loopback
    only when every address it resolves to is loopback; one that does not resolve is not.
    """
    host = (address or "").strip().strip("[]").lower()
    if not host:
        return False
    if host in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None)
    except (OSError, UnicodeError):
        return False
    addresses = {info[4][0].split("%")[0] for info in infos}
    return bool(addresses) and all(ipaddress.ip_address(a).is_loopback for a in addresses)


def is_exposed(address: str | None) -> bool:
    """True when an app bound to ``address`` can be reached from other machines."""
    return not is_loopback(address)
