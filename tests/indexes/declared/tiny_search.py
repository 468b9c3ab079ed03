"""Fixtures for test modules that grade a declared strategy against the real search server: the
tiny BEIR collection and the server over it, once per module. Import them into the module:
``from tests.indexes.declared.tiny_search import server, tiny_folder, tiny_search  # noqa: F401``."""

from __future__ import annotations

import pytest

from tests.conftest import write_beir
from tests.indexes.declared.conftest import SearchServer


@pytest.fixture(scope="module")
def tiny_search(tmp_path_factory):
    folder = write_beir(tmp_path_factory.mktemp("beir") / "tiny")
    server = SearchServer(folder, tmp_path_factory.mktemp("server-data"))
    yield folder, server
    server.stop()


@pytest.fixture(scope="module")
def tiny_folder(tiny_search):
    return tiny_search[0]


@pytest.fixture(scope="module")
def server(tiny_search):
    return tiny_search[1]
