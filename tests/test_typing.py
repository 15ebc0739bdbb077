"""The typed surface, checked by mypy --strict: the SDK calls type-check with what the library returns, typos do not.

``tests/typing/usage_*.py`` call each SDK client's ``create`` with the
exports and next-request helpers, with no cast and no ignore; they must pass
``mypy --strict``.  ``tests/typing/rejected_inputs.py`` must fail exactly on
its marked lines, with the marked error codes: the typed inputs are shown to
catch what they promise.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TYPING = ROOT / "tests" / "typing"
USAGE = sorted(TYPING.glob("usage_*.py"))
REJECTED = TYPING / "rejected_inputs.py"
ERROR_LINE = re.compile(r"^(?P<file>[^:]+):(?P<line>\d+): error: .*\[(?P<code>[a-z-]+)\]$")


def _mypy(*files: Path) -> tuple[int, set[tuple[str, int, str]]]:
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-error-summary", "--show-error-codes", *map(str, files)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    errors = set()
    for line in done.stdout.splitlines():
        match = ERROR_LINE.match(line)
        assert match is not None or ": note:" in line, line
        if match is not None:
            errors.add((Path(match["file"]).name, int(match["line"]), match["code"]))
    return done.returncode, errors


def test_every_provider_has_a_usage_file_without_casts() -> None:
    assert [path.name for path in USAGE] == [
        "usage_anthropic.py",
        "usage_bedrock.py",
        "usage_content_parts.py",
        "usage_gemini.py",
        "usage_openai_chat.py",
        "usage_openai_responses.py",
    ]
    for path in USAGE:
        text = path.read_text(encoding="utf-8")
        assert "cast(" not in text, path
        assert "type: ignore" not in text, path


def test_the_sdk_calls_type_check_and_the_typos_do_not() -> None:
    expected = {
        (REJECTED.name, number, line.rsplit("# error: ", 1)[1].strip())
        for number, line in enumerate(REJECTED.read_text(encoding="utf-8").splitlines(), start=1)
        if "# error: " in line
    }
    assert len(expected) == 16
    status, errors = _mypy(*USAGE, REJECTED)
    assert status == 1
    assert errors == expected


def _readme_blocks() -> list[str]:
    """The README's Python blocks (the quick start first), then those of the pages in ``docs/``."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    return [
        block
        for page in pages
        for block in re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), flags=re.DOTALL)
    ]


def test_every_python_block_of_the_readme_passes_mypy_strict(tmp_path: Path) -> None:
    blocks = _readme_blocks()
    assert blocks, "the README has a quick start"
    files = []
    for number, block in enumerate(blocks):
        assert "cast(" not in block
        assert "type: ignore" not in block
        path = tmp_path / f"readme_block_{number}.py"
        path.write_text(block, encoding="utf-8")
        files.append(path)
    status, errors = _mypy(*files)
    assert errors == set()
    assert status == 0


def test_the_readme_quick_start_runs() -> None:
    exec(compile(_readme_blocks()[0], "README quick start", "exec"), {})


WITHOUT_SDKS = """
from tool_call_closure import Snapshot, ToolCallClosure
from tool_call_closure.providers import anthropic, bedrock, gemini, openai_chat, openai_responses

closure = ToolCallClosure()
ingested = openai_chat.ingest({"choices": [{"message": {"tool_calls": [
    {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}}]})
batch = closure.begin(ingested.calls)
snapshot = closure.close(batch.handle, {"status": "cancelled"})
assert isinstance(snapshot, Snapshot)
chat = openai_chat.next_messages(ingested.calls, closure.to_openai_chat_completions(snapshot))
responses = openai_responses.next_input(ingested.calls, closure.to_openai_responses(snapshot))
messages = anthropic.next_messages(ingested.calls, closure.to_anthropic_tool_results(snapshot))
parts = closure.to_gemini_function_responses(snapshot)
converse = bedrock.next_messages(ingested.calls, closure.to_bedrock_tool_results(snapshot))
print(len(chat), len(responses), len(messages), len(parts), len(converse))
"""

SDK_MODULES = (
    "openai",
    "anthropic",
    "google",
    "google.genai",
    "boto3",
    "botocore",
    "mypy_boto3_bedrock_runtime",
    "pydantic",
)


def test_without_the_sdks_nothing_breaks_at_run_time(tmp_path: Path) -> None:
    blocker = (
        "import sys\nfor name in " + repr(SDK_MODULES) + ":\n    sys.modules[name] = None  # importing it raises\n"
    )
    script = tmp_path / "without_sdks.py"
    script.write_text(blocker + WITHOUT_SDKS, encoding="utf-8")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["2", "2", "2", "1", "2"]


def test_without_the_sdks_the_library_still_type_checks(tmp_path: Path) -> None:
    """``--no-site-packages`` hides every SDK: their names become ``Any`` and user code still passes."""
    script = tmp_path / "user_without_sdks.py"
    script.write_text(WITHOUT_SDKS, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-site-packages", "--no-incremental", str(script)],
        cwd=tmp_path,
        env={"MYPYPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
