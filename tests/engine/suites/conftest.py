"""The alert tests' certificates: made once per session (tests/engine/suites/smtp.py)."""

from __future__ import annotations

import pytest

from tests.engine.suites.smtp import make_certificates


@pytest.fixture(scope="session")
def certificates(tmp_path_factory):
    """(ca.pem, server.pem, server.key) for a server on 127.0.0.1."""
    return make_certificates(tmp_path_factory.mktemp("tls"))
