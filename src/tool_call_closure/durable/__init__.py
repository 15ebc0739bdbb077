"""Durable closures: state that survives its process, settled from other processes, fenced across restarts.

The layer over the table that ``spec/durable.md`` specifies:

* :mod:`.image` — the closure image (versioned, byte-stable JSON of the whole state; ``spec/image.schema.json``);
* :mod:`.tokens` — settlement tokens (HMAC-SHA256 over closure id, epoch, generation, call id);
* :mod:`.epochs` — :class:`FencedClosure`: a closure with an epoch, operated through tokens; restore = new epoch;
* :mod:`.store` — the store interface and the one-transaction-per-operation rule; :class:`MemoryStore`;
* :mod:`.sqlite` — :class:`SQLiteStore` (standard library, the default);
* :mod:`.postgres` — ``PostgresStore`` (psycopg 3, the ``postgres`` extra; imported on use);
* :mod:`.pg_server` — a throwaway PostgreSQL server (initdb + pg_ctl) for tests, torture and benchmarks;
* :mod:`.api` — :class:`DurableClosure`, the stored closure's public face.

The core (``tool_call_closure`` without this package) never imports it.
"""

from tool_call_closure.durable.api import DurableClosure
from tool_call_closure.durable.epochs import DurableBegin, FencedClosure, new_secret
from tool_call_closure.durable.image import IMAGE_FORMAT, closure_of, decode, encode, image_of
from tool_call_closure.durable.sqlite import SQLiteStore
from tool_call_closure.durable.store import MemoryStore, Store
from tool_call_closure.durable.tokens import TokenClaims, TokenRejection

__all__ = [
    "IMAGE_FORMAT",
    "DurableBegin",
    "DurableClosure",
    "FencedClosure",
    "MemoryStore",
    "SQLiteStore",
    "Store",
    "TokenClaims",
    "TokenRejection",
    "closure_of",
    "decode",
    "encode",
    "image_of",
    "new_secret",
]
