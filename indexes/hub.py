"""Loading a model by local path or model-hub name, failing fast when the hub is out of reach.

Without network access, huggingface_hub retries each file request with backoff, so a plain
``CrossEncoder(name)`` takes about a minute to fail here (measured: 46 s for a CrossEncoder, 69 s for
a SentenceTransformer). We try the local Hugging Face cache first, then probe the hub with one
short TCP connection, and only download when the hub answers.
"""

from __future__ import annotations

import socket
import urllib.parse
from collections.abc import Callable
from pathlib import Path
from typing import Any

from searchgrade.core.records import SearchGradeError

#: Seconds to wait for a TCP connection to the model hub before calling it unreachable.
HUB_PROBE_TIMEOUT_S = 3.0


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def hub_reachable(timeout_s: float = HUB_PROBE_TIMEOUT_S) -> bool:
    """False when offline mode is set or the hub endpoint does not accept a TCP connection."""
    try:
        from huggingface_hub import constants
    except ImportError:
        return False
    offline = getattr(constants, "HF_HUB_OFFLINE", False)
    if callable(getattr(constants, "is_offline_mode", None)):
        offline = constants.is_offline_mode()
    if offline:
        return False
    url = urllib.parse.urlparse(constants.ENDPOINT)
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        socket.create_connection((url.hostname, port), timeout=timeout_s).close()
    except OSError:
        return False
    return True


def load_pretrained(factory: Callable[..., Any], name: str, *, kind: str, fix: str) -> Any:
    """Load ``factory(name)`` from a local path, the local cache, or the hub.

    Args:
        factory: SentenceTransformer or CrossEncoder (anything taking a name and
            ``local_files_only``).
        name: a local directory or a hub model id.
        kind: what the model is for, e.g. "embedding model" (goes into the error message).
        fix: the second half of the error message: what the user should do.

    Raises:
        SearchGradeError: one line naming the model, why it failed and ``fix``.
    """
    path = Path(name).expanduser()
    if path.exists():
        try:
            return factory(str(path))
        except Exception as exc:  # any loader failure is a bad model folder for the user
            raise SearchGradeError(
                f"{kind} at '{path}' could not be loaded ({_first_line(exc)}): {fix}"
            ) from exc
    if name.startswith((".", "/", "~")) or name.count("/") > 1 or "\\" in name:
        raise SearchGradeError(f"{kind} path '{name}' does not exist: {fix}")
    try:
        return factory(name, local_files_only=True)
    except Exception:  # noqa: BLE001, S110 - not in the local cache: try the hub below
        pass
    if not hub_reachable():
        raise SearchGradeError(
            f"{kind} '{name}' could not be loaded (no network access to the model hub?): {fix}"
        )
    try:
        return factory(name)
    except Exception as exc:
        raise SearchGradeError(
            f"{kind} '{name}' could not be loaded ({_first_line(exc)}): {fix}"
        ) from exc
