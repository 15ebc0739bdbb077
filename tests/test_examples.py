"""The examples: each runs offline against the local provider stub and type-checks under ``mypy --strict``.

An example exits non-zero when the stub refused one of its requests (the
provider's pairing rules), so a passing run means every call was answered
exactly once, in the provider's shape, through the real SDK client.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
LOOPS = ["openai_chat_loop", "openai_responses_loop", "anthropic_loop", "gemini_loop", "bedrock_loop"]
STREAMING = [
    "streaming_openai_chat",
    "streaming_openai_responses",
    "streaming_anthropic",
    "streaming_gemini",
    "streaming_bedrock",
]
# What a dropped connection raises out of each SDK's stream (found in the SDKs' source and against the stub).
CUT_EXCEPTIONS = {
    "streaming_openai_chat": "APIConnectionError",
    "streaming_openai_responses": "APIConnectionError",
    "streaming_anthropic": "RemoteProtocolError",
    "streaming_gemini": "RemoteProtocolError",
    "streaming_bedrock": "ProtocolError",
}
MCP_LOOPS = ["mcp_stdio_loop", "mcp_http_loop"]
MYPY = Path(sys.executable).with_name("mypy")


@pytest.mark.slow  # each example is a process that runs a whole agent loop against the provider stub
@pytest.mark.parametrize("name", LOOPS)
def test_the_example_loop_runs_offline_and_every_call_is_answered_once(name: str) -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / f"{name}.py")], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[-1] == "It is sunny in Paris; the forecast timed out."
    results = lines[:-1]
    assert len(results) == 2
    assert "temperatureC" in results[0]
    assert "tool_timeout" in results[1]
    assert "rain" not in done.stdout  # the slow tool's real result came too late and was never sent


@pytest.mark.slow
@pytest.mark.parametrize("name", STREAMING)
def test_the_streaming_example_answers_every_call_and_runs_none_of_a_cut_turn(name: str) -> None:
    """Three streamed turns: two calls (one answers, one times out); a turn whose connection drops while its
    second call streams (every call of it answered with an error, none run); the final text.  The stub refuses
    any request whose calls are not each answered once, right after the whole echoed turn."""
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / f"{name}.py")], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[-1] == "It is sunny in Paris; the forecast timed out."
    cut = lines.index(f"  the stream was cut ({CUT_EXCEPTIONS[name]})")
    first, second = lines[:cut], lines[cut + 1 : -1]
    assert len(first) == 2
    assert "temperatureC" in first[0]
    assert "tool_timeout" in first[1]
    assert len(second) == (1 if name == "streaming_gemini" else 2)  # Gemini's second call never arrived
    assert all("invalid_tool_call" in line and "temperatureC" not in line for line in second)  # none ran
    assert "the stream ended before the turn was finished" in second[0]
    assert "rain" not in done.stdout


@pytest.mark.slow
def test_the_durable_loop_resumes_after_a_kill_without_running_a_recorded_call_again() -> None:
    """examples/durable_loop.py: a process killed mid-batch, its successor resumes from the SQLite store."""
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / "durable_loop.py")], capture_output=True, text=True, timeout=180, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert "  ran get_weather: accepted" in lines
    assert "  the dead process's token: stale_epoch" in lines
    assert "  get_weather: success (recorded: not run again)" in lines
    assert "  get_forecast: pending" in lines
    assert lines[-2] == "It is sunny in Paris; the forecast timed out."  # the stub accepted the next request
    assert lines[-1] == 'tool executions: ["toolu_weather"]'


@pytest.mark.slow  # two processes each: the agent loop with the provider stub, and the real MCP server it calls
@pytest.mark.parametrize("name", MCP_LOOPS)
def test_the_mcp_example_runs_the_servers_tools_in_a_provider_loop(name: str) -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / f"{name}.py")], capture_output=True, text=True, timeout=180, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[-1] == "Here is the chart; the slow report timed out."
    image, structured, slow = lines[:-1]
    assert "image" in image  # the chart went back as the provider's native image block
    assert structured.endswith(("['text', 'text']", "['input_text', 'input_text']"))
    assert "tool_timeout" in slow


def test_every_example_directory_entry_is_run_by_a_test() -> None:
    assert sorted(p.stem for p in EXAMPLES.glob("*_loop.py")) == sorted([*LOOPS, *MCP_LOOPS, "durable_loop"])
    assert sorted(p.stem for p in EXAMPLES.glob("streaming_*.py")) == sorted(STREAMING)


def test_the_examples_pass_mypy_strict() -> None:
    done = subprocess.run(
        [
            str(MYPY),
            "--strict",
            "--config-file",
            str(ROOT / "pyproject.toml"),
            "--cache-dir",
            str(ROOT / ".mypy_cache"),
            str(EXAMPLES),
        ],
        cwd=ROOT,
        env={**os.environ, "MYPYPATH": str(ROOT / "tests")},
        capture_output=True,
        text=True,
        timeout=540,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
