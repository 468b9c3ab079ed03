"""A real PostgreSQL 16 with pgvector for the tests, started by the `pgserver` package in a folder
of its own (a Unix socket, no TCP port, trust authentication): once per test session
(the `postgres` fixture in tests/conftest.py).

Run as root, pgserver starts the server as its own unprivileged user, which must reach the data
folder: pytest's folders (0700, root's) are out of its reach, so the server's folder is made in the
system's temporary folder, reachable by that user, and deleted with the server.
"""

from __future__ import annotations

import os
import tempfile
import warnings
from pathlib import Path


class Postgres:
    """One server: its DSN (a socket folder), and psycopg connections to it."""

    def __init__(self) -> None:
        parent = Path(tempfile.mkdtemp(prefix="searchgrade-pg-"))
        os.chmod(parent, 0o755)
        self.folder = parent / "pg"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # platformdirs: no XDG_RUNTIME_DIR on CI
            import pgserver

            self.server = pgserver.get_server(self.folder, cleanup_mode="delete")
        self.dsn = f"host={self.folder} dbname=postgres user=postgres"
        self.execute("CREATE EXTENSION IF NOT EXISTS vector")

    def connect(self):
        import psycopg

        return psycopg.connect(self.dsn, autocommit=True)

    def execute(self, statement: str, params=None) -> list[tuple]:
        with self.connect() as conn:
            cursor = conn.execute(statement, params)
            return cursor.fetchall() if cursor.description else []

    def stop(self) -> None:
        import shutil

        self.server.cleanup()
        shutil.rmtree(self.folder.parent, ignore_errors=True)
