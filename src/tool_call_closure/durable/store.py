"""Stores: where a durable closure lives, and the one transaction every operation on it is.

Theory of operation
-------------------
A store keeps, per closure, a *header* row (the image without its calls:
``image.split``), a ``version`` column, the token secret, and one row per
call.  :meth:`Store.run` is the only way to operate on a stored closure::

    begin a transaction that locks the closure's row (SQLite BEGIN IMMEDIATE,
        PostgreSQL SELECT … FOR UPDATE)
    load the closure — or reuse this process's copy when its version is
        the stored version — as a FencedClosure (epochs.py)
    run the operation: the same public operation of the closure as in memory
    write what changed: the call rows whose record the operation replaced
        (a settle writes one), all call rows after a new begin, the header
    UPDATE … SET version = version + 1 WHERE version = <the version read>
        (compare-and-set: a row count of 0 aborts the transaction)
    commit

The all-or-nothing commit of the closure (invariant I9) is the database's
atomic commit: a process killed anywhere in this sequence leaves the stored
closure as it was before the operation, or as it is after it, never between.
Any exception rolls back and drops the process's copy.  An operation that
changed nothing (a snapshot, an export, a refused token) writes nothing.

Concrete stores implement the row primitives (:class:`RowStore`'s abstract
methods): :class:`MemoryStore` here (one process, for tests and benchmarks),
``sqlite.SQLiteStore`` and ``postgres.PostgresStore``.
"""

from __future__ import annotations

import abc
import json
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, TypeVar

from tool_call_closure.durable.epochs import FencedClosure
from tool_call_closure.durable.image import assemble, call_json, encode, header_of, split
from tool_call_closure.ecma import utf8_length
from tool_call_closure.errors import UsageError
from tool_call_closure.machine.context import Run
from tool_call_closure.values import CallRecord

__all__ = ["MemoryStore", "RowStore", "Store", "StoreConflictError"]

T = TypeVar("T")
MAX_CLOSURE_ID_BYTES: Final = 256


class StoreConflictError(UsageError):
    """The stored version moved between the read and the write (the compare-and-set failed): nothing was written."""


def _text(value: Mapping[str, Any]) -> str:
    return encode(value).decode("ascii")


class Store(abc.ABC):
    """Where durable closures live; every operation on one is one transaction (:meth:`run`)."""

    @abc.abstractmethod
    def create(self, fenced: FencedClosure, secret: bytes) -> None:
        """Store a new closure (``UsageError`` ``closure_exists`` when its id is taken)."""

    @abc.abstractmethod
    def run(self, closure_id: str, operation: Callable[[FencedClosure], T], *, restore: bool = False) -> T:
        """Run ``operation`` on the stored closure in one transaction; ``restore`` first starts a new epoch."""

    @abc.abstractmethod
    def close(self) -> None:
        """Release the store's connection."""


class RowStore(Store):
    """:meth:`Store.run` over row primitives (a header row with a version, one row per call)."""

    def __init__(self) -> None:
        self._cache: dict[str, tuple[int, FencedClosure]] = {}  # closure id -> (version, this process's copy)

    # ------------------------------------------------------------------ row primitives

    @abc.abstractmethod
    def _begin(self) -> None: ...

    @abc.abstractmethod
    def _commit(self) -> None: ...

    @abc.abstractmethod
    def _rollback(self) -> None: ...

    @abc.abstractmethod
    def _read_header(self, closure_id: str) -> tuple[int, bytes, str] | None:
        """``(version, secret, header text)`` of the closure, its row locked until the end of the transaction."""

    @abc.abstractmethod
    def _read_calls(self, closure_id: str) -> list[str]:
        """The call rows' texts, by position."""

    @abc.abstractmethod
    def _insert(self, closure_id: str, secret: bytes, header: str, calls: Sequence[str]) -> bool:
        """A new closure's rows; ``False`` when the id is taken."""

    @abc.abstractmethod
    def _replace_calls(self, closure_id: str, calls: Sequence[str]) -> None:
        """All call rows replaced (a new generation)."""

    @abc.abstractmethod
    def _put_calls(self, closure_id: str, calls: Mapping[int, str]) -> None:
        """The call rows at these positions replaced (settlements, a close)."""

    @abc.abstractmethod
    def _write_header(self, closure_id: str, version: int, header: str) -> bool:
        """The header written and the version incremented iff it is still ``version`` (compare-and-set)."""

    # ------------------------------------------------------------------ the transaction

    def create(self, fenced: FencedClosure, secret: bytes) -> None:
        closure_id = fenced.closure_id
        if type(closure_id) is not str or not 0 < utf8_length(closure_id) <= MAX_CLOSURE_ID_BYTES:
            raise UsageError(f"closure id must be a string of 1..{MAX_CLOSURE_ID_BYTES} UTF-8 bytes", code="closure_id")
        header, calls = split(json.loads(fenced.image()))
        self._begin()
        try:
            inserted = self._insert(closure_id, secret, _text(header), [_text(call) for call in calls])
        except BaseException:
            self._rollback()
            raise
        if not inserted:
            self._rollback()
            raise UsageError(f"closure {closure_id!r} already exists in this store", code="closure_exists")
        self._commit()

    def _load(self, closure_id: str, version: int, secret: bytes, header: str) -> FencedClosure:
        cached = self._cache.get(closure_id)
        if cached is not None and cached[0] == version:
            return cached[1]
        calls = [json.loads(text) for text in self._read_calls(closure_id)]
        return FencedClosure.attach(assemble(json.loads(header), calls), secret)

    def run(self, closure_id: str, operation: Callable[[FencedClosure], T], *, restore: bool = False) -> T:
        self._begin()
        try:
            row = self._read_header(closure_id)
            if row is None:
                raise UsageError(f"no closure {closure_id!r} in this store", code="closure_unknown")
            version, secret, header = row
            fenced = self._load(closure_id, version, secret, header)
            if restore:
                fenced.epoch += 1
            before, calls_before, _diagnostics = fenced.closure._committed_state()
            result = operation(fenced)
            version = self._write(fenced, version, header, before, calls_before)
            self._commit()
        except BaseException:
            self._cache.pop(closure_id, None)
            self._rollback()
            raise
        self._cache[closure_id] = (version, fenced)
        return result

    def _write(
        self, fenced: FencedClosure, version: int, header: str, before: Run | None, calls_before: tuple[CallRecord, ...]
    ) -> int:
        """What the operation changed written; the new version (``version`` when nothing changed)."""
        closure_id = fenced.closure_id
        new_header, run, calls = header_of(fenced.closure, closure_id, fenced.epoch)
        text = _text(new_header)
        generation_before = 0 if before is None else before.generation
        if run is not None and run.generation != generation_before:
            self._replace_calls(closure_id, [_text(call_json(call)) for call in calls])
        else:
            pairs = enumerate(zip(calls_before, calls, strict=True))  # one generation: the same calls, in order
            changed = {i: _text(call_json(new)) for i, (old, new) in pairs if old is not new}
            if changed:
                self._put_calls(closure_id, changed)
            elif text == header:
                return version
        if not self._write_header(closure_id, version, text):
            raise StoreConflictError(f"closure {closure_id!r} changed during the operation", code="store_conflict")
        return version + 1


class MemoryStore(RowStore):
    """A store in this process's memory (tests, benchmarks, the memory figure beside the databases)."""

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.RLock()
        self._rows: dict[str, list[Any]] = {}  # closure id -> [version, secret, header, calls]
        self._staged: dict[str, list[Any]] = {}

    def _begin(self) -> None:
        self._lock.acquire()
        self._staged = {}

    def _commit(self) -> None:
        self._rows.update(self._staged)
        self._staged = {}
        self._lock.release()

    def _rollback(self) -> None:
        self._staged = {}
        self._lock.release()

    def _row(self, closure_id: str) -> list[Any]:
        row = self._staged.get(closure_id)
        if row is None:
            stored = self._rows[closure_id]
            row = self._staged[closure_id] = [stored[0], stored[1], stored[2], list(stored[3])]
        return row

    def _read_header(self, closure_id: str) -> tuple[int, bytes, str] | None:
        row = self._rows.get(closure_id)
        return None if row is None else (row[0], row[1], row[2])

    def _read_calls(self, closure_id: str) -> list[str]:
        return list(self._rows[closure_id][3])

    def _insert(self, closure_id: str, secret: bytes, header: str, calls: Sequence[str]) -> bool:
        if closure_id in self._rows:
            return False
        self._staged[closure_id] = [1, secret, header, list(calls)]
        return True

    def _replace_calls(self, closure_id: str, calls: Sequence[str]) -> None:
        self._row(closure_id)[3] = list(calls)

    def _put_calls(self, closure_id: str, calls: Mapping[int, str]) -> None:
        rows = self._row(closure_id)[3]
        for position, text in calls.items():
            rows[position] = text

    def close(self) -> None:
        """Nothing to release."""

    def _write_header(self, closure_id: str, version: int, header: str) -> bool:
        row = self._row(closure_id)
        if row[0] != version:
            return False
        row[0], row[2] = version + 1, header
        return True
