"""The PostgreSQL store against a real server this module starts (initdb + pg_ctl, a Unix socket in a temp dir).

When the server binaries are missing the tests are skipped with a message that says so and how to
install them (``durable.pg_server.MISSING``); with ``TCC_REQUIRE_POSTGRES=1`` (CI) they fail instead.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from tool_call_closure import to_json
from tool_call_closure.durable import DurableClosure, FencedClosure, TokenRejection
from tool_call_closure.durable.pg_server import MISSING, PgServer, find_bin, pg_server
from tool_call_closure.durable.postgres import PostgresStore

OK = {"status": "success", "content": "done"}
SECRET = b"p" * 32


@pytest.fixture(scope="module")
def server() -> Iterator[PgServer]:
    if find_bin() is None:
        if os.environ.get("TCC_REQUIRE_POSTGRES") == "1":
            pytest.fail(MISSING)
        pytest.skip(MISSING)
    with pg_server() as running:
        yield running


def calls(*ids: str) -> list[dict[str, str]]:
    return [{"id": i, "name": "tool"} for i in ids]


def test_a_postgres_closure_answers_as_the_fenced_closure_in_memory(server: PgServer) -> None:
    store = PostgresStore(server.conninfo)
    durable = DurableClosure.create(store, "pg-1", secret=SECRET)
    memory = FencedClosure.new("pg-1", SECRET)
    steps = [
        lambda c: c.begin(calls("a", "b", "c")).result,
        lambda c: c.settle(c.tokens()["a"], OK),
        lambda c: c.settle(c.tokens()["b"], {"status": "error", "message": "no"}),
        lambda c: c.seal(c.batch_token()),
        lambda c: c.close(c.batch_token(), {"status": "cancelled", "code": "stop"}),
        lambda c: c.export("to_openai_responses"),
        lambda c: c.begin(calls("d")).result,
    ]
    for step in steps:
        assert to_json(step(durable)) == to_json(step(memory))
        assert durable.image() == memory.image()
    store.close()


def test_postgres_restore_fences_earlier_tokens_for_every_connection(server: PgServer) -> None:
    owner, worker = PostgresStore(server.conninfo), PostgresStore(server.conninfo)
    durable = DurableClosure.create(owner, "pg-2")
    token = durable.begin(calls("a")).tokens["a"]
    assert durable.restore() == 2
    assert DurableClosure(worker, "pg-2").settle(token, OK) == TokenRejection("stale_epoch", 1, 1, "a")
    assert DurableClosure(worker, "pg-2").settle(durable.tokens()["a"], OK).accepted
    assert json.loads(durable.image())["run"]["calls"][0]["state"] == "success"
    owner.close()
    worker.close()


def test_concurrent_postgres_settles_of_one_call_accept_exactly_one(server: PgServer) -> None:
    durable = DurableClosure.create(PostgresStore(server.conninfo), "pg-3")
    token = durable.begin(calls("a")).tokens["a"]
    answers: list[Any] = []
    barrier = threading.Barrier(5)

    def worker() -> None:
        store = PostgresStore(server.conninfo)
        barrier.wait()
        answers.append(DurableClosure(store, "pg-3").settle(token, OK))
        store.close()

    threads = [threading.Thread(target=worker) for _ in range(5)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sum(answer.accepted for answer in answers) == 1
    assert sorted(answer.reason for answer in answers if not answer.accepted) == ["duplicate_settlement"] * 4


def test_a_connection_lost_mid_transaction_leaves_the_closure_as_it_was(server: PgServer) -> None:
    store = PostgresStore(server.conninfo)
    durable = DurableClosure.create(store, "pg-4")
    token = durable.begin(calls("a")).tokens["a"]
    before = durable.image()

    def die(fenced: FencedClosure) -> None:
        fenced.settle(token, OK)
        store._db.close()  # the process "dies" before the commit: the server rolls the transaction back
        raise SystemExit

    with pytest.raises(SystemExit):
        store.run("pg-4", die)
    assert DurableClosure(PostgresStore(server.conninfo), "pg-4").image() == before
