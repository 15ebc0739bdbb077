"""The PostgreSQL store (psycopg 3, the ``postgres`` extra): closures shared by processes on many machines.

Each operation is one transaction that starts with ``SELECT … FOR UPDATE``
on the closure's row (other operations on the same closure wait; operations
on other closures do not), writes what changed, and ends with the
compare-and-set on ``version``.  A client that dies mid-transaction is
rolled back by the server when its connection drops.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from tool_call_closure.durable.store import RowStore
from tool_call_closure.errors import UsageError

if TYPE_CHECKING:
    import psycopg

__all__ = ["SCHEMA", "PostgresStore"]

SCHEMA: Final = (
    "CREATE TABLE IF NOT EXISTS tcc_closures ("
    " id TEXT PRIMARY KEY, version BIGINT NOT NULL, secret BYTEA NOT NULL, header TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS tcc_calls ("
    " closure_id TEXT NOT NULL, position INTEGER NOT NULL, call TEXT NOT NULL, PRIMARY KEY (closure_id, position))",
)
_SCHEMA_LOCK: Final = 0x7463_6300  # the advisory lock that serializes schema creation ("tcc")


def _psycopg() -> Any:
    try:
        import psycopg
    except ImportError:
        raise UsageError(
            "the PostgreSQL store needs psycopg 3: pip install 'tool-call-closure[postgres]'", code="postgres_missing"
        ) from None
    return psycopg


class PostgresStore(RowStore):
    """Closures in the PostgreSQL database ``conninfo`` names (``"host=/tmp/pg dbname=postgres"``, a URL …)."""

    def __init__(self, conninfo: str) -> None:
        super().__init__()
        self._db: psycopg.Connection[Any] = _psycopg().connect(conninfo, autocommit=True)
        with self._db.transaction():
            self._db.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
            for statement in SCHEMA:
                self._db.execute(statement)

    def close(self) -> None:
        self._db.close()

    def _begin(self) -> None:
        self._db.execute("BEGIN")

    def _commit(self) -> None:
        self._db.execute("COMMIT")

    def _rollback(self) -> None:
        if not self._db.closed:
            self._db.execute("ROLLBACK")

    def _read_header(self, closure_id: str) -> tuple[int, bytes, str] | None:
        row = self._db.execute(
            "SELECT version, secret, header FROM tcc_closures WHERE id = %s FOR UPDATE", (closure_id,)
        ).fetchone()
        return None if row is None else (int(row[0]), bytes(row[1]), str(row[2]))

    def _read_calls(self, closure_id: str) -> list[str]:
        rows = self._db.execute("SELECT call FROM tcc_calls WHERE closure_id = %s ORDER BY position", (closure_id,))
        return [str(row[0]) for row in rows]

    def _insert(self, closure_id: str, secret: bytes, header: str, calls: Sequence[str]) -> bool:
        cursor = self._db.execute(
            "INSERT INTO tcc_closures (id, version, secret, header) VALUES (%s, 1, %s, %s) ON CONFLICT (id) DO NOTHING",
            (closure_id, secret, header),
        )
        if cursor.rowcount != 1:
            return False
        self._replace_calls(closure_id, calls)
        return True

    def _replace_calls(self, closure_id: str, calls: Sequence[str]) -> None:
        self._db.execute("DELETE FROM tcc_calls WHERE closure_id = %s", (closure_id,))
        if calls:
            with self._db.cursor() as cursor:
                cursor.executemany(
                    "INSERT INTO tcc_calls (closure_id, position, call) VALUES (%s, %s, %s)",
                    [(closure_id, position, text) for position, text in enumerate(calls)],
                )

    def _put_calls(self, closure_id: str, calls: Mapping[int, str]) -> None:
        with self._db.cursor() as cursor:
            cursor.executemany(
                "UPDATE tcc_calls SET call = %s WHERE closure_id = %s AND position = %s",
                [(text, closure_id, position) for position, text in calls.items()],
            )

    def _write_header(self, closure_id: str, version: int, header: str) -> bool:
        cursor = self._db.execute(
            "UPDATE tcc_closures SET version = version + 1, header = %s WHERE id = %s AND version = %s",
            (header, closure_id, version),
        )
        return cursor.rowcount == 1
