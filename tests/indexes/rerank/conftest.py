from __future__ import annotations

import pytest

from tests.indexes.rerank.rerank_server import RerankServer


@pytest.fixture
def rerank_server():
    server = RerankServer()
    yield server
    server.stop()
