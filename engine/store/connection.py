"""Connections to the run store's DuckDB file: one helper for every read and write.

Connections are short-lived (one per operation) so that another process (the CLI while the app is
open, say) can write between them: DuckDB lets only one process hold a database file open for
writing. Inside one process, DuckDB shares one database instance between connections, so threads
are safe with a connection each; but opening and closing connections to one file from several
threads at once races in DuckDB's Python client (a connection may get an instance whose Arrow scan
is not registered yet: "python_arrow_scan does not exist"), so opening and closing are serialised
in this process (``_OPEN_CLOSE``). A connection is retried while another process holds the lock.

Opening the file is the expensive part (10-100 ms: the database instance, its catalog); a
connection to an instance already open costs ~0.1 ms. ``session()`` keeps the instance open across
the reads of one page, so a page pays for one open, and lets it go when the page is done. For the
same reason a ``StoreConnection`` opens nothing when it is made: the file is migrated by the first
connection that opens it (a new process's first page pays for one open, not two).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb

from searchgrade.core.records import SearchGradeError
from searchgrade.engine.store.migrations import MIGRATIONS

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

DB_FILENAME = "searchgrade.duckdb"

#: Held while a connection is opened or closed (never while it is used, nor while waiting for
#: another process's lock): see the module docstring.
_OPEN_CLOSE = threading.Lock()


def now_utc() -> datetime:
    """The current time in UTC, naive (DuckDB TIMESTAMP)."""
    return datetime.now(timezone.utc).replace(tzinfo=None)


def migrate(con: duckdb.DuckDBPyConnection) -> None:
    """Apply the migrations this file has not had yet, each in its own transaction."""
    con.execute(
        "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY, applied_at TIMESTAMP)"
    )
    applied = {row[0] for row in con.execute("SELECT version FROM schema_version").fetchall()}
    for version, sql in MIGRATIONS:
        if version in applied:
            continue
        con.execute("BEGIN TRANSACTION")
        try:
            if callable(sql):  # a migration that needs more than SQL (a bootstrap): given the connection
                sql(con)
            else:
                for statement in sql.split(";"):
                    if statement.strip():
                        con.execute(statement)
            con.execute("INSERT INTO schema_version VALUES (?, ?)", [version, now_utc()])
        except BaseException:
            con.execute("ROLLBACK")
            raise
        con.execute("COMMIT")


class StoreConnection:
    """The DuckDB file at ``data_dir/searchgrade.duckdb``, migrated on open."""

    def __init__(self, data_dir: str | Path, *, lock_timeout_s: float = 30.0):
        self.data_dir = Path(data_dir)
        self.path = self.data_dir / DB_FILENAME
        self.lock_timeout_s = lock_timeout_s
        self._session_lock = threading.Lock()
        self._sessions = 0
        self._keeper: duckdb.DuckDBPyConnection | None = None
        self._migrated = False
        self._migrate_lock = threading.Lock()
        try:
            self.data_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise SearchGradeError(
                f"cannot create the data directory {self.data_dir}: {exc.strerror}; "
                "pass a writable --data-dir or set SEARCHGRADE_HOME"
            ) from None

    @contextmanager
    def connect(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A fresh connection, retried while another process holds the file's write lock."""
        con = self._open()
        try:
            yield con
        finally:
            with _OPEN_CLOSE:
                con.close()

    @contextmanager
    def session(self) -> Iterator[None]:
        """Keep the database open for the connections made inside (in any thread of this process).

        Sessions nest and overlap: the database stays open until the last one ends, then the
        file is free again for other processes.
        """
        with self._session_lock:
            if self._sessions == 0:
                self._keeper = self._open()
            self._sessions += 1
        try:
            yield
        finally:
            with self._session_lock:
                self._sessions -= 1
                if self._sessions == 0 and self._keeper is not None:
                    with _OPEN_CLOSE:
                        self._keeper.close()
                    self._keeper = None

    def _open(self) -> duckdb.DuckDBPyConnection:
        deadline = time.monotonic() + self.lock_timeout_s
        while True:
            try:
                with _OPEN_CLOSE:
                    con = duckdb.connect(str(self.path))
                break
            except duckdb.IOException as exc:
                if "lock" not in str(exc).lower():
                    raise SearchGradeError(
                        f"cannot open the run store {self.path}: {str(exc).splitlines()[0]}; "
                        "check the file, or point --data-dir elsewhere"
                    ) from None
                if time.monotonic() > deadline:
                    raise SearchGradeError(
                        f"the run store {self.path} is locked by another process for more than "
                        f"{self.lock_timeout_s:.0f} s; stop the other searchgrade process or use "
                        "another --data-dir"
                    ) from None
                time.sleep(0.2)
            except duckdb.Error as exc:
                raise SearchGradeError(
                    f"cannot open the run store {self.path}: {str(exc).splitlines()[0]}; "
                    "it may not be a searchgrade DuckDB file: point --data-dir elsewhere"
                ) from None
        if not self._migrated:
            self._migrate(con)
        return con

    def _migrate(self, con: duckdb.DuckDBPyConnection) -> None:
        """Bring the file to the current schema, once per StoreConnection (on its first open)."""
        try:
            with self._migrate_lock:
                if not self._migrated:
                    migrate(con)
                    self._migrated = True
        except BaseException:
            with _OPEN_CLOSE:
                con.close()
            raise

    @contextmanager
    def transaction(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A connection inside one transaction: all of it lands, or none of it."""
        with self.connect() as con:
            con.execute("BEGIN TRANSACTION")
            try:
                yield con
            except BaseException:
                con.execute("ROLLBACK")
                raise
            con.execute("COMMIT")

    def schema_version(self) -> int:
        with self.connect() as con:
            return con.execute("SELECT max(version) FROM schema_version").fetchone()[0]

    def _dicts(self, sql: str, params: Sequence[Any]) -> list[dict[str, Any]]:
        with self.connect() as con:
            cur = con.execute(sql, params)
            names = [d[0] for d in cur.description]
            return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]

    def _frame(self, sql: str, params: Sequence[Any] | dict[str, Any]) -> pd.DataFrame:
        """A query's rows as a DataFrame, column by column (no Python object per row)."""
        with self.connect() as con:
            return con.execute(sql, params).df()

    def _arrays(self, sql: str, params: Sequence[Any]) -> dict[str, np.ndarray]:
        """A query's columns as numpy arrays."""
        with self.connect() as con:
            return con.execute(sql, params).fetchnumpy()


def and_equal(sql: str, params: list[Any], filters: dict[str, Any]) -> str:
    """``sql`` with `` AND column = ?`` for each filter whose value is not None, its value added to
    ``params``. Column names come from the calling code, never from input."""
    for column, value in filters.items():
        if value is not None:
            sql += f" AND {column} = ?"
            params.append(value)
    return sql


def insert_frame(con: duckdb.DuckDBPyConnection, table: str, rows: list[tuple], columns: list[str]) -> None:
    """Bulk insert through an Arrow table: executemany is far slower for tens of thousands of rows."""
    if not rows:
        return
    import pyarrow as pa

    arrow = pa.table({c: list(col) for c, col in zip(columns, zip(*rows, strict=True), strict=True)})
    view = f"_insert_{table}"
    con.register(view, arrow)
    try:
        con.execute(f"INSERT INTO {table} ({', '.join(columns)}) SELECT {', '.join(columns)} FROM {view}")  # noqa: S608 - constant names, values bound
    finally:
        con.unregister(view)
