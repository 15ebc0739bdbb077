"""The SQLite store (standard library): the embedded default, one file shared by the processes of one machine.

Each operation is one ``BEGIN IMMEDIATE`` transaction (the write lock is
taken first, so two processes never both read a version and race to write
it); the file is in WAL mode and every commit is synced before it returns.
A process killed at any point leaves the last committed state: SQLite's
journal rolls back the transaction it was in.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from os import PathLike
from typing import Final

from tool_call_closure.durable.store import RowStore

__all__ = ["SCHEMA", "SQLiteStore"]

SCHEMA: Final = (
    "CREATE TABLE IF NOT EXISTS tcc_closures ("
    " id TEXT PRIMARY KEY, version INTEGER NOT NULL, secret BLOB NOT NULL, header TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS tcc_calls ("
    " closure_id TEXT NOT NULL, position INTEGER NOT NULL, call TEXT NOT NULL, PRIMARY KEY (closure_id, position))",
)


class SQLiteStore(RowStore):
    """Closures in the SQLite file at ``path`` (created with its tables when missing)."""

    def __init__(self, path: str | PathLike[str], *, timeout: float = 60.0, synchronous: str = "FULL") -> None:
        super().__init__()
        self.path = path
        self._db = sqlite3.connect(path, timeout=timeout, isolation_level=None, check_same_thread=False)
        if synchronous not in ("FULL", "NORMAL"):
            raise ValueError("synchronous is FULL or NORMAL")
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(f"PRAGMA synchronous={synchronous}")
        self._db.execute("BEGIN IMMEDIATE")
        try:
            for statement in SCHEMA:
                self._db.execute(statement)
        finally:
            self._db.execute("COMMIT")

    def close(self) -> None:
        self._db.close()

    def _begin(self) -> None:
        self._db.execute("BEGIN IMMEDIATE")

    def _commit(self) -> None:
        self._db.execute("COMMIT")

    def _rollback(self) -> None:
        if self._db.in_transaction:
            self._db.execute("ROLLBACK")

    def _read_header(self, closure_id: str) -> tuple[int, bytes, str] | None:
        row = self._db.execute(
            "SELECT version, secret, header FROM tcc_closures WHERE id = ?", (closure_id,)
        ).fetchone()
        return None if row is None else (row[0], bytes(row[1]), row[2])

    def _read_calls(self, closure_id: str) -> list[str]:
        rows = self._db.execute("SELECT call FROM tcc_calls WHERE closure_id = ? ORDER BY position", (closure_id,))
        return [row[0] for row in rows]

    def _insert(self, closure_id: str, secret: bytes, header: str, calls: Sequence[str]) -> bool:
        try:
            self._db.execute(
                "INSERT INTO tcc_closures (id, version, secret, header) VALUES (?, 1, ?, ?)",
                (closure_id, secret, header),
            )
        except sqlite3.IntegrityError:
            return False
        self._replace_calls(closure_id, calls)
        return True

    def _replace_calls(self, closure_id: str, calls: Sequence[str]) -> None:
        self._db.execute("DELETE FROM tcc_calls WHERE closure_id = ?", (closure_id,))
        self._db.executemany(
            "INSERT INTO tcc_calls (closure_id, position, call) VALUES (?, ?, ?)",
            [(closure_id, position, text) for position, text in enumerate(calls)],
        )

    def _put_calls(self, closure_id: str, calls: Mapping[int, str]) -> None:
        self._db.executemany(
            "UPDATE tcc_calls SET call = ? WHERE closure_id = ? AND position = ?",
            [(text, closure_id, position) for position, text in calls.items()],
        )

    def _write_header(self, closure_id: str, version: int, header: str) -> bool:
        cursor = self._db.execute(
            "UPDATE tcc_closures SET version = version + 1, header = ? WHERE id = ? AND version = ?",
            (header, closure_id, version),
        )
        return cursor.rowcount == 1
