"""A durable Anthropic tool loop: its process is killed mid-batch, a new process resumes it from the store.

    python examples/durable_loop.py            # offline: the local provider stub, a SQLite file in a temp dir

Three processes share one SQLite file (``tool_call_closure.durable``):

1. the agent asks the model, which announces two calls; it ``begin``s them in
   the store and keeps the model's turn in the store's directory; it runs the
   first tool, settles it with its token — and is killed (SIGKILL) before the
   second call is settled;
2. the successor ``restore``s the closure: a new epoch, so any token the dead
   process handed out is fenced (``stale_epoch``). The first call's result is
   in the store: it is *not* run again. The second call is pending and its
   side effects are unknown (it may have started): it is closed with an
   explicit error, not re-run. The next request — the model's turn, then one
   result per call — passes the provider preflight and the stub, which
   refuses any transcript with an orphaned or duplicated result;
3. (this process) starts the stub, runs 1 and 2, and checks the tools'
   execution log: every call ran at most once.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import anthropic
from _offline import server
from anthropic.types import Message, MessageParam, ToolParam

from tool_call_closure.durable import DurableClosure, SQLiteStore, TokenRejection
from tool_call_closure.providers import anthropic as anthropic_provider

SCHEMAS: list[ToolParam] = [
    {"name": name, "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}
    for name in ("get_weather", "get_forecast")
]
PROMPT: list[MessageParam] = [{"role": "user", "content": "What's the weather in Paris, and tomorrow's forecast?"}]


def run_tool(directory: Path, call_id: str, name: str) -> dict[str, Any]:
    """The tools' side effect: one line in the execution log per run."""
    with (directory / "executions.log").open("a", encoding="utf-8") as log:
        log.write(call_id + "\n")
    return {"city": "Paris", "temperatureC": 24, "sky": "sunny"} if name == "get_weather" else {"tomorrow": "rain"}


def first_process(base_url: str, directory: Path) -> None:
    store = SQLiteStore(directory / "closures.db")
    durable = DurableClosure.create(store, "agent-run")
    client = anthropic.Anthropic(base_url=base_url, api_key="stub", max_retries=0)
    message = client.messages.create(model="claude-sonnet-4-5", max_tokens=1024, messages=PROMPT, tools=SCHEMAS)
    (directory / "turn.json").write_text(message.model_dump_json(), encoding="utf-8")  # the turn survives too
    ingested = anthropic_provider.ingest(message)
    begun = durable.begin([{"id": call.id, "name": call.name} for call in ingested.calls])
    (directory / "old-token").write_text(begun.tokens[ingested.calls[1].id], encoding="utf-8")  # a worker's token
    first = ingested.calls[0]
    settled = durable.succeed(begun.tokens[first.id], run_tool(directory, first.id, first.name))
    print(f"  ran {first.name}: {'accepted' if settled.accepted else settled}")
    sys.stdout.flush()
    os.kill(os.getpid(), signal.SIGKILL)  # killed mid-batch: the second call was announced, never settled


def second_process(base_url: str, directory: Path) -> None:
    store = SQLiteStore(directory / "closures.db")
    durable = DurableClosure(store, "agent-run")
    print(f"  restored in epoch {durable.restore()}")
    stale = durable.settle((directory / "old-token").read_text(encoding="utf-8"), {"status": "success", "content": "x"})
    assert isinstance(stale, TokenRejection)
    print(f"  the dead process's token: {stale.reason}")
    snapshot = durable.snapshot()
    assert snapshot is not None
    for call in snapshot.calls:
        print(f"  {call.name}: {call.state}" + (" (recorded: not run again)" if call.settlement else ""))
    closed = durable.close(durable.batch_token() or "", {"status": "error", "code": "process_restarted"})
    assert not isinstance(closed, TokenRejection)
    results = durable.export("to_anthropic_tool_results")
    message = Message.model_validate_json((directory / "turn.json").read_text(encoding="utf-8"))
    messages = [*PROMPT, *anthropic_provider.next_messages(message, results)]
    anthropic_provider.preflight(messages)  # every tool_use answered once, right after it
    client = anthropic.Anthropic(base_url=base_url, api_key="stub", max_retries=0)
    final = client.messages.create(model="claude-sonnet-4-5", max_tokens=1024, messages=messages, tools=SCHEMAS)
    print("".join(block.text for block in final.content if block.type == "text"))


def main(argv: list[str] | None = None) -> int:
    arguments = sys.argv[1:] if argv is None else argv
    if arguments and arguments[0] in ("--first", "--second"):
        role, base_url, directory = arguments[0], arguments[1], Path(arguments[2])
        (first_process if role == "--first" else second_process)(base_url, directory)
        return 0
    with server("anthropic", arguments) as base_url, tempfile.TemporaryDirectory() as temporary:
        for role, expected in (("--first", -signal.SIGKILL), ("--second", 0)):
            print(f"process {role[2:]}:", flush=True)
            done = subprocess.run([sys.executable, __file__, role, base_url, temporary], check=False)
            if done.returncode != expected:
                raise SystemExit(f"the {role[2:]} process ended with {done.returncode}, not {expected}")
        runs = (Path(temporary) / "executions.log").read_text(encoding="utf-8").split()
        print(f"tool executions: {json.dumps(runs)}")
        if len(runs) != len(set(runs)):
            raise SystemExit("a call ran twice")
    return 0


if __name__ == "__main__":
    sys.exit(main())
